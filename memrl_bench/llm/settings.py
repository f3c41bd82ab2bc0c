"""The settings of the LLM kinds (conf/llm/*.yaml: local, openai, none): one flat model shared by
the three built-in kinds, so that any key is one override, and the sampling settings an actor
may override (GenerationSettings). An LLM kind of one's own declares its own model."""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from memrl_bench.core.config import MAX_SECONDS, MAX_THREADS, ConfigError, Settings
from memrl_bench.core.redaction import ends_early, remember_secret, remember_url, url_host

MAX_TOKENS = 131_072
"""The most tokens a completion may be asked for (llm.max_tokens, an actor's, a method's: 128 Ki). A completion keeps at
most 16 characters a token (memrl_bench.llm.completion_char_cap), so one stays well inside an episode's log line (64 MiB)
however its text escapes; at max_tokens 500,000 one step's completion of emoji alone passed it, and the run could never
finish (45b)."""

CompletionTokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
"""A number of completion tokens asked for (llm, actor and method settings): 1 to MAX_TOKENS."""


class GenerationSettings(Settings):
    """Sampling settings of a chat call (the llm group's defaults, an actor's overrides)."""

    temperature: float | None = Field(None, ge=0, description="Sampling temperature (0: greedy).")
    top_p: float | None = Field(None, gt=0, le=1, description="Nucleus sampling mass.")
    seed: int | None = Field(None, description="The server's sampling seed.")
    max_tokens: CompletionTokens | None = Field(None, description="Most tokens per completion.")
    stop: str | list[str] | None = Field(None, description="Stop sequences.")
    response_format: dict[str, Any] | None = Field(
        None, description="Structured output (OpenAI's response_format: a JSON schema), sent as given."
    )

    # An actor's overrides (actor.generation) compose as {}: a key not set is the llm group's.
    unlisted = ("temperature", "top_p", "seed", "max_tokens", "stop", "response_format")


_ENV_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MISSING = "???"  # OmegaConf's mark of a mandatory value not given


def checked_url(url: str | None) -> str | None:
    """A server's URL (an LLM's, an embeddings endpoint's), or ValueError saying what is wrong with it."""
    if url is None:
        return url
    if not re.match(r"^https?://[^/\s]+", url):
        raise ValueError("must be an http(s) URL such as http://127.0.0.1:8000/v1")
    _readable(url, urlsplit)
    if url_host(url) != urlsplit(url).netloc.rpartition("@")[2]:  # HTTP clients take the host from before the first '/'
        raise ValueError(
            "its host is ambiguous: a '/' before the last '@' (a password holding '/', or a path holding '@'); percent-encode it (%2F, %40)"
        )
    _, colon, port = url_host(url).rpartition("]")[2].partition(":")  # host:port, [IPv6]:port; host:9:9 has port "9:9"
    if colon and not (port.isdigit() and 1 <= int(port) <= 65535):  # not an outage: no server can listen there
        # never the port itself: after a password holding '?', '#' or a space, it is part of the password
        hint = " (a password holding '?', '#' or a space ends the host early: percent-encode it)" if "@" in url else ""
        raise ValueError(f"the port must be a number in 1-65535{hint}")
    if re.search(r"[\x00-\x1f\x7f]", url):  # the HTTP client refuses it (httpx InvalidURL) at the first request
        raise ValueError("holds a control character (a newline, a tab, ...); percent-encode it")
    if ends_early(url):  # a password or key after it would be written in the clear
        raise ValueError(
            "holds a space, a quote, '<', '>', a backtick or a second '://', which end a URL for redaction; percent-encode it "
            "(%20, %27, %22, %3A%2F%2F, ...)"
        )
    import httpx  # the client's own reading of it (openai's): at the first request, a traceback (52b: `http://[::1]]:9/v1`)

    return _readable(url, httpx.URL)


def _readable(url: str, read: Any) -> str:
    """`url` if `read` takes it; else a ValueError that never quotes it (urllib's and httpx's messages quote the netloc,
    a password in it: a full-width '＠' ends no userinfo for them)."""
    try:
        read(url)
    except Exception:  # noqa: BLE001 - urllib's ValueError, httpx's InvalidURL (no ValueError)
        pass
    else:
        return url
    raise ValueError(
        "the HTTP client cannot read its host or port (an IPv6 host is written [2001:db8::1]:8000; a character that reads as '@', '/' "
        "or ':' once normalized, such as a full-width '＠', is typed in ASCII or percent-encoded)"
    )


def checked_key_env(name: str) -> str:
    """The name of the environment variable holding an API key, or ValueError when it looks like the key itself."""
    if not _ENV_VAR_NAME.match(name):
        raise ValueError("must be the NAME of the environment variable holding the key (such as OPENAI_API_KEY), not the key itself")
    return name


