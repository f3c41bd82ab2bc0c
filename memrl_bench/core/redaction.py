"""Secrets kept out of everything the harness writes or names.

Four channels carry secrets: the API key (read from an environment variable), the
userinfo of a URL (http://user:password@host/v1), a key-like query parameter of a URL
(http://host/v1?api_key=...) and the text of a server's error answer (which may quote
the key). `strip_url_secrets` removes the URL forms from any text by their shape;
`scrub` also replaces every secret value `remember_secret` / `remember_url` were told
about (API keys, URL passwords and query keys, also percent-decoded or as Hydra escapes
them), wherever they appear; `redact_server_text` also removes what looks like a key,
for texts that come from a server and are logged or printed.

How a URL is read: it starts at `scheme://` (Hydra writes `scheme\\://`) and ends at
whitespace, a quote, `<`, `>`, a backtick or the next `scheme://` (a server URL holding one of
them is refused: `ends_early`). Its userinfo is everything up to the LAST
`@` before the query (`?`) or fragment (`#`), so a password may hold `@ : / % , ;`.
Its parameters start after `?`, `#`, `;` or `&` (a query, a fragment such as OAuth's
`#access_token=`, path parameters `/v1;password=`, `;` as a query separator); the value of
every parameter but the few HARMLESS_PARAMETERS (api-version, deployment, model ...) is
redacted, and runs to the next `&` or `#` (`;` included: a password may hold one). A list of
credential words (api_key, accessToken, passphrase ...) missed a new name in every probe round.
A path holding `@` (http://host/v1/@me) loses the part before it: redaction errs on the side
of removing too much.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import logging
import os
import re
import sys
from typing import Any
from urllib.parse import quote, unquote

REDACTED = "[redacted]"
_SCHEME = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*\\?://")
_URL_END = re.compile(r"[\s'\"<>`]")  # a URL in a text ends here (a quote closes a quoted override)
# the words of a query parameter's name that make its value a secret
# The parameters of a server URL kept as they are (names compared in lower case, '_' read as '-'): what OpenAI-compatible
# servers take that is no secret (Azure's api-version, a deployment or model name). Every other parameter's value is redacted.
HARMLESS_PARAMETERS = frozenset({"api-version", "version", "v", "deployment", "deployment-id", "model", "region", "format", "stream"})
_PARAM_START = re.compile(r"[?#;&]")  # a URL's parameter (query, fragment, path parameter) starts after one of these
_PARAM_NAME = re.compile(r"(?P<name>[^=&;#?/\s]+)\\?=")  # Hydra writes '=' as '\='
_VALUE_END = re.compile(r"[&#]")
# the characters Hydra escapes with a backslash in the overrides it writes back (a sweep's jobs)
_HYDRA_ESCAPED = re.compile(r"([\\()\[\]{}:=,\s])")
_KEY_LIKE = re.compile(
    r"(?i)\bBearer\s+[^\s\"',;}]+"  # an Authorization header quoted back
    r"|\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"  # OpenAI-style keys (sk-..., sk-proj-...)
    r"|\b(?:api[_-]?key|token|secret|password)(?P<sep>[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]+"  # key=value, "key": "value"
    r"|\b(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{32,}"  # long letters-and-digits tokens
)
_SECRETS: set[str] = set()  # values replaced by REDACTED
_USERINFOS: set[str] = set()  # "user:password@" parts of URLs seen, removed also where no scheme precedes them (a netloc)
_MIN_SECRET_CHARS = 4  # shorter values would redact ordinary words
_MIN_DECODED_SECRET_CHARS = 8  # shorter remembered values could appear in decoded ordinary text
_MIN_BASE64_CHARS = 12  # a secret's base64 core shorter than this could match ordinary base64 by chance
_URLSAFE = str.maketrans("+/", "-_")
# A server's error text is logged and stored in each failed episode: a 40 MB body must not be.
SERVER_TEXT_CHARS = 2_000
_CUT_MARGIN_CHARS = 1_000  # redacted past the cut: longer than any key


def _is_credential(name: str) -> bool:
    return unquote(name.replace("+", " ")).strip().lower().replace("_", "-") not in HARMLESS_PARAMETERS


def _secret_value_spans(text: str, start: int = 0) -> list[tuple[int, int]]:
    """(start, end) of every secret in `text[start:]` (a URL's part after its userinfo): a path segment shaped as a key,
    the value of every parameter but a harmless one's, and the whole of a parameter with no name (`?=KEY`, `?KEY`)."""
    path_end = _PARAM_START.search(text, start)
    spans = [
        (m.start(), m.end())
        for m in _PATH_SEGMENT.finditer(text, start, path_end.start() if path_end else len(text))
        if _PATH_KEY.fullmatch(m[0])
    ]
    for mark in _PARAM_START.finditer(text, start):
        if spans and mark.start() < spans[-1][1]:
            continue  # a ';' inside a value already redacted
        name = _PARAM_NAME.match(text, mark.end())
        if name is not None and not _is_credential(name.group("name")):
            continue
        value_start = name.end() if name is not None else mark.end()
        end = _VALUE_END.search(text, value_start)
        span = (value_start, end.start() if end else len(text))
        if span[1] > span[0]:
            spans.append(span)
    return spans


_PATH_SEGMENT = re.compile(r"[^/]+")
# a path segment that is a key (some proxies take it in the path): as _KEY_LIKE tells a key in a text
_PATH_KEY = re.compile(r"(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}|(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{32,}")


def _url_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the part after `scheme://` of every URL in `text`."""
    starts = [m.end() for m in _SCHEME.finditer(text)]
    schemes = [m.start() for m in _SCHEME.finditer(text)]
    spans = []
    for i, start in enumerate(starts):
        end_match = _URL_END.search(text, start)
        end = min(end_match.start() if end_match else len(text), schemes[i + 1] if i + 1 < len(schemes) else len(text))
        spans.append((start, max(start, end)))
    return spans


# '@' and the characters NFKC makes one ('＠' as a CJK input method types it, '﹫'): urllib normalizes a netloc so, and a
# userinfo ending in '＠' was quoted in the clear by the URL check and Hydra's lexer (52b)
_AT_SIGNS = ("@", "\uff20", "\ufe6b")


def _last_at(text: str, start: int = 0, end: int | None = None) -> int:
    """The index of the last at-sign (any of _AT_SIGNS) in text[start:end], or -1."""
    return max(text.rfind(sign, start, len(text) if end is None else end) for sign in _AT_SIGNS)


def _split(rest: str) -> tuple[str, str]:
    """(userinfo with its at-sign, or "", the remainder) of a URL without its scheme."""
    authority_end = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    at = _last_at(rest, 0, authority_end)
    return (rest[: at + 1], rest[at + 1 :]) if at >= 0 else ("", rest)


def _parameter_secrets(rest: str) -> list[str]:
    """The values of the key-like parameters of a URL's remainder (after its userinfo)."""
    return [rest[start:end] for start, end in _secret_value_spans(rest)]


def _without_parameter_secrets(rest: str) -> str:
    out, position = [], 0
    for start, end in _secret_value_spans(rest):
        out += [rest[position:start], REDACTED]
        position = end
    return "".join(out) + rest[position:]


def strip_url_secrets(text: str) -> str:
    """`text` with every URL's user:password@ part removed and its key-like query values redacted."""
    out, position = [], 0
    for start, end in _url_spans(text):
        _, rest = _split(text[start:end])
        out += [text[position:start], _without_parameter_secrets(rest)]
        position = end
    return "".join(out) + text[position:]


def ends_early(url: str) -> bool:
    """Whether `url` holds what ends a URL in a text (a space, a quote, `<`, `>`, a backtick, another
    `scheme://`): what follows it would not be read as the URL's, so a secret there would not be redacted."""
    scheme = _SCHEME.match(url)
    after = scheme.end() if scheme else 0
    return bool(_URL_END.search(url, after) or _SCHEME.search(url, after))


def url_host(url: str) -> str:
    """host[:port] of a URL, without its userinfo (what a manifest may record of a server)."""
    spans = _url_spans(url)
    rest = _split(url[spans[0][0] : spans[0][1]])[1] if spans else url
    return re.split(r"[/?#]", rest, maxsplit=1)[0]


def _variants(value: str) -> set[str]:
    """A secret as typed, percent-decoded, and as Hydra escapes it in the overrides it writes."""
    plain = value.replace("\\", "") if "\\" in value else value
    return {value, plain, unquote(plain), _HYDRA_ESCAPED.sub(r"\\\1", plain)}


def _encodings(value: str) -> set[str]:
    """A secret as a server may echo it: percent-encoded, JSON-escaped (`\\/` too), and in base64: the part of its
    base64 that does not depend on what precedes or follows it, at each of the three alignments."""
    escaped = json.dumps(value)[1:-1]
    forms = {quote(value, safe=""), quote(value), escaped, escaped.replace("/", "\\/")}
    raw = value.encode()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw).decode()
        core = encoded[(pad * 4 + 2) // 3 : (pad + len(raw)) // 3 * 4]
        if len(core) >= _MIN_BASE64_CHARS:
            forms |= {core, core.translate(_URLSAFE)}
    return forms


def remember_secret(value: str | None) -> None:
    """Redact `value` (as typed, percent-decoded, Hydra-escaped, and as a server may echo it encoded) from every text
    scrubbed from now on in this process."""
    if value and len(value) >= _MIN_SECRET_CHARS:
        _SECRETS.update(v for v in _variants(value) | _encodings(value) if len(v) >= _MIN_SECRET_CHARS)


def remember_key_variable(name: Any) -> None:
    """Redact from now on the value of the environment variable `name` (what an `api_key_env` setting names), whichever
    config names it; nothing for a name that is no text or no variable."""
    if isinstance(name, str) and name:
        with contextlib.suppress(UnicodeError, ValueError):  # a name no environment can hold (a lone surrogate, a NUL)
            remember_secret(os.environ.get(name))


def remember_key_variables(text: str) -> None:
    """remember_key_variable for every name in `text` (an argument or a setting that names api_key_env in any form Hydra
    reads: quoted, spaced, in a dict override, a sweep or an `${oc.env:NAME}`: 54b)."""
    for name in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)):
        remember_key_variable(name)
        remember_key_variable(os.environ.get(name))  # `${oc.env:WHICH}`: the variable WHICH names


