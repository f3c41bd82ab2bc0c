"""The LLM interface the rest of the harness codes against.

`ChatModel.chat` is async; it returns a Completion with its Usage (one call, its
tokens, retries, latency, whether it came from the cache) or raises LLMError once
its retries are spent. Actors turn LLMError into the episode status `llm_error`, and
ContextOverflowError (a prompt the server refused as too long) into `context_exceeded`.
`count_tokens` counts a prompt before it is sent and `prompt_budget` says how many
tokens it may have, so that actors fit their prompts to the model's context.
An LLM kind (llm.name: none, openai, local; memrl_bench.core.registry) opens the run's
ChatModel for the length of the run; its settings model (memrl_bench.llm.settings) checks the llm group.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from memrl_bench.core.config import InputError
from memrl_bench.core.registry import with_settings
from memrl_bench.core.schema import Usage
from memrl_bench.llm.settings import LLMConfig


class LLMError(RuntimeError):
    """A call that still failed after its retries; `usage` is what the failed call spent."""

    def __init__(self, message: str, usage: Usage | None = None):
        super().__init__(message)
        self.usage = usage if usage is not None else Usage(calls=1, failures=1)


class LLMOutageError(LLMError):
    """The server looks down (unreachable, or too many consecutive failed calls): stop the run."""


class CacheMissError(LLMOutageError, InputError):
    """A replay from the response cache (no server) met a prompt the cache does not hold: stop the run."""


class LLMSettingError(LLMError, InputError):
    """The server refused what the settings point it at (llm.base_url): fix them and re-run."""


class LLMAuthError(LLMOutageError, InputError):
    """The server refused the API key (HTTP 401 / 403): stop the run before the batch is logged."""


@dataclass
class Completion:
    text: str
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    finish_reason: str | None = None
    dropped_chars: int = 0  # characters of the server's answer past the cap (completion_char_cap), not kept


MIN_COMPLETION_CHARS = 65_536
"""The least a completion keeps (64 Ki characters). A completion longer than
`completion_char_cap(max_tokens)` is cut there: the episode log, the transcripts and the
response cache hold the kept part, its finish_reason becomes "length" (cut, as at
max_tokens) and `dropped_chars` records the rest's size. A server answering 40 MB then
cannot fill the disk, and the action is read from the kept part."""
MAX_CHARS_PER_TOKEN = 16  # no tokenizer's token is longer in practice; a longer answer ignored max_tokens


def completion_char_cap(max_tokens: int | None) -> int:
    """Characters a completion of at most `max_tokens` tokens keeps (MIN_COMPLETION_CHARS at least)."""
    return max(MIN_COMPLETION_CHARS, MAX_CHARS_PER_TOKEN * (max_tokens or 0))


class ContextOverflowError(LLMError):
    """The server refused the prompt because it does not fit the model's context (no retry)."""


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    exact: bool  # the server's own tokenizer and chat template; False: an estimate (ESTIMATE_BYTES_PER_TOKEN)


# Servers without a tokenizer endpoint: UTF-8 bytes / 3 plus 8 per message (chat markup). BPE
# tokenizers average about 4 bytes a token on English text and code, so this over-counts,
# which trims a prompt early rather than sending one that does not fit.
ESTIMATE_BYTES_PER_TOKEN = 3
ESTIMATE_TOKENS_PER_MESSAGE = 8


def estimate_tokens(messages: list[dict[str, str]]) -> TokenCount:
    size = sum(len(str(m.get("content", "")).encode()) for m in messages)
    return TokenCount(-(-size // ESTIMATE_BYTES_PER_TOKEN) + ESTIMATE_TOKENS_PER_MESSAGE * len(messages), exact=False)


class ChatModel(Protocol):
    identity: dict[str, Any]  # configured name, served model id, base_url host (no keys)
    context_size: int | None  # tokens per request (prompt + completion); None: not known

    async def chat(self, messages: list[dict[str, str]], *, sample_index: int = 0, **overrides: Any) -> Completion:
        """One chat completion. `overrides` replace generation settings (temperature, max_tokens, stop)."""
        ...

    def confirm_up(self) -> None:
        """After a failed call, raise LLMOutageError if the server no longer answers (the runner
        asks before it logs a batch with failed calls; a model without a server does nothing)."""
        ...

    async def count_tokens(self, messages: list[dict[str, str]]) -> TokenCount:
        """The prompt tokens these messages make, before they are sent."""
        ...

    def prompt_budget(self, overrides: Mapping[str, Any]) -> int | None:
        """Prompt tokens a call with these overrides may use: the context less its max_tokens; None if unknown."""
        ...


@with_settings(LLMConfig)
@contextmanager
def no_model(cfg: Mapping[str, Any]) -> Iterator[None]:
    """llm=none: no model for the run (an env that brings its own actor, the synthetic one)."""
    yield None
