"""Text the harness did not write (model names and outputs, run folder names, settings typed
by a user) made inert where it lands in a page or a Markdown file.

HTML text goes through `html.escape` where it is written; these two cover the other places:
JSON inside a <script> element, which the HTML parser ends at the first `</script` and
which `<!--` turns into a comment that swallows the rest of the page, and Markdown, where
`<img onerror=...>` is raw HTML to a renderer, `[x](javascript:...)` a link and `|` ends a table cell.
"""

from __future__ import annotations

import json
from typing import Any

# Inside <script>, JSON keeps its meaning with these as \\u escapes, and the HTML parser
# meets no tag, comment or character reference.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
# A backslash makes ASCII punctuation literal in Markdown (CommonMark): raw HTML, code spans
# and cell ends; the backslash itself first. (Emphasis is left: it runs no code.)
_MARKDOWN_SPECIAL = ("\\", "`", "<", ">", "|")


def script_json(value: Any) -> str:
    """`value` as JSON to put inside a <script> element of an HTML page."""
    text = json.dumps(value, ensure_ascii=False)
    for char, escaped in _SCRIPT_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def markdown_text(value: Any) -> str:
    """`value` as text of a Markdown line or table cell: no raw HTML, code span, inline link or cell end, on one line."""
    text = " ".join(str(value).splitlines())
    for char in _MARKDOWN_SPECIAL:
        text = text.replace(char, "\\" + char)
    # an inline link needs "](" (a `javascript:` one runs code when clicked); intervals "[a, b] (n)" keep their look
    return text.replace("](", "\\](")
