"""What the LLM-managed memory methods (Mem0, MemP, ExpeL) share: asking the model
for a memory operation, repairing a bad answer once, and charging the cost.

A memory call asks for JSON (or plain text) and checks the answer with the method's
validator. A bad answer (not JSON, wrong shape, an id that was never shown, empty)
gets one repair attempt: a second call that shows the model its answer and says what
was wrong. An answer still bad after that is skipped whole and counted as an op error
of the episode it was for; so is a call that fails (LLMError), except an outage, which
stops the run. Every call's Usage is charged to that episode, so memory management is
costed apart from acting. Stored ids are shown to the model as small integers
(Mem0's scheme), so an invented id is caught instead of applied.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from memrl_bench import llm as llm_module
from memrl_bench import prompts
from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Usage
from memrl_bench.methods.base import LearnResult, MethodContext, memory_call

T = TypeVar("T")
_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class OpError(ValueError):
    """A model answer that cannot be applied; the message tells the model what is wrong."""


def require_llm(ctx: MethodContext, method: str) -> None:
    if ctx.llm is None:
        raise ConfigError(f"method {method} manages memory with an LLM: set llm=local or llm=openai")


def call_settings(temperature: float | None = None, max_tokens: int | None = None) -> dict[str, Any]:
    """A memory call's generation overrides: only those the method sets (None: the run's LLM setting)."""
    return {k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens)) if v is not None}


def parse_json(text: str) -> Any:
    """The JSON value of an answer: the whole text, a ``` fenced block, or the outermost {...}."""
    text = text.strip()
    if not text:
        raise OpError("the answer was empty")
    fenced = _FENCED.search(text)
    candidates = [text] + ([fenced.group(1).strip()] if fenced else [])
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{") : text.rindex("}") + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):  # a syntax error, an integer past 4,300 digits, brackets nested past the stack
            continue
    raise OpError("the answer is not valid JSON")


def plain_text(text: str) -> str:
    """A plain-text answer, stripped; an empty one is an OpError."""
    if not text.strip():
        raise OpError("the answer was empty")
    return text.strip()


def text_list(value: Any, key: str) -> list[str]:
    """`value[key]` as a list of non-empty stripped strings (empty strings dropped)."""
    if not isinstance(value, dict) or not isinstance(value.get(key), list):
        raise OpError(f'expected a JSON object with a list under "{key}"')
    if not all(isinstance(v, str) for v in value[key]):
        raise OpError(f'every entry of "{key}" must be a string')
    return [v.strip() for v in value[key] if v.strip()]


def non_empty_text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise OpError(f"{what} must be a non-empty string")
    return value.strip()


def small_ids(real_ids: list[str], start: int = 0) -> dict[str, str]:
    """Small integer ids ("0", "1", ...) shown to the model -> the stored ids they stand for."""
    return {str(start + i): real for i, real in enumerate(real_ids)}


def resolve_id(shown: Any, mapping: dict[str, str]) -> str:
    """The stored id behind a small id the model gave back; an id never shown is an OpError."""
    key = str(shown).strip() if isinstance(shown, (str, int)) and not isinstance(shown, bool) else None
    if key not in mapping:
        valid = ", ".join(mapping) if mapping else "none (memory shown was empty)"
        raise OpError(f"unknown id {shown!r}; valid ids: {valid}")
    return mapping[key]


def operation_list(
    answer: Any,
    shown: dict[str, str],
    *,
    list_key: str,
    kind_key: str,
    text_key: str,
    kinds: tuple[str, ...],
    with_id: set[str],
    with_text: set[str],
) -> list[tuple[str, str | None, str]]:
    """A list of memory operations `{kind_key: KIND, "id": ..., text_key: ...}` as (kind, stored id, text),
    checked whole: any bad entry rejects all of it. Kinds in `with_id` name a shown id
    (at most one operation per id); kinds in `with_text` carry non-empty text."""
    if not isinstance(answer, dict) or not isinstance(answer.get(list_key), list):
        raise OpError(f'expected a JSON object with a list under "{list_key}"')
    ops: list[tuple[str, str | None, str]] = []
    touched: set[str] = set()
    for n, entry in enumerate(answer[list_key]):
        if not isinstance(entry, dict):
            raise OpError(f'entry {n} of "{list_key}" is not a JSON object')
        kind = str(entry.get(kind_key, "")).strip().upper()
        if kind not in kinds:
            raise OpError(f'entry {n}: "{kind_key}" must be one of {", ".join(kinds)} (got {entry.get(kind_key)!r})')
        stored_id = None
        if kind in with_id:
            stored_id = resolve_id(entry.get("id"), shown)
            if stored_id in touched:
                raise OpError(f"entry {n}: id {entry.get('id')!r} has a second operation; each stored item gets at most one")
            touched.add(stored_id)
        text = non_empty_text(entry.get(text_key), f'entry {n}: "{text_key}"') if kind in with_text else ""
        ops.append((kind, stored_id, text))
    return ops


class MemoryCalls:
    """The memory calls of one learn() or retrieval: their usage, op errors and records (for the transcripts) per episode."""

    def __init__(self, ctx: MethodContext):
        self.llm = ctx.llm
        self.run: Callable[[Awaitable[Any]], Any] = ctx.run  # type: ignore[assignment]
        self.usage: dict[str, Usage] = {}
        self.errors: dict[str, int] = {}
        self.calls: dict[str, list[dict[str, Any]]] = {}

    def _charge(self, episode_id: str, usage: Usage) -> None:
        self.usage.setdefault(episode_id, Usage()).add(usage)

    async def ask(
        self, episode_id: str, purpose: str, prompt: str, validate: Callable[[Any], T], *, as_json: bool = True, **overrides: Any
    ) -> T | None:
        """The validated answer, after at most one repair; None (an op error counted) if none.
        `purpose` names the call in the transcript (its prompt template)."""
        messages = [{"role": "user", "content": prompt}]
        records = self.calls.setdefault(episode_id, [])
        for attempt in range(2):
            try:
                completion = await self.llm.chat(messages, **overrides)
            except llm_module.LLMError as err:
                if isinstance(err, llm_module.LLMOutageError):
                    raise  # the server is down: no memory call can succeed, so the run stops
                self._charge(episode_id, getattr(err, "usage", None) or Usage(calls=1, failures=1))
                records.append(memory_call(purpose, messages, problem=f"{type(err).__name__}: {err}"))
                break
            self._charge(episode_id, completion.usage)
            try:
                answer = validate(parse_json(completion.text) if as_json else plain_text(completion.text))
                records.append(memory_call(purpose, messages, completion, parsed=answer))
                return answer
            except OpError as problem:
                records.append(memory_call(purpose, messages, completion, problem=str(problem)))
                if attempt == 0:
                    repair = prompts.render("llm_ops_repair", problem=str(problem))
                    messages = messages + [{"role": "assistant", "content": completion.text}, {"role": "user", "content": repair}]
        self.errors[episode_id] = self.errors.get(episode_id, 0) + 1
        return None

    def ask_now(
        self, episode_id: str, purpose: str, prompt: str, validate: Callable[[Any], T], *, as_json: bool = True, **overrides: Any
    ) -> T | None:
        """`ask` run to completion on the runner's event loop (for sequential learning)."""
        return self.run(self.ask(episode_id, purpose, prompt, validate, as_json=as_json, **overrides))

    def result(self) -> LearnResult:
        return LearnResult(usage_by_episode=self.usage, op_errors_by_episode=self.errors, calls_by_episode=self.calls)


_STATUS = re.compile(r"status\W{0,4}\s*(success|failure)\b", re.IGNORECASE)


def judged_status(text: str) -> tuple[bool, str]:
    """The self-judgement's verdict (True: success) and its reasoning, from a "Thoughts: ... Status: success|failure"
    reply; the last "Status" line counts (models often restate the question's options first)."""
    found = list(_STATUS.finditer(text))
    if not found:
        raise OpError('no verdict: end the answer with "Status: success" or "Status: failure"')
    last = found[-1]
    thoughts = text[: last.start()].strip()
    thoughts = re.sub(r"^\W*thoughts\W*", "", thoughts, flags=re.IGNORECASE).strip()
    return last.group(1).lower() == "success", thoughts


async def judge_episode(calls: MemoryCalls, episode_id: str, task: str, trajectory: str, **overrides: Any) -> tuple[bool, str] | None:
    """The model's own judgement of whether an episode solved its task, from the task and what the agent did and
    saw (never the environment's reward): ReasoningBank's and AWM's LLM-as-judge. None if no verdict could be read."""
    prompt = prompts.render("llm_ops_judge", task=task, trajectory=trajectory)
    return await calls.ask(episode_id, "llm_ops_judge", prompt, judged_status, as_json=False, **overrides)