def remember_url(text: str) -> None:
    """For every URL in `text`: remove its userinfo (also as part of a bare host:port) and redact
    its password (the user, if there is no password) and key-like query values from every text
    scrubbed from now on in this process."""
    for start, end in _url_spans(text):
        userinfo, rest = _split(text[start:end])
        if userinfo:
            _USERINFOS.update(_variants(userinfo))
            user, _, password = userinfo[:-1].replace("\\:", ":").partition(":")
            remember_secret(password or user)  # `user:@host` (a token as the user): the user, without the colon
        for value in _parameter_secrets(rest):
            remember_secret(value)


def scrub(text: str) -> str:
    """`text` without URL userinfo, key-like URL query values and any remembered secret."""
    text = strip_url_secrets(text)
    for userinfo in sorted(_USERINFOS, key=len, reverse=True):
        text = text.replace(userinfo, "")
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def scrub_data(value: Any) -> Any:
    """`value` (JSON-like data: a config, a manifest) with every string scrubbed."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: scrub_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_data(v) for v in value]
    return value


def redact_server_text(text: str) -> str:
    """A server's text (an error answer) fit to log: scrubbed, anything key-like removed, and
    cut to SERVER_TEXT_CHARS characters, saying how many were dropped."""

    def replace(match: re.Match) -> str:
        sep = match.group("sep")
        return match.group(0)[: match.start("sep") - match.start() + len(sep)] + REDACTED if sep else REDACTED

    # Redacted with a margin past the cut, so a secret straddling the cut is removed whole.
    redacted = _KEY_LIKE.sub(replace, scrub(text[: SERVER_TEXT_CHARS + _CUT_MARGIN_CHARS]))
    if _quotes_a_secret_encoded(redacted):  # in a form the replacements above do not know: nothing of it is kept
        return f"{REDACTED} ({len(text):,} characters quoting a secret in an encoded form)"
    if len(text) <= SERVER_TEXT_CHARS and len(redacted) <= SERVER_TEXT_CHARS:
        return redacted
    return f"{redacted[:SERVER_TEXT_CHARS]}... [cut at {SERVER_TEXT_CHARS:,} characters of {len(text):,}]"


def redact_server_name(name: str) -> str:
    """A short name a server gave (the model id it lists, a finish reason), fit to store: itself, or REDACTED when it holds
    a remembered secret, plain or encoded (a server listing the key percent-encoded as its one model put it in the
    manifest and the report, twenty-second round)."""
    return REDACTED if scrub(name) != name or _quotes_a_secret_encoded(name) else name


_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\(/)")


def _quotes_a_secret_encoded(text: str) -> bool:
    """Whether `text`, once its percent-encoding (any case, every byte), HTML entities or JSON escapes are undone, holds
    a remembered secret."""
    json_unescaped = _JSON_ESCAPE.sub(lambda m: m.group(2) or chr(int(m.group(1), 16)), text)
    decoded = {unquote(text), html.unescape(text), json_unescaped, unquote(html.unescape(json_unescaped))}
    return any(secret in form for form in decoded - {text} for secret in _SECRETS if len(secret) >= _MIN_DECODED_SECRET_CHARS)


def redact_url_value(url: str) -> str:
    """A URL that may be malformed (a config value that failed its check), fit to show: everything
    between `scheme://` (or the start) and the LAST '@' anywhere in it is hidden (a password may hold '?', '#' or
    a space, which end the userinfo for strip_url_secrets), and key-like query values redacted."""
    scheme = _SCHEME.match(url)
    head, rest = (url[: scheme.end()], url[scheme.end() :]) if scheme else ("", url)
    hidden, at = "", _last_at(rest)
    if at >= 0:
        hidden, rest = f"{REDACTED}@", rest[at + 1 :]
    return head + hidden + scrub(_without_parameter_secrets(rest))


class ScrubFilter(logging.Filter):
    """Scrubs every log record (conf/hydra/hydra_logging/scrubbed.yaml puts it on Hydra's console)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = scrub(record.getMessage()), None
        return True


def _argument_secret_spans(arg: str) -> list[tuple[int, int]]:
    """(start, end) of every URL userinfo (with its '@') and key-like parameter value in a command-line
    argument: the userinfo runs up to the LAST '@' of the whole argument (a malformed password
    may hold '?', '#', a quote or a space, which end it for strip_url_secrets)."""
    spans = []
    for start, _ in _url_spans(arg):
        host = _last_at(arg, start) + 1  # 0: no userinfo
        if host > start:
            spans.append((start, host))
        spans += _secret_value_spans(arg, max(start, host))  # to the argument's end: Hydra's lexer quotes what ends a URL
    return spans


def _masked(arg: str) -> str:
    """`arg` with every URL's userinfo and key-like query values replaced by as many '*'."""
    out = list(arg)
    for start, end in _argument_secret_spans(arg):
        out[start:end] = "*" * (end - start)
    return "".join(out)


_INTERPOLATION = re.compile(r"\$\{([^}]*)\}")


def remember_command_line(argv: list[str]) -> None:
    """Redact from every text scrubbed from now on the URL passwords (the user, if there is none),
    key-like query values and key-shaped values of the command line's arguments, also where Hydra or argparse quote
    an argument they refuse (a password holding '#' or a quote: Hydra's lexer error; one holding
    `${name}`: "Interpolation key 'name' not found")."""
    for arg in argv:
        for match in _KEY_LIKE.finditer(arg):  # a key typed as a setting's value (`llm.api_key=sk-...`: 47b)
            remember_secret(match[0][match.end("sep") - match.start() :] if match["sep"] else match[0].split()[-1])
        for start, end in _argument_secret_spans(arg):
            value = arg[start:end]
            if value.endswith(_AT_SIGNS):
                plain = value[:-1].replace("\\:", ":")
                value = plain.partition(":")[2] or plain
                _USERINFOS.update(_variants(arg[start:end]))
            remember_secret(value)
            for name in _INTERPOLATION.findall(value):
                remember_secret(name)


class ScrubbedStream:
    """A text stream (the CLI's stderr) whose every write is scrubbed: argparse and Hydra print
    their errors themselves, quoting the arguments they refuse."""

    def __init__(self, inner: Any):
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(scrub(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def hide_url_secrets_from_command_line() -> bool:
    """Overwrite, in this process's own argv memory, the URL secrets of its arguments (sys.argv
    keeps them): /proc/<pid>/cmdline is readable by every process of the machine, the programs
    a CodeRunner runs in process mode included. False, with a warning, where the kernel refuses."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        arg_start, arg_end = int(fields[45]), int(fields[46])  # fields 48 and 49 of proc(5)
        with open("/proc/self/mem", "r+b", buffering=0) as memory:
            memory.seek(arg_start)
            raw = memory.read(arg_end - arg_start)
            # latin-1: one character per byte, so the masked text has the same length in bytes
            masked = b"\0".join(_masked(arg.decode("latin-1")).encode("latin-1") for arg in raw.split(b"\0"))
            if masked != raw:
                memory.seek(arg_start)
                memory.write(masked)
    except (OSError, ValueError, IndexError) as err:
        print(
            f"memrl-bench: warning: cannot hide URL passwords and keys of the command line from other processes ({type(err).__name__}: "
            f"{err}); programs run in process mode can read them",
            file=sys.stderr,
        )
        return False
    return True
