"""Prompt templates, one versioned text file each (`<name>.txt` in this folder).

Templates use `{placeholders}` (str.format); a literal brace is doubled. The first
line of every file is a comment `# <name> v<N>` so a transcript names the prompt it used.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_DIR = Path(__file__).parent


@cache
def load(name: str) -> str:
    """The template text without its header line."""
    path = _DIR / f"{name}.txt"
    if not path.exists():
        valid = sorted(p.stem for p in _DIR.glob("*.txt"))
        raise KeyError(f"unknown prompt template {name!r}; valid: {', '.join(valid)}")
    text = path.read_text()
    return text.split("\n", 1)[1] if text.startswith("#") else text


def render(name: str, **values: object) -> str:
    """Fill a template; a missing value is an error naming the template and the key."""
    try:
        return load(name).format(**values)
    except KeyError as missing:
        raise KeyError(f"prompt template {name!r} needs a value for {missing}") from None