def api_key(variable: str) -> str | None:
    """The API key in environment variable `variable` (None if unset or empty), remembered for redaction; ConfigError naming
    the variable (never the key) when no HTTP header can carry it: a line break (a key file saved with one) or a character
    outside ASCII made every call fail as if the server were down, or ended the run in a traceback."""
    key = os.environ.get(variable) or None
    remember_secret(key)
    if key is not None and not _HEADER_SAFE.fullmatch(key):
        where = next(i for i, char in enumerate(key) if not _HEADER_SAFE.fullmatch(char))
        raise ConfigError(
            f"${variable} holds a character no HTTP header carries (position {where + 1} of {len(key)}: a space, a line break, a "
            "control or non-ASCII character); set the key alone, as the server issued it"
        )
    return key


def url_from_env(variable: str) -> str | None:
    """The URL in environment variable `variable` (None if unset or empty), checked as a config's and remembered for
    redaction; ConfigError naming the variable (never its value) when refused. The openai package reads $OPENAI_BASE_URL
    when a config sets no URL; unchecked, a password holding a quote reached stderr and two ports ended in a traceback
    (the thirtieth round)."""
    url = os.environ.get(variable) or None
    try:
        checked_url(url)
    except ValueError as err:
        raise ConfigError(f"${variable} {err}") from None
    if url is not None:
        remember_url(url)
    return url


_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")  # visible ASCII: what an Authorization header carries unchanged


class LLMConfig(GenerationSettings):
    """The llm group (conf/llm/*.yaml): one flat group, so that any key is one override. The three
    kinds share the model, not its defaults, so their YAMLs list their keys (each value a YAML
    restates is the model's default or one tests/contracts/test_config_files.py lists as its own)."""

    unlisted = ()  # GenerationSettings' unset keys are this group's set ones

    name: Literal["local", "openai", "none"] = Field(
        "none", description="local: a llama.cpp server started here; openai: any running OpenAI-compatible server; none: no LLM."
    )
    model: str | None = Field(None, description="A catalogue name or .gguf path (local), the served model name (openai).")
    base_url: str | None = Field(None, description="The server's URL, ending in /v1 (openai).")
    api_key_env: str = Field("OPENAI_API_KEY", description="The environment variable holding the API key.")
    finetuned_on: str | None = Field(None, description="The env this backbone was fine-tuned on (the protocol refuses it unless allowed).")
    max_concurrency: int = Field(4, ge=1, description="Requests in flight at once.")
    max_consecutive_failures: int = Field(10, ge=1, description="This many failed calls in a row stop the run (LLMOutageError).")
    max_retries: int = Field(4, ge=0, description="Extra attempts after 429 / 5xx / timeouts / connection errors.")
    timeout_s: float = Field(120.0, gt=0, le=MAX_SECONDS, description="Seconds per attempt.")
    backoff_base_s: float = Field(0.5, ge=0, le=MAX_SECONDS, description="First backoff, doubled per retry.")
    backoff_max_s: float = Field(30.0, ge=0, le=MAX_SECONDS, description="Longest backoff.")
    max_retry_after_s: float = Field(60.0, ge=0, le=MAX_SECONDS, description="A server's Retry-After is honoured up to this.")
    retry_seed: int = Field(0, description="Seed of the backoff jitter.")
    cache_mode: Literal["read_write", "read_only", "off"] = Field("off", description="The SQLite response cache.")
    cache_path: str | None = Field(None, description="The cache file (null: the default under MEMRL_BENCH_CACHE).")
    threads: int | None = Field(None, ge=1, le=MAX_THREADS, description="CPU threads of a local server.")
    ctx_size: int | None = Field(
        None,
        ge=1,
        description=(
            "The model's context, tokens per request (prompt + completion); prompts are trimmed to fit it. null: local, the model's own "
            "(GGUF), capped by memory; openai, unknown (nothing trimmed)."
        ),
    )
    parallel: int | None = Field(None, ge=1, le=MAX_THREADS, description="Requests a local server decodes together.")
    startup_timeout_s: float | None = Field(None, gt=0, le=MAX_SECONDS, description="Seconds a local server may take to start.")

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        return checked_url(url)

    @field_validator("api_key_env")
    @classmethod
    def _key_env(cls, name: str) -> str:
        return checked_key_env(name)

    @model_validator(mode="after")
    def _model_given(self) -> LLMConfig:
        if self.name != "none" and (not self.model or self.model == _MISSING):
            raise ValueError(
                f"llm.model is required for llm={self.name} (a catalogue name or .gguf path for local, the served model name for openai)"
            )
        if self.name == "openai" and not self.base_url:
            raise ValueError("llm.base_url is required for llm=openai (e.g. http://127.0.0.1:8000/v1 for vLLM)")
        return self
