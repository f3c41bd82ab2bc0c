"""The real ChatModel: any OpenAI-compatible server (llama.cpp, vLLM, Ollama, OpenAI).

`OpenAIChatModel.chat` keeps up to `max_concurrency` requests in flight, retries
429 / 5xx / timeouts / connection errors / unreadable answers with exponential
backoff (jitter from a seeded rng, Retry-After honoured), counts tokens, retries
and latency into a Usage, and consults an optional ResponseCache first. After
`max_consecutive_failures` failed calls in a row it raises LLMOutageError on every
call, so a run whose server died stops fast instead of logging llm_error episodes.

The API key is read from an environment variable at construction and handed to
the openai client only: it is never stored in `identity` or written anywhere. A
server's error texts are redacted (the key, URL userinfo, anything key-like) before
they reach a message or an episode's log. The server refusing the key (HTTP 401 /
403) raises LLMAuthError, naming the variable: the run stops before the batch is logged.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import re
import time
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import openai
from pydantic import BaseModel, Field, StrictStr, ValidationError, field_validator

from memrl_bench.core.config import cache_root, validated
from memrl_bench.core.redaction import redact_server_name, redact_server_text, remember_url, scrub, strip_url_secrets, url_host
from memrl_bench.core.registry import with_settings
from memrl_bench.core.schema import Usage
from memrl_bench.llm import (
    CacheMissError,
    Completion,
    ContextOverflowError,
    LLMAuthError,
    LLMError,
    LLMOutageError,
    LLMSettingError,
    TokenCount,
    completion_char_cap,
    estimate_tokens,
)
from memrl_bench.llm.cache import CachedResponse, ResponseCache, cache_key, count_key
from memrl_bench.llm.gguf import check_file
from memrl_bench.llm.http import body_cap, capped_async_client, capped_client
from memrl_bench.llm.settings import LLMConfig, api_key

GENERATION_KEYS = ("temperature", "top_p", "seed", "max_tokens", "stop", "response_format")
DEFAULT_GENERATION: dict[str, Any] = {"temperature": 0.0, "top_p": 1.0, "seed": 0, "max_tokens": 256, "stop": None}
# Status codes worth another try: timeout, conflict, too early, rate limit, server errors.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
AUTH_STATUS = frozenset({401, 403})  # the key is refused: no retry, no episode logged


def retryable(status: int) -> bool:
    """An HTTP status worth asking again after a backoff: the server is busy, loading or failing for now."""
    return status in RETRYABLE_STATUS or status >= 500


NO_KEY = "no-key"  # local servers accept any key, and the openai package refuses none

# httpx logs every request at INFO, which a run's logging shows: thousands of lines.
for _logger in ("httpx", "httpx2"):
    logging.getLogger(_logger).setLevel(logging.WARNING)
log = logging.getLogger(__name__)
SLOW_CALL_S = 30.0  # a call that took longer (retries and backoff included) is logged


class _InvalidResponse(Exception):
    """A 200 answer without a usable completion in it."""


@dataclass
class RetryPolicy:
    max_retries: int = 4  # extra attempts after the first
    timeout_s: float = 120.0  # per attempt
    backoff_base_s: float = 0.5  # first backoff; doubles per retry
    backoff_max_s: float = 30.0
    max_retry_after_s: float = 60.0  # a server's Retry-After is honoured up to this
    seed: int = 0  # of the jitter rng

    def backoff_s(self, retry: int, rng: random.Random) -> float:
        """Exponential backoff with 'equal jitter': half fixed, half random."""
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** (retry - 1))
        return ceiling * (0.5 + 0.5 * rng.random())


def retry_after_s(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date), or retry-after-ms."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _classify(err: BaseException) -> tuple[bool, float | None, str]:
    """(retryable, server-asked wait, short reason) for one failed attempt."""
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        reason = f"HTTP {status}: {redact_server_text(err.message)}"
        return retryable(status), retry_after_s(err.response.headers), reason
    if isinstance(err, (openai.APITimeoutError, asyncio.TimeoutError)):
        return True, None, "timed out"
    if isinstance(err, openai.APIConnectionError):
        cause = err.__cause__ or err
        detail = f": {scrub(str(cause))}" if str(cause) else ""
        return True, None, f"connection error: {type(cause).__name__}{detail}"
    if isinstance(err, (json.JSONDecodeError, _InvalidResponse)):
        return True, None, f"unreadable response: {type(err).__name__}: {redact_server_text(str(err))}"
    return False, None, f"{type(err).__name__}: {redact_server_text(str(err))}"


def _exceeds_context(err: BaseException) -> bool:
    """A 400 answer refusing the prompt's length (llama.cpp: exceed_context_size_error; OpenAI and vLLM: context_length_exceeded / "maximum
    context length").
    """
    if not isinstance(err, openai.BadRequestError):
        return False
    body = err.body if isinstance(err.body, dict) else {}
    kind = str(body.get("type") or body.get("code") or getattr(err, "code", "") or "")
    return kind in ("exceed_context_size_error", "context_length_exceeded") or any(
        phrase in err.message for phrase in ("exceeds the available context size", "maximum context length")
    )


def _refuses_stop(err: BaseException) -> bool:
    """A 400 answer naming the `stop` parameter (OpenAI's reasoning models: "Unsupported parameter: 'stop'")."""
    return isinstance(err, openai.BadRequestError) and (getattr(err, "param", None) == "stop" or "'stop'" in err.message)


@dataclass
class _LoopState:
    """What binds to one event loop: the HTTP connection pool and the semaphore."""

    client: openai.AsyncOpenAI
    in_flight: asyncio.Semaphore


class OpenAIChatModel:
    """A ChatModel over an OpenAI-compatible HTTP API."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        generation: Mapping[str, Any] | None = None,
        max_concurrency: int = 4,
        retry: RetryPolicy | None = None,
        max_consecutive_failures: int = 10,
        api_key_env: str = "OPENAI_API_KEY",
        cache: ResponseCache | None = None,
        identity_extra: Mapping[str, Any] | None = None,
        context_size: int | None = None,
        tokenizer_url: str | None = None,
    ):
        """
        context_size: tokens per request (prompt + completion), for prompt_budget; None: unknown.
        tokenizer_url: a llama.cpp server's root URL, whose /apply-template and /tokenize
            count prompts exactly; None: counts are estimates (memrl_bench.llm.estimate_tokens).
        """
        if max_concurrency < 1:
            raise ValueError(f"llm max_concurrency must be >= 1, got {max_concurrency}")
        if max_consecutive_failures < 1:
            raise ValueError(f"llm max_consecutive_failures must be >= 1, got {max_consecutive_failures}")
        self.base_url = base_url.rstrip("/")
        self.display_url = strip_url_secrets(self.base_url)  # for messages and logs: no user:password@, no ?key=...
        self.model = model
        self.generation = {**DEFAULT_GENERATION, **self._checked_settings(generation or {})}
        self.max_concurrency = max_concurrency
        self.retry = retry or RetryPolicy()
        self.max_consecutive_failures = max_consecutive_failures
        self.cache = cache
        self.context_size = context_size
        self.tokenizer_url = tokenizer_url.rstrip("/") if tokenizer_url else None
        self._api_key_env = api_key_env
        self._api_key = api_key(api_key_env) or NO_KEY
        remember_url(self.base_url)
        self._rng = random.Random(self.retry.seed)
        # every answer's body is read under this many bytes (a per-call max_tokens past ~87k tokens would need more)
        self._body_cap = body_cap(completion_char_cap(self.generation.get("max_tokens")))
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self._consecutive_failures = 0
        self._outage: str | None = None
        self._sends_stop = True  # False once the server refused the `stop` parameter (some hosted models do)
        self.identity: dict[str, Any] = {
            "model": model,
            "served_model": self._served_model(),
            "base_url_host": url_host(self.base_url),
            **dict(identity_extra or {}),
        }

    def __repr__(self) -> str:
        return f"OpenAIChatModel(base_url={self.display_url!r}, model={self.model!r})"

    @staticmethod
    def _checked_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(settings) - set(GENERATION_KEYS))
        if unknown:
            raise ValueError(f"unknown llm generation setting(s) {', '.join(unknown)}; valid: {', '.join(GENERATION_KEYS)}")
        return dict(settings)

    def _served_model(self) -> str | None:
        """The model id the server reports (None: it lists none we can read); one clear error if it cannot be reached.

        A busy or still-loading server (llama.cpp and vLLM answer 503 while a model loads) is asked again with the
        retry policy's backoff, then reported as down; another refusal is a setting to fix (llm.base_url)."""
        timeout_s = min(self.retry.timeout_s, 30.0)
        client = openai.OpenAI(
            base_url=self.base_url,
            api_key=self._api_key,
            max_retries=0,
            timeout=timeout_s,
            http_client=capped_client(self._body_cap, timeout_s),
        )
        try:
            for attempt in range(self.retry.max_retries + 1):
                try:
                    ids = [m.id for m in client.models.list()]
                    break
                except (TypeError, AttributeError, ValueError):  # a body that is no model list: no served model to name
                    return None
                except openai.APIStatusError as err:
                    if err.status_code == 404:  # some compatible servers do not list models
                        return None
                    if err.status_code in AUTH_STATUS:
                        raise self._refused(f"HTTP {err.status_code}: {redact_server_text(err.message)}") from None
                    answered = f"the LLM server at {self.display_url} answered /models with HTTP {err.status_code}"
                    if not retryable(err.status_code):
                        raise LLMSettingError(f"{answered}: {redact_server_text(err.message)}; is llm.base_url its /v1 address?") from None
                    if attempt == self.retry.max_retries:
                        raise LLMOutageError(f"{answered} {attempt + 1} times: {redact_server_text(err.message)}") from None
                    time.sleep(self.retry.backoff_s(attempt + 1, self._rng))
        except (openai.APIConnectionError, openai.APIResponseValidationError) as err:
            raise LLMOutageError(f"cannot reach the LLM server at {self.display_url}: {scrub(str(err.__cause__ or err))}") from err
        finally:
            client.close()
        ids = [i for i in ids if isinstance(i, str)]
        if self.model in ids:
            return self.model
        return redact_server_name(ids[0]) if len(ids) == 1 else None

    def _refused(self, reason: str) -> LLMAuthError:
        key = f"the key in ${self._api_key_env}" if os.environ.get(self._api_key_env) else f"no key (${self._api_key_env} is not set)"
        return LLMAuthError(
            f"the LLM server at {self.display_url} refused {key} ({reason}); set a valid key in {self._api_key_env} (llm.api_key_env names "
            "the variable)"
        )

    def confirm_up(self) -> None:
        """After a failed call, check the server still answers; LLMOutageError if not.

        The runner asks before logging a batch with failed calls, so an outage stops the
        run instead of being logged as a batch of failed episodes.
        """
        if self._outage or self._consecutive_failures:
            self._served_model()

    def _state(self) -> _LoopState:
        # asyncio objects and pooled connections belong to one event loop; a model
        # used from several asyncio.run calls gets a fresh pool for each loop.
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            # openai's default HTTP client closes itself on garbage collection by scheduling
            # a task on whatever loop runs then, which fails for a pool of a closed loop.
            http_client = capped_async_client(self._body_cap, self.retry.timeout_s)
            client = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self._api_key, max_retries=0, timeout=self.retry.timeout_s, http_client=http_client
            )
            state = self._loops[loop] = _LoopState(client, asyncio.Semaphore(self.max_concurrency))
        return state

    def settings(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """The generation settings of one call: the configured ones with `overrides` applied."""
        return {**self.generation, **self._checked_settings(overrides)}

    def prompt_budget(self, overrides: Mapping[str, Any]) -> int | None:
        """Prompt tokens a call may use: the context less the completion's max_tokens (None: no known context)."""
        if self.context_size is None:
            return None
        return self.context_size - int(self.settings(overrides).get("max_tokens") or 0)

    async def count_tokens(self, messages: list[dict[str, str]]) -> TokenCount:
        """The prompt's tokens: exact from a llama.cpp server (its chat template, then its
        tokenizer: what the completion's usage reports), else an estimate. Exact counts are
        kept in the response cache, so a run replayed from the cache asks the server nothing."""
        if self.tokenizer_url is None:
            return estimate_tokens(messages)
        key = count_key(self.identity, messages) if self.cache is not None else ""
        cached = self.cache.get_count(key) if self.cache is not None else None
        if cached is not None:
            return TokenCount(cached, exact=True)
        client = self._state().client
        try:
            template = json.loads(await client.post(f"{self.tokenizer_url}/apply-template", cast_to=bytes, body={"messages": messages}))
            tokens = json.loads(await client.post(f"{self.tokenizer_url}/tokenize", cast_to=bytes, body={"content": template["prompt"]}))[
                "tokens"
            ]
        except (openai.APIError, json.JSONDecodeError, KeyError, TypeError) as err:
            # The chat call that follows meets the same server and reports its failure; until then, estimate.
            log.warning("memrl-bench: counting prompt tokens at %s failed (%s); using an estimate", self.tokenizer_url, _classify(err)[2])
            return estimate_tokens(messages)
        if self.cache is not None:
            self.cache.put_count(key, len(tokens))
        return TokenCount(len(tokens), exact=True)

    async def chat(self, messages: list[dict[str, str]], *, sample_index: int = 0, **overrides: Any) -> Completion:
        """One completion. A cache hit makes no request and counts as one call with
        cache_hits=1, its stored tokens and latency 0, so token counts do not depend
        on the cache."""
        if self._outage is not None:
            raise LLMOutageError(self._outage)
        settings = self.settings(overrides)
        key = cache_key(self.identity, messages, settings, sample_index) if self.cache is not None else ""
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            usage = Usage(calls=1, prompt_tokens=hit.prompt_tokens, completion_tokens=hit.completion_tokens, cache_hits=1)
            return Completion(hit.text, usage, cached=True, finish_reason=hit.finish_reason, dropped_chars=hit.dropped_chars)
        completion = await self._request(messages, settings)
        if self.cache is not None:
            self.cache.put(
                key,
                CachedResponse(
                    completion.text,
                    completion.finish_reason,
                    completion.usage.prompt_tokens,
                    completion.usage.completion_tokens,
                    completion.dropped_chars,
                ),
            )
        return completion

    async def _request(self, messages: list[dict[str, str]], settings: dict[str, Any]) -> Completion:
        state = self._state()
        request = {k: v for k, v in settings.items() if v is not None and (k != "stop" or self._sends_stop)}
        retries = 0
        latency = 0.0  # time in flight plus backoff; waiting for a free slot is not counted
        while True:
            async with state.in_flight:
                started = time.perf_counter()
                try:
                    body = await asyncio.wait_for(
                        # post() rather than chat.completions.create(): the same request without
                        # create()'s per-call transform of the messages, a third of the client's CPU.
                        # cast_to=bytes: we read four fields ourselves instead of openai building a
                        # ChatCompletion model, a sixth of what is left (BENCHMARKS.md).
                        state.client.post("/chat/completions", cast_to=bytes, body={"model": self.model, "messages": messages, **request}),
                        # a server trickling bytes can outlast httpx's per-read timeout
                        timeout=self.retry.timeout_s,
                    )
                    text, finish_reason, prompt_tokens, completion_tokens = read_completion(body)
                    error: BaseException | None = None
                except (openai.APIError, asyncio.TimeoutError, json.JSONDecodeError, _InvalidResponse) as err:
                    error = err
                latency += time.perf_counter() - started
            if error is None:
                self._consecutive_failures = 0
                if latency >= SLOW_CALL_S:
                    log.warning(
                        "memrl-bench: slow LLM call to %s: %.0f s for %d prompt + %d completion tokens (%d retries)",
                        self.display_url,
                        latency,
                        prompt_tokens,
                        completion_tokens,
                        retries,
                    )
                usage = Usage(calls=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, retries=retries, latency_s=latency)
                cap = completion_char_cap(settings.get("max_tokens"))
                if len(text) > cap:  # a server that ignored max_tokens: keep the start, say how much was dropped
                    log.warning("memrl-bench: a completion from %s has %d characters; kept the first %d", self.display_url, len(text), cap)
                    return Completion(text[:cap], usage, cached=False, finish_reason="length", dropped_chars=len(text) - cap)
                return Completion(text, usage, cached=False, finish_reason=finish_reason)
            if "stop" in request and _refuses_stop(error):
                # Without them the answer is longer, and the actor's parser cuts it at the same places.
                if self._sends_stop:
                    log.warning(
                        "memrl-bench: %s does not accept stop sequences (%s); sending requests without them",
                        self.display_url,
                        _classify(error)[2],
                    )
                self._sends_stop = False
                del request["stop"]
                continue
            retryable, wait_s, reason = _classify(error)
            if isinstance(error, openai.APIStatusError) and error.status_code in AUTH_STATUS:
                raise self._refused(reason) from None
            if _exceeds_context(error):  # the prompt's fault, not the server's: no retry, no outage count
                raise ContextOverflowError(
                    f"the prompt does not fit the model's context ({reason})", Usage(calls=1, failures=1, latency_s=latency)
                ) from None
            if not retryable or retries >= self.retry.max_retries:
                raise self._failed(reason, retries, latency) from error
            retries += 1
            delay = min(wait_s, self.retry.max_retry_after_s) if wait_s is not None else self.retry.backoff_s(retries, self._rng)
            log.warning(
                "memrl-bench: LLM call to %s failed (%s); retry %d of %d in %.1f s",
                self.display_url,
                reason,
                retries,
                self.retry.max_retries,
                delay,
            )
            await asyncio.sleep(delay)
            latency += delay

    def _failed(self, reason: str, retries: int, latency: float) -> LLMError:
        usage = Usage(calls=1, retries=retries, failures=1, latency_s=latency)
        self._consecutive_failures += 1
        if self._consecutive_failures >= self.max_consecutive_failures:
            self._outage = (
                f"the LLM server at {self.display_url} looks down: {self._consecutive_failures} calls in a row failed "
                f"(max_consecutive_failures={self.max_consecutive_failures}); last error: {reason}"
            )
            return LLMOutageError(self._outage, usage)
        return LLMError(f"LLM call to {self.display_url} failed after {retries} retries: {reason}", usage)

    async def aclose(self) -> None:
        """Close this event loop's connections (others were dropped with their loops)."""
        state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None:
            await state.client.close()

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


class CacheReplayModel(OpenAIChatModel):
    """A model answered only by the response cache, with no server: llm=local with
    llm.cache_mode=read_only replays a run exactly when every prompt (and every token count)
    it asks for is cached under the same model identity; the first one that is not stops the
    run with CacheMissError naming the cache file."""

    REPLAY_URL = "http://cache-replay.invalid"  # never contacted: the host part of the key is volatile

    def __init__(self, cfg: Mapping[str, Any], *, served_model: str | None, identity_extra: Mapping[str, Any]):
        if cfg.get("cache_mode") != "read_only":
            raise ValueError("CacheReplayModel needs llm.cache_mode=read_only")
        self._replayed_model = served_model
        super().__init__(**_model_arguments(cfg, f"{self.REPLAY_URL}/v1", identity_extra, None, self.REPLAY_URL))

    def _served_model(self) -> str | None:
        return self._replayed_model

    def confirm_up(self) -> None:
        """Nothing to check: no server."""

    def _missing(self, what: str) -> CacheMissError:
        return CacheMissError(
            f"llm.cache_mode=read_only replays {what} from {self.cache.path if self.cache else 'no cache'} with no server, and it is not "
            "there (another model, prompt or setting than the cached run's); run with llm.cache_mode=read_write to ask the server"
        )

    async def count_tokens(self, messages: list[dict[str, str]]) -> TokenCount:
        cached = self.cache.get_count(count_key(self.identity, messages)) if self.cache is not None else None
        if cached is None:
            raise self._missing("a prompt's token count")
        return TokenCount(cached, exact=True)

    async def _request(self, messages: list[dict[str, str]], settings: dict[str, Any]) -> Completion:
        raise self._missing("a completion")


# No context holds a billion tokens: a larger count is a server's nonsense (and overflows SQLite's INTEGER).
MAX_TOKEN_COUNT = 10**9
_TokenCount = Annotated[int, Field(ge=0, le=MAX_TOKEN_COUNT)]


class _Message(BaseModel):
    content: StrictStr | None = None


_FINISH_REASON = re.compile(r"[a-z_]{1,32}")  # stop, length, tool_calls, content_filter ...


class _Choice(BaseModel):
    message: _Message
    finish_reason: StrictStr | None = None

    @field_validator("finish_reason")
    @classmethod
    def _a_reason(cls, value: str | None) -> str | None:
        """A server's word for why the completion ended; anything else (a server may echo any text, the key too: twenty-second
        round) is stored as "other"."""
        return value if value is None or (_FINISH_REASON.fullmatch(value) and redact_server_name(value) == value) else "other"


class _TokenUsage(BaseModel):
    prompt_tokens: _TokenCount | None = None
    completion_tokens: _TokenCount | None = None


class _ChatAnswer(BaseModel):
    """What the harness reads of a chat completion; anything else in the body is ignored."""

    choices: list[_Choice] = Field(min_length=1)
    usage: _TokenUsage | None = None


def read_completion(body: bytes) -> tuple[str, str | None, int, int]:
    """(text, finish_reason, prompt tokens, completion tokens) of a chat completion's JSON
    body, as openai's ChatCompletion would give them; an empty content is "". A body whose
    content is not text or whose token counts are not whole numbers in 0..MAX_TOKEN_COUNT is
    an unreadable answer (retried like one), never taken in."""
    try:
        answer = _ChatAnswer.model_validate_json(body)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the body"
        # the body as text, not as bytes' repr (which doubles each backslash: a key quoted as \\uXXXX escapes was no longer
        # read as the key, nineteenth round)
        quoted = redact_server_text(body[:200].decode(errors="replace") if isinstance(body, bytes) else str(body)[:200])
        raise _InvalidResponse(f"no completion in the answer ({where}: {first['msg']}): {quoted!r}") from None
    choice, usage = answer.choices[0], answer.usage or _TokenUsage()
    return choice.message.content or "", choice.finish_reason, usage.prompt_tokens or 0, usage.completion_tokens or 0


_RETRY_KEYS = ("max_retries", "timeout_s", "backoff_base_s", "backoff_max_s", "max_retry_after_s")
_SERVER_KEYS = ("threads", "ctx_size", "parallel", "startup_timeout_s")


def _checked_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The `llm` group, checked by its model (memrl_bench.llm.settings.LLMConfig); ConfigError names the key."""
    validated(LLMConfig, dict(cfg), "llm")
    return dict(cfg)


def _cache_from_config(cfg: Mapping[str, Any]) -> ResponseCache | None:
    mode = cfg.get("cache_mode", "off")
    if mode == "off":
        return None
    return ResponseCache(cfg.get("cache_path") or cache_root() / "llm_cache.sqlite", mode)


def make_chat_model(
    cfg: Mapping[str, Any],
    *,
    base_url: str | None = None,
    identity_extra: Mapping[str, Any] | None = None,
    context_size: int | None = None,
    tokenizer_url: str | None = None,
) -> OpenAIChatModel:
    """An OpenAIChatModel from the `llm` config group; `base_url` overrides the config's, and
    `context_size` its ctx_size (a local server's, sized from the model)."""
    return OpenAIChatModel(**_model_arguments(cfg, base_url, identity_extra, context_size, tokenizer_url))


def _model_arguments(
    cfg: Mapping[str, Any],
    base_url: str | None,
    identity_extra: Mapping[str, Any] | None,
    context_size: int | None,
    tokenizer_url: str | None,
) -> dict[str, Any]:
    cfg = _checked_config(cfg)
    url = base_url or cfg.get("base_url")
    if not url:
        raise ValueError("llm.base_url is missing (llm=local gets it from the server it starts: use open_local)")
    return {
        "base_url": url,
        "model": cfg["model"],
        "generation": {key: cfg[key] for key in GENERATION_KEYS if key in cfg},
        "max_concurrency": cfg.get("max_concurrency", 4),
        "retry": RetryPolicy(**{key: cfg[key] for key in _RETRY_KEYS if key in cfg}, seed=cfg.get("retry_seed", 0)),
        "max_consecutive_failures": cfg.get("max_consecutive_failures", 10),
        "api_key_env": cfg.get("api_key_env", "OPENAI_API_KEY"),
        "cache": _cache_from_config(cfg),
        "identity_extra": identity_extra,
        "context_size": context_size or cfg.get("ctx_size"),
        "tokenizer_url": tokenizer_url,
    }


@with_settings(LLMConfig)
@contextmanager
def open_openai(cfg: Mapping[str, Any]) -> Iterator[OpenAIChatModel]:
    """llm=openai: a model on a running OpenAI-compatible server (llm.base_url), for the length of a run."""
    model = make_chat_model(cfg)
    try:
        yield model
    finally:
        model.close()


@with_settings(LLMConfig)
@contextmanager
def open_local(cfg: Mapping[str, Any]) -> Iterator[OpenAIChatModel]:
    """llm=local: a llama.cpp server started here for the length of a run, stopped on exit, also on
    errors; with llm.cache_mode=read_only no server: the run is replayed from the response cache."""
    from memrl_bench.llm import catalogue as models
    from memrl_bench.llm.local_server import LocalLlamaServer, server_identity

    cfg = _checked_config(cfg)
    alias = cfg["model"] if cfg["model"] in models.CATALOGUE else None  # a .gguf path: its file stem
    server_settings = {key: cfg[key] for key in _SERVER_KEYS if cfg.get(key) is not None}
    server_settings.setdefault("parallel", cfg.get("max_concurrency", 4))  # one slot per request in flight
    if cfg.get("cache_mode") == "read_only":  # a replay: the same identity as the server's, no server, no model file
        identity = {**server_identity(models.file_name(cfg["model"]), server_settings["parallel"]), **models.known_checksum(cfg["model"])}
        model = CacheReplayModel(cfg, served_model=alias or Path(models.file_name(cfg["model"])).stem, identity_extra=identity)
        try:
            yield model
        finally:
            model.close()
        return
    model_path = models.ensure(cfg["model"])
    check_file(model_path)  # a damaged or truncated file: one line naming it, before a server loads it
    with LocalLlamaServer(model_path, alias=alias, **server_settings) as server:
        identity = {**server.info(), **models.checksum(cfg["model"])}
        model = make_chat_model(
            cfg, base_url=server.base_url, identity_extra=identity, context_size=server.ctx_size, tokenizer_url=server.address
        )
        try:
            yield model
        finally:
            model.close()
