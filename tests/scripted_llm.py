"""A ChatModel that answers from a script, for unit tests of parsing and control flow.

Answers come from a list (in call order) or from a function of the messages; the
calls listed in `fail_on` raise LLMError instead. Usage is counted as a server
would: one call each, tokens as whitespace-separated words, the measured latency.
With a `context_size`, prompts are counted the same way (count_tokens) and a call
whose prompt would not leave room for its max_tokens raises ContextOverflowError, as a
server refuses it. Every call is recorded in `calls` for assertions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memrl_bench.core.schema import Usage
from memrl_bench.llm import Completion, ContextOverflowError, LLMError, TokenCount

Reply = Callable[[list[dict[str, str]]], str]


@dataclass
class ScriptedCall:
    messages: list[dict[str, str]]
    sample_index: int
    overrides: dict[str, Any] = field(default_factory=dict)


class ScriptedChatModel:
    def __init__(
        self,
        replies: Sequence[str] | Reply,
        *,
        fail_on: Iterable[int] = (),
        name: str = "scripted",
        context_size: int | None = None,
        finish_reason: str = "stop",
    ):
        """
        replies: the answers, used in order by the calls that do not fail, or a function
            from the messages to the answer.
        fail_on: indices (0-based, counting every call) of calls that raise LLMError.
        context_size: tokens (words) per request, prompt and max_tokens; None: unknown.
        finish_reason: what every completion reports ("length": cut at max_tokens).
        """
        self._replies = replies
        self.fail_on = frozenset(fail_on)
        self.context_size = context_size
        self.finish_reason = finish_reason
        self.calls: list[ScriptedCall] = []
        self._answered = 0
        self.identity: dict[str, Any] = {"model": name, "served_model": name, "base_url_host": "scripted"}

    async def chat(self, messages: list[dict[str, str]], *, sample_index: int = 0, **overrides: Any) -> Completion:
        started = time.perf_counter()
        index = len(self.calls)
        self.calls.append(ScriptedCall([dict(m) for m in messages], sample_index, dict(overrides)))
        if index in self.fail_on:
            raise LLMError(f"scripted failure of call {index}", Usage(calls=1, failures=1, latency_s=time.perf_counter() - started))
        budget = self.prompt_budget(overrides)
        if budget is not None and _words(messages) > budget:
            raise ContextOverflowError(
                f"request ({_words(messages)} tokens) exceeds the available context size", Usage(calls=1, failures=1)
            )
        if callable(self._replies):
            text = self._replies(messages)
        elif self._answered < len(self._replies):
            text = self._replies[self._answered]
        else:
            raise IndexError(f"ScriptedChatModel has {len(self._replies)} scripted replies; call {index} asked for one more")
        self._answered += 1
        usage = Usage(calls=1, prompt_tokens=_words(messages), completion_tokens=len(text.split()), latency_s=time.perf_counter() - started)
        return Completion(text, usage, cached=False, finish_reason=self.finish_reason)

    async def count_tokens(self, messages: list[dict[str, str]]) -> TokenCount:
        return TokenCount(_words(messages), exact=True)

    def prompt_budget(self, overrides: dict[str, Any]) -> int | None:
        return None if self.context_size is None else self.context_size - int(overrides.get("max_tokens") or 0)

    def confirm_up(self) -> None:
        """A script has no server to go down."""


def _words(messages: list[dict[str, str]]) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in messages)
