"""The HTTP clients the harness gives the openai package: every answer's body is read under
a cap in bytes and in time.

A server's answer is untrusted: a body that never ends (chunked, endless) or a small gzip
expanding to gigabytes grew the harness until the kernel killed it (issue 26, B11/B12 round 2).
These clients ask for uncompressed answers (`Accept-Encoding: identity`) and refuse a
compressed one, so the bytes counted are the bytes decoded; a body past `max_bytes`, or still
arriving `deadline_s` after its headers, fails with ResponseTooLarge / httpx.ReadTimeout while
it is read. The openai package turns either into APIConnectionError / APITimeoutError: a failed
call like any bad answer (retried, then the episode's llm_error or the run's one line).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2 as httpx  # the HTTP package the openai package uses
import openai

from memrl_bench.core.config import ConfigError
from memrl_bench.core.redaction import remember_url

MIN_BODY_BYTES = 16 * 1024 * 1024  # far past any completion, embeddings batch or error text
# A completion's characters as JSON: a \uXXXX escape per UTF-16 unit, two units past the BMP.
JSON_BYTES_PER_CHAR = 12
_IDENTITY = {"Accept-Encoding": "identity"}


class ResponseTooLarge(httpx.ReadError):
    """An answer's body passed the cap, or came compressed though the request asked for none."""


def body_cap(completion_chars: int = 0) -> int:
    """Bytes an answer may hold: MIN_BODY_BYTES, or more when a completion of `completion_chars` needs it."""
    return max(MIN_BODY_BYTES, JSON_BYTES_PER_CHAR * completion_chars)


class _Budget:
    """What one body may still take: bytes and time."""

    def __init__(self, response: httpx.Response, max_bytes: int, deadline_s: float):
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ResponseTooLarge(
                f"the server answered HTTP {response.status_code} with a {encoding}-compressed body, though the request asked for an "
                "uncompressed one (Accept-Encoding: identity)"
            )
        self.status = response.status_code
        self.left = max_bytes
        self.max_bytes = max_bytes
        self.deadline = time.monotonic() + deadline_s
        self.deadline_s = deadline_s

    def take(self, chunk: bytes) -> bytes:
        self.left -= len(chunk)
        if self.left < 0:
            raise ResponseTooLarge(f"the server's HTTP {self.status} answer passed {self.max_bytes:,} bytes; the rest was not read")
        if time.monotonic() > self.deadline:
            raise httpx.ReadTimeout(f"the server's HTTP {self.status} answer was still arriving after {self.deadline_s:.0f} s")
        return chunk


class _CappedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, budget: _Budget):
        self._inner, self._budget = inner, budget

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            yield self._budget.take(chunk)

    def close(self) -> None:
        self._inner.close()


class _CappedAsyncStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, budget: _Budget):
        self._inner, self._budget = inner, budget

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield self._budget.take(chunk)

    async def aclose(self) -> None:
        await self._inner.aclose()


def capped_client(max_bytes: int, deadline_s: float) -> httpx.Client:
    """openai's default sync client whose answers are read under the caps (a response hook wraps
    each body before it is read, whatever transport or proxy carried it)."""

    def cap(response: httpx.Response) -> None:
        try:
            budget = _Budget(response, max_bytes, deadline_s)
        except ResponseTooLarge:
            response.close()
            raise
        response.stream = _CappedStream(response.stream, budget)  # type: ignore[arg-type]

    return _from_the_environment(openai.DefaultHttpxClient, headers=_IDENTITY, event_hooks={"response": [cap]})


def capped_async_client(max_bytes: int, deadline_s: float) -> httpx.AsyncClient:
    """The async twin of capped_client."""

    async def cap(response: httpx.Response) -> None:
        try:
            budget = _Budget(response, max_bytes, deadline_s)
        except ResponseTooLarge:
            await response.aclose()
            raise
        response.stream = _CappedAsyncStream(response.stream, budget)  # type: ignore[arg-type]

    return _from_the_environment(openai.DefaultAsyncHttpxClient, headers=_IDENTITY, event_hooks={"response": [cap]})


# What the HTTP client reads from the environment as it is built: proxies (their URLs may hold a password) and certificates.
CERTIFICATE_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")


def proxy_variables() -> list[str]:
    """The variables the client takes proxies from: any `*_proxy` in any case, as urllib's getproxies reads them
    (`Http_Proxy` printed its password in a traceback: 52b)."""
    return [name for name in os.environ if name.lower().endswith("_proxy") and name.lower() != "no_proxy"]


def _from_the_environment(make: Any, **settings: Any) -> Any:
    """`make(**settings)`, an HTTP client, with what it reads from the environment checked: a proxy's password is redacted
    wherever the harness writes from now on, and a setting the client refuses (a malformed proxy URL, an unknown scheme, a
    missing certificate file) is one ConfigError naming the variables, never their values (41b: a traceback printed the
    password of $HTTP_PROXY)."""
    proxies = [name for name in proxy_variables() if os.environ[name]]
    for name in proxies:
        remember_url(os.environ[name])
    try:
        return make(**settings)
    except Exception as err:  # noqa: BLE001 - whatever the client raises on the environment's settings
        certificates = [name for name in CERTIFICATE_VARIABLES if os.environ.get(name)]
        if not proxies + certificates:
            raise
        # a proxy, or a certificate path that is not there (a machine may set SSL_CERT_FILE for every program)
        named = proxies + [name for name in certificates if not os.path.exists(os.environ[name])] or certificates
        raise ConfigError(
            f"the HTTP client refused the proxy or certificate settings of the environment ({type(err).__name__}); check or "
            f"unset {', '.join('$' + name for name in named)}"
        ) from None
