"""Secrets kept out of everything the harness writes or names.

Three channels carry secrets: the API key (read from an environment variable), the
userinfo of a URL (http://user:password@host/v1) and the text of a server's error
answer (which may quote the key). `scrub` removes the first two from any text: URL
userinfo by its form (and, once `remember_url` saw it, without a scheme too), and every
secret value `remember_secret` was told about (API keys, URL passwords). `redact_server_text` also removes what looks like a key, for
texts that come from a server and are logged or printed.
"""

from __future__ import annotations

import logging
import re
from typing import Any

REDACTED = "[redacted]"
# scheme://userinfo@ ; a comma or semicolon ends it, as it ends an override in a run name.
# Hydra escapes the colon in a sweep's overrides (http\://user\:password@host).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*\\?://)[^/\s@,;'\"]+@")
_KEY_LIKE = re.compile(
    r"(?i)\bBearer\s+[^\s\"',;}]+"  # an Authorization header quoted back
    r"|\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"  # OpenAI-style keys (sk-..., sk-proj-...)
    r"|\b(?:api[_-]?key|token|secret|password)(?P<sep>[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]+"  # key=value, "key": "value"
    r"|\b(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{32,}"  # long letters-and-digits tokens
)
_SECRETS: set[str] = set()  # values replaced by REDACTED
_USERINFOS: set[str] = set()  # "user:password@" parts of URLs seen, removed also where no scheme precedes them (a netloc)
_MIN_SECRET_CHARS = 4  # shorter values would redact ordinary words


def remember_secret(value: str | None) -> None:
    """Redact `value` from every text scrubbed from now on in this process."""
    if value and len(value) >= _MIN_SECRET_CHARS:
        _SECRETS.add(value)


def remember_url(url: str) -> None:
    """Remove this URL's userinfo (also as part of a bare host:port) and redact its password
    from every text scrubbed from now on in this process."""
    match = _USERINFO.search(url)
    if match is None:
        return
    userinfo = match.group(0)[len(match.group("scheme")) :].replace("\\:", ":")
    _USERINFOS.add(userinfo)
    remember_secret(userinfo[:-1].partition(":")[2] or userinfo[:-1])


def strip_userinfo(text: str) -> str:
    """Every URL in `text` without its user:password@ part."""
    return _USERINFO.sub(r"\g<scheme>", text)


def scrub(text: str) -> str:
    """`text` without URL userinfo and without any remembered secret."""
    text = strip_userinfo(text)
    for userinfo in _USERINFOS:
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
    """A server's text (an error answer) fit to log: scrubbed, and anything key-like removed."""

    def replace(match: re.Match) -> str:
        sep = match.group("sep")
        return match.group(0)[: match.start("sep") - match.start() + len(sep)] + REDACTED if sep else REDACTED

    return _KEY_LIKE.sub(replace, scrub(text))


class ScrubFilter(logging.Filter):
    """Scrubs every log record (conf/hydra/hydra_logging/scrubbed.yaml puts it on Hydra's console)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = scrub(record.getMessage()), None
        return True
