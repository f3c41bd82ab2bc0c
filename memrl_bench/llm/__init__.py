"""The LLM interface the rest of the harness codes against.

`ChatModel.chat` is async; it returns a Completion with its Usage (one call, its
tokens, retries, latency, whether it came from the cache) or raises LLMError once
its retries are spent. Actors turn LLMError into the episode status `llm_error`.
An LLM kind (llm.name: none, openai, local; memrl_bench.registry) opens the run's
ChatModel for the length of the run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from memrl_bench.config import InputError
from memrl_bench.types import Usage


class LLMError(RuntimeError):
    """A call that still failed after its retries; `usage` is what the failed call spent."""

    def __init__(self, message: str, usage: Usage | None = None):
        super().__init__(message)
        self.usage = usage if usage is not None else Usage(calls=1, failures=1)


class LLMOutageError(LLMError):
    """The server looks down (unreachable, or too many consecutive failed calls): stop the run."""


class LLMAuthError(LLMOutageError, InputError):
    """The server refused the API key (HTTP 401 / 403): stop the run before the batch is logged."""


@dataclass
class Completion:
    text: str
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    finish_reason: str | None = None


class ChatModel(Protocol):
    identity: dict[str, Any]  # configured name, served model id, base_url host (no keys)

    async def chat(self, messages: list[dict[str, str]], *, sample_index: int = 0, **overrides: Any) -> Completion:
        """One chat completion. `overrides` replace generation settings (temperature, max_tokens, stop)."""
        ...

    def confirm_up(self) -> None:
        """After a failed call, raise LLMOutageError if the server no longer answers (the runner
        asks before it logs a batch with failed calls; a model without a server does nothing)."""
        ...


@contextmanager
def no_model(cfg: Mapping[str, Any]) -> Iterator[None]:
    """llm=none: no model for the run (an env that brings its own actor, the synthetic one)."""
    yield None
