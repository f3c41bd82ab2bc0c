"""Secrets kept out of everything the harness writes or names.

Three channels carry secrets: the API key (read from an environment variable), the
userinfo of a URL (http://user:password@host/v1) and the text of a server's error
answer (which may quote the key). `scrub` removes the first two from any text: URL
userinfo by its form, and every secret value `remember_secret` was told about (API
keys, URL passwords). `redact_server_text` also removes what looks like a key, for
texts that come from a server and are logged or printed.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"
# scheme://userinfo@ ; a comma or semicolon ends it, as it ends an override in a run name
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@,;'\"]+@")
_KEY_LIKE = re.compile(
    r"(?i)\bBearer\s+[^\s\"',;}]+"  # an Authorization header quoted back
    r"|\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"  # OpenAI-style keys (sk-..., sk-proj-...)
    r"|\b(?:api[_-]?key|token|secret|password)(?P<sep>\s*[:=]\s*)[^\s\"',;}]+"  # key=value pairs
    r"|\b(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{32,}"  # long letters-and-digits tokens
)
_SECRETS: set[str] = set()
_MIN_SECRET_CHARS = 4  # shorter values would redact ordinary words


def remember_secret(value: str | None) -> None:
    """Redact `value` from every text scrubbed from now on in this process."""
    if value and len(value) >= _MIN_SECRET_CHARS:
        _SECRETS.add(value)


def url_password(url: str) -> str | None:
    """The password (or lone user token) of a URL's userinfo, if it has one."""
    match = _USERINFO.search(url)
    if match is None:
        return None
    userinfo = match.group(0)[len(match.group("scheme")) : -1]
    return userinfo.partition(":")[2] or userinfo


def strip_userinfo(text: str) -> str:
    """Every URL in `text` without its user:password@ part."""
    return _USERINFO.sub(r"\g<scheme>", text)


def scrub(text: str) -> str:
    """`text` without URL userinfo and without any remembered secret."""
    text = strip_userinfo(text)
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
    """A server's text (an error answer) fit to log: scrubbed, and anything key-like removed."""

    def replace(match: re.Match) -> str:
        sep = match.group("sep")
        return match.group(0)[: match.start("sep") - match.start() + len(sep)] + REDACTED if sep else REDACTED

    return _KEY_LIKE.sub(replace, scrub(text))
