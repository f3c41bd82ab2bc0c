"""The LLM actors: multi-turn ReAct for text environments, single-turn for answer-checked tasks.

Both code against the ChatModel protocol (anything with `async chat(messages, ...)`),
call the env in a worker thread so the other episodes of a batch keep their LLM
requests in flight, and never raise for an LLM or env failure: the episode ends with
status "llm_error" / "env_error" and the message (a whole-server outage is re-raised
so the runner can stop the run).

What the harness does to a model's output before the env sees it, so that it never
decides an outcome itself:
- Prompts fit the model's context: each is counted before it is sent (ChatModel.count_tokens)
  and, if it would not leave room for max_tokens, the oldest history turns are left out
  first, one by one; the memory block and the task are never cut. A prompt that does not
  fit without any history ends the episode with status "context_exceeded" (as does a
  refusal by the server), never as the agent's failure. Trimmed tokens are counted per
  episode (info.trimmed_tokens).
- A completion without a usable action, or whose action was cut off at max_tokens
  (finish_reason "length" with nothing after the action), is not executed: the turn is a
  format failure, and the model reads a notice instead of an observation.
- Actions are mapped onto admissible commands only when that cannot change what they
  mean (memrl_bench.actors.matching); every rewrite is logged in the turn.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import memrl_bench.llm
from memrl_bench import prompts
from memrl_bench.actors.base import Actor, ActorSettings, Job
from memrl_bench.actors.matching import match_action
from memrl_bench.actors.memrl_alfworld import MemRLAlfworldPrompt
from memrl_bench.core.answers import letter_schema, read_answer, read_constrained
from memrl_bench.core.runfolder import MAX_LINE_BYTES
from memrl_bench.core.schema import EpisodeStatus, Outcome, StepRetrieval, Task, Turn, Usage
from memrl_bench.envs.base import Env
from memrl_bench.llm import ChatModel, Completion, ContextOverflowError, LLMError


class _EnvFailure(Exception):
    """An exception raised inside env.reset / env.step, carried to the episode status."""


@dataclass
class _Recorder:
    """What one play() accumulates: turns, usage, time per stage, the transcript."""

    keep_transcript: bool
    turns: list[Turn] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    act_s: float = 0.0
    env_s: float = 0.0
    reset_s: float = 0.0
    last_env_s: float = 0.0
    step_act_s: float = 0.0  # LLM seconds since the last env step (one turn's thinking)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    logged_bytes: int = 0  # what the turns take in the episode's log line (JSON, as the log writes it)

    async def chat(
        self, llm: ChatModel, messages: list[dict[str, str]], sample_index: int, generation: dict[str, Any], trimmed_tokens: int = 0
    ) -> Completion:
        start = time.perf_counter()
        try:
            completion = await llm.chat(messages, sample_index=sample_index, **generation)
        except LLMError as err:
            self.usage.add(getattr(err, "usage", None) or Usage(calls=1, failures=1))
            raise
        finally:
            self.act_s += time.perf_counter() - start
            self.step_act_s += time.perf_counter() - start
        self.usage.add(completion.usage)
        self.info["max_prompt_tokens"] = max(self.info.get("max_prompt_tokens", 0), completion.usage.prompt_tokens)
        dropped = (
            {"dropped_chars": completion.dropped_chars} if completion.dropped_chars else {}
        )  # cut at memrl_bench.llm.completion_char_cap
        if dropped:
            self.info["dropped_completion_chars"] = self.info.get("dropped_completion_chars", 0) + completion.dropped_chars
        if self.keep_transcript:
            self.transcript.append(
                {
                    "messages": messages,
                    "completion": completion.text,
                    "finish_reason": completion.finish_reason,
                    "prompt_tokens": completion.usage.prompt_tokens,
                    "completion_tokens": completion.usage.completion_tokens,
                    "trimmed_tokens": trimmed_tokens,
                    "cache_hit": completion.cached,
                    **dropped,
                }
            )
        return completion

    async def env(self, call: Callable[..., Any], *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return await asyncio.to_thread(call, *args)
        except Exception as err:  # any env failure ends only this episode
            raise _EnvFailure(f"{type(err).__name__}: {err}") from err
        finally:
            self.last_env_s = time.perf_counter() - start
            self.env_s += self.last_env_s

    async def reset(self, env: Env, task: Any) -> Any:
        result = await self.env(env.reset, task)
        self.reset_s = self.last_env_s
        return result

    def turn(
        self, action: str, observation: str, reward: float, completion: Completion, step: StepMemory | None = None, **details: Any
    ) -> None:
        """Record one step with its own latency (the LLM time since the last step and the env
        step; no env step after a format failure; the step's retrieval, if it had one) and its completion's finish and tokens."""
        latency = {"act": self.step_act_s, "env": 0.0 if details.get("format_failure") else self.last_env_s}
        if step is not None:
            latency["retrieve"] = step.seconds
            details["retrieval"] = step.record
        usage = completion.usage
        self.logged_bytes += len(json.dumps([action, observation, completion.text]))
        self.turns.append(
            Turn(
                action=action,
                observation=observation,
                reward=reward,
                raw_output=completion.text,
                latency_s=latency,
                finish_reason=completion.finish_reason,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cache_hit=completion.cached,
                **details,
            )
        )
        self.step_act_s = 0.0
        if details.get("format_failure"):
            self.info["format_failures"] = self.info.get("format_failures", 0) + 1


@dataclass
class StepMemory:
    """One step's retrieval (retrieval_granularity=step): the block its prompt shows, what its turn logs, its seconds."""

    block: str
    record: StepRetrieval
    seconds: float

    @classmethod
    def ask(cls, job: Job, observation: str, step: int) -> StepMemory:
        start = time.perf_counter()
        found = job.step_retrieval(observation, step)  # type: ignore[misc]
        record = StepRetrieval(found.items, found.info.get("cluster"), found.candidates, len(found.prompt_block))
        return cls(found.prompt_block, record, time.perf_counter() - start)


class _LLMActor(Actor):
    llm: ChatModel

    async def play(self, job: Job, env: Env) -> Outcome:
        rec = _Recorder(self.transcripts)
        rec.info.update(format_failures=0, truncated_actions=0, trimmed_tokens=0, max_prompt_tokens=0)
        error: str | None = None
        try:
            status, success = await self._play(job, env, rec)
        except ContextOverflowError as err:
            status, success, error = "context_exceeded", False, str(err)
        except LLMError as err:
            outage = getattr(memrl_bench.llm, "LLMOutageError", None)
            if outage is not None and isinstance(err, outage):
                raise
            status, success, error = "llm_error", False, f"{type(err).__name__}: {err}"
        except _EnvFailure as err:
            status, success, error = "env_error", False, str(err)
        if self.transcripts:
            rec.info["transcript"] = rec.transcript
        return Outcome(
            success=success,
            reward=sum(turn.reward for turn in rec.turns),
            status=status,
            turns=rec.turns,
            usage=rec.usage,
            latency_s={"act": rec.act_s, "env": rec.env_s - rec.reset_s, "reset": rec.reset_s},
            error=error,
            info=rec.info,
        )

    @abstractmethod
    async def _play(self, job: Job, env: Env, rec: _Recorder) -> tuple[EpisodeStatus, bool]:
        """Play the episode into `rec`; return (status, success). LLMError / _EnvFailure end it early."""

    async def _fit(
        self, build: Callable[[int], list[dict[str, str]]], most: int, hint: int, generation: dict[str, Any]
    ) -> tuple[list[dict[str, str]], int, int]:
        """The messages `build(n)` with the largest n <= `most` history turns (trying `hint`,
        the turns kept last time plus one, first) whose prompt leaves room for the
        completion; with n and the tokens left out. Unchanged (n = most, nothing left out)
        when the model knows no context or cannot count. ContextOverflowError if n = 0 does not fit.
        """
        messages = build(most)
        budget = self.llm.prompt_budget(generation) if hasattr(self.llm, "prompt_budget") else None
        if budget is None or not hasattr(self.llm, "count_tokens"):
            return messages, most, 0
        full = tokens = (await self.llm.count_tokens(messages)).tokens
        kept = most
        if tokens > budget:
            kept = max(0, min(most - 1, hint))
            messages = build(kept)
            tokens = (await self.llm.count_tokens(messages)).tokens
            while tokens > budget and kept > 0:
                kept -= 1
                messages = build(kept)
                tokens = (await self.llm.count_tokens(messages)).tokens
        if tokens > budget:
            raise ContextOverflowError(
                f"the prompt needs {tokens} tokens without any history turn; the model's context leaves {budget} for it", Usage()
            )
        return messages, kept, full - tokens


def ended(info: dict[str, Any], episode_info: dict[str, Any] | None = None) -> tuple[EpisodeStatus, bool]:
    """(status, success) of an episode from its last step's info: an env that ended it with a
    status of its own (`env_limit`, `tampered`: Env.step) scores it as a failure. The tampering
    patterns found go into `episode_info` (the episode record's)."""
    status = info.get("status", "ok")
    if episode_info is not None and info.get("tampering"):
        episode_info["tampering"] = list(info["tampering"])
    return status, status == "ok" and bool(info.get("success", False))


def system_prompt(template: str, env: Env, memory_block: str) -> str:
    """The env's instructions, then the method's memory block (no section when empty)."""
    memory_section = f"\n\n{memory_block.strip()}" if memory_block.strip() else ""
    return prompts.render(template, instructions=env.instructions().strip(), memory_section=memory_section).strip()


# A ReAct section label at the start of a line, as models write it: "Action:", "**Action:**",
# "**Action**:", "### Action", "- Thought:". Without a colon only when nothing follows on the line.
_LABEL = r"(think|thought|thoughts|reasoning|observation|action|act)"
_EMPHASIS = r"(?:\*\*|__|\*|_)?"
_LABEL_LINE = re.compile(
    rf"^[ \t]*(?:#{{1,6}}[ \t]*|[-*>][ \t]+)?{_EMPHASIS}{_LABEL}{_EMPHASIS}[ \t]*(?::{_EMPHASIS}|{_EMPHASIS}[ \t]*$)",
    re.IGNORECASE | re.MULTILINE,
)
_INLINE_ACTION = re.compile(rf"(?<![\w-]){_EMPHASIS}act(?:ion)?{_EMPHASIS}[ \t]*:{_EMPHASIS}", re.IGNORECASE)
# The environments' own action words (LLB DB's "SQL:" / "ANSWER:" / "COMMIT", LLB OS's "answer:" / "finish").
_ENV_WORD = r"(sql|answer|final answer)[ \t]*:"
_ENV_PREFIX = re.compile(rf"^{_ENV_WORD}", re.IGNORECASE)
_ENV_PREFIX_LINE = re.compile(rf"^[ \t]*{_ENV_WORD}", re.IGNORECASE | re.MULTILINE)
_END_WORDS = ("commit", "finish")
# A model that ignores the format answers the prompt's "What is your next step?" in prose:
# "Your next step is to go to kitchen." / "... using the command `ln -s a b`."
_NEXT_STEP = re.compile(r"\bnext step (?:is|should be|would be|will be)\b[ \t]*(?:to\b)?[ \t:]*([^\n]*)", re.IGNORECASE)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_PLACEHOLDER = re.compile(r"<[^<>\n]*>")  # the format's "<exactly one action>", copied by a small model
_FENCE = re.compile(r"```(?:[ \t]*[\w+-]*[ \t]*\n)?(.*?)(?:```|\Z)", re.DOTALL)  # a language tag only on the fence's own line


@dataclass(frozen=True)
class ParsedAction:
    """What the ReAct actor reads from one completion."""

    action: str  # the action to send; without a usable one, the completion's first line (never sent)
    usable: bool  # the completion held an action: after "Action:", an env action word, a code block, or a bare command
    # Nothing follows the action in the completion (no later label line, newline or closing
    # fence): a completion cut at max_tokens may have cut the action itself.
    open_ended: bool = False


def parse_action(completion: str, multiline: bool = False) -> ParsedAction:
    """One action from a completion, as real models write it.

    The first "Action:" (also "**Action:**", "### Action", "Act:"), cut at the next
    Think: / Thought: / Observation: / Action: line; without one, the first line starting
    with an env action word (SQL:, ANSWER:), a bare COMMIT / finish line, the first code
    block; in a completion without labels, what follows "next step is (to)" (its inline
    code if it has some), or the whole of a one-line completion (a bare command). Prose
    over several lines without any of these, or the format's placeholder copied ("<exactly
    one action>"), holds no usable action. Then code fences, inline
    backticks and markdown emphasis are stripped, an env prefix is kept in front of its
    fenced content ("SQL: SELECT ..."), and a bare COMMIT / finish loses trailing
    punctuation. Single-line envs keep the first line; multi-line envs keep a fenced
    block whole, and an unfenced action up to its first blank line (prose follows it).
    """
    text = completion.replace("\r\n", "\n").strip()
    labels = list(_LABEL_LINE.finditer(text))
    actions = [m for m in labels if m.group(1).lower() in ("action", "act")]
    inline = _INLINE_ACTION.search(text)
    prefixed = _ENV_PREFIX_LINE.search(text)
    start = actions[0].end() if actions else inline.end() if inline else prefixed.start() if prefixed else None
    open_ended = False
    if start is not None:
        end = next((m.start() for m in labels if m.start() >= start), len(text))  # the next label line
        body = text[start:end]
        open_ended = end == len(text) and _runs_to_the_end(body, multiline)
    elif (end_word := _end_word_line(text)) is not None:
        body = end_word
    elif (fence := _FENCE.search(text)) is not None:
        body = fence.group(0)
        open_ended = _runs_to_the_end(body, multiline)
    elif not labels and (step := _next_step(text)) is not None:
        code = _INLINE_CODE.search(step)
        body = code.group(1) if code else step
        open_ended = text.endswith(step)
    elif not labels and "\n" not in text:
        body, open_ended = text, True
    else:
        return ParsedAction(_first_line(text), usable=False)
    action = _clean(body, multiline)
    if not action or _PLACEHOLDER.fullmatch(action):
        return ParsedAction(_first_line(text), usable=False)
    return ParsedAction(action, usable=True, open_ended=open_ended)


def _runs_to_the_end(body: str, multiline: bool) -> bool:
    """Whether the action `_clean` reads from `body` (the completion's last part) ends where
    the body ends: an unclosed code block, or (no block) no line break (single-line envs) /
    no blank line (multi-line envs) after it."""
    body = body.strip()
    unwrapped = _strip_wrapping(body)
    label = _ENV_PREFIX.match(unwrapped)
    rest = unwrapped[label.end() :].strip() if label else body
    fence = _FENCE.search(rest)
    if fence is not None and (multiline or rest.startswith("```")):
        closed = fence.end() - fence.start() >= 6 and rest[fence.end() - 3 : fence.end()] == "```"
        return not closed
    if multiline:
        return re.search(r"\n[ \t]*\n", rest) is None
    return "\n" not in rest


def _next_step(text: str) -> str | None:
    """What the first "next step is (to) ..." with something after it on its line names."""
    return next((m.group(1).strip() for m in _NEXT_STEP.finditer(text) if m.group(1).strip()), None)


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0].strip()


def _end_word_line(text: str) -> str | None:
    for line in text.splitlines():
        if _strip_wrapping(line).rstrip(".;!").lower() in _END_WORDS:
            return line
    return None


def _strip_wrapping(text: str) -> str:
    """Without surrounding whitespace, markdown emphasis, quotes or inline backticks (a pair
    around the whole text with no other such mark inside: `"a" "b"` stays as it is)."""
    previous = None
    while previous != text:
        previous, text = text, text.strip()
        for mark in ("**", "__", "`", '"', "'", "*", "_"):
            inner = text[len(mark) : -len(mark)]
            if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark) and mark not in inner:
                text = inner
    return text


def _clean(body: str, multiline: bool) -> str:
    body, prefix = body.strip(), ""
    unwrapped = _strip_wrapping(body)
    if (label := _ENV_PREFIX.match(unwrapped)) is not None:
        prefix, body = f"{label.group(1)}: ", unwrapped[label.end() :].strip()
    fence = _FENCE.search(body)
    if fence is not None and (multiline or body.startswith("```")):
        body = fence.group(1).strip("\n")
    elif multiline:
        body = re.split(r"\n[ \t]*\n", body, maxsplit=1)[0]
    if not multiline:
        body = body.split("\n", 1)[0].strip().removeprefix("> ")
    body = _strip_wrapping(body) if "\n" not in body.strip() else body.strip()
    if body.rstrip(".;!").lower() in _END_WORDS:
        body = body.rstrip(".;!")
    return f"{prefix}{body}" if body else ""


# What an episode's turns may take in its log line before the episode ends as at its step limit: a model answering
# 65,000 emoji a step (12 bytes each as the log writes them) made a 70 MB line at the largest output cap, past what the
# log's readers take, so the run could never finish, and 48 MB at the defaults (44b). Normal episodes take tens of kB.
TURNS_LOG_BUDGET = MAX_LINE_BYTES // 8


class ReActActor(_LLMActor):
    """Think / Act turns against a text environment, up to `max_steps` actions."""

    def __init__(self, llm: ChatModel, settings: ActorSettings | Mapping[str, Any] | None = None, transcripts: bool = False):
        super().__init__(llm, settings, transcripts)
        self.memrl_alfworld = MemRLAlfworldPrompt.load(self.cfg.memrl_official) if self.cfg.prompt == "memrl_alfworld" else None

    async def _play(self, job: Job, env: Env, rec: _Recorder) -> tuple[EpisodeStatus, bool]:
        first_observation, info = await rec.reset(env, job.task)
        multiline = bool(info.get("multiline_actions"))
        system = system_prompt("react_system", env, job.retrieval.prompt_block)
        conversation = self.memrl_alfworld.start(job.task, first_observation, job.retrieval.prompt_block) if self.memrl_alfworld else None
        rec.info.update(invalid_actions=0, normalised_actions=0, fuzzy_matched_actions=0)
        generation = {**({"stop": self.cfg.stop_sequences} if self.cfg.stop_sequences else {}), **self.generation}
        kept = 0  # history turns the last prompt showed
        step: StepMemory | None = None
        for index in range(self.cfg.max_steps):
            if rec.logged_bytes > TURNS_LOG_BUDGET:  # the turns so far fill the episode's room in the log
                rec.info["log_budget_reached"] = True
                break
            if job.step_retrieval is not None and index > 0:  # this step's memories, by its observation, in place of the episode's
                step = StepMemory.ask(job, rec.turns[-1].observation, index)
                system = system_prompt("react_system", env, step.block)
            if conversation is not None:  # the official conversation shows every turn
                most, build = len(conversation.turns), conversation.messages_with
            else:
                most = min(self.cfg.history_turns, len(rec.turns))
                build = partial(self._messages, system, job.task, first_observation, rec.turns, info)
            messages, kept, trimmed = await self._fit(build, most, kept + 1, generation)
            rec.info["trimmed_tokens"] += trimmed
            completion = await rec.chat(self.llm, messages, job.sample_index, generation, trimmed)
            parsed = parse_action(completion.text, multiline)
            cut = completion.finish_reason == "length" and (parsed.open_ended or not parsed.usable)  # cut before its action ended
            failure = "truncated" if cut else None if parsed.usable else "no_action"
            if failure is not None:  # nothing runs: the model is told why instead
                rec.info["truncated_actions"] += failure == "truncated"
                notice = prompts.render("format_failure" if failure == "no_action" else "truncated_action").strip()
                rec.turn(parsed.action, notice, 0.0, completion, step, format_failure=failure)
                if conversation is not None:
                    conversation.add(completion.text, notice)
                continue
            action, rewrite, unmatched = parsed.action, None, False
            commands = info.get("admissible_commands")
            if commands:
                match = match_action(action, list(commands), self.cfg.fuzzy_cutoff, self.cfg.fuzzy_margin)
                unmatched = match.command is None  # sent as written: the env answers that nothing happens
                if match.command is not None and match.command != action:
                    rewrite = {"raw": action, "executed": match.command, "score": round(match.score, 4), "kind": match.kind}
                    rec.info[f"{'fuzzy_matched' if match.kind == 'fuzzy' else 'normalised'}_actions"] += 1
                action = match.command or action
            observation, reward, done, info = await rec.env(env.step, action)
            rec.info["invalid_actions"] += bool(unmatched or info.get("invalid_action"))
            rec.turn(action, observation, float(reward), completion, step, rewrite=rewrite)
            if conversation is not None:
                conversation.add(completion.text, observation)
            if done:
                return ended(info, rec.info)
        verdict = await rec.env(env.judge_at_step_limit)
        if verdict is None:
            return "step_limit", False
        rec.info["judged_at_step_limit"] = True
        status, success = ended(verdict, rec.info)
        return ("step_limit" if status == "ok" else status), success

    def _messages(
        self, system: str, task: Task, first_observation: str, turns: list[Turn], info: dict[str, Any], shown: int
    ) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": self._user_prompt(task, first_observation, turns, info, shown)},
        ]

    def _user_prompt(self, task: Task, first_observation: str, turns: list[Turn], info: dict[str, Any], shown: int) -> str:
        """The task, the first observation, the last `shown` turns and the admissible commands."""
        recent = turns[len(turns) - shown :] if shown > 0 else []
        lines = [f"({len(turns) - len(recent)} earlier steps not shown)"] if len(recent) < len(turns) else []
        for turn in recent:
            lines += [f"> {turn.action}", turn.observation]
        history = "\n" + "\n".join(lines) + "\n" if lines else ""
        commands = info.get("admissible_commands")
        admissible = f"\nAdmissible actions: {', '.join(commands)}\n" if commands and self.cfg.show_admissible else ""
        return prompts.render(
            "react_user", task=task.description, first_observation=first_observation.strip(), history=history, admissible=admissible
        )


class SingleTurnActor(_LLMActor):
    """One question, one completion, one checked answer (multiple choice, code, ...)."""

    async def _play(self, job: Job, env: Env, rec: _Recorder) -> tuple[EpisodeStatus, bool]:
        question, info = await rec.reset(env, job.task)
        if "answer_key" in info:  # a multiple-choice key, for the report's chance and answer-letter references
            rec.info["answer_key"] = info["answer_key"]
        messages = [
            {"role": "system", "content": system_prompt("single_turn", env, job.retrieval.prompt_block)},
            {"role": "user", "content": question},
        ]
        messages, _, _ = await self._fit(lambda _: messages, 0, 0, self.generation)  # nothing to trim: fits or context_exceeded
        completion = await rec.chat(self.llm, messages, job.sample_index, self.generation)
        reading = read_answer(
            completion.text,
            info.get("answer_format", "text"),
            finished=completion.finish_reason != "length",
            letters=info.get("answer_letters", "ABCD"),
            choices=info.get("answer_choices"),
            question=info.get("answer_question", ""),
        )
        rec.info["answer_rule"] = reading.rule
        if self.cfg.answer_constraint == "json_schema" and info.get("answer_format") == "letter":
            # The free completion stays in the transcript; what the reader took from it, for the report's comparison.
            rec.info.update(free_answer=reading.answer, free_answer_rule=reading.rule)
            messages = [
                *messages,
                {"role": "assistant", "content": completion.text},
                {"role": "user", "content": prompts.load("constrained_answer").strip()},
            ]
            completion = await rec.chat(
                self.llm,
                messages,
                job.sample_index,
                {**self.generation, "max_tokens": 32, "response_format": letter_schema(info.get("answer_letters", "ABCD"))},
            )
            reading = read_constrained(completion.text, info.get("answer_letters", "ABCD"))
            rec.info["answer_rule"] = reading.rule
        if reading.answer is None:
            if reading.cut:
                rec.info["truncated_actions"] += 1
            rec.turn("", "", 0.0, completion, format_failure="truncated" if reading.cut else "no_action")
            return ("truncated" if reading.cut else "parse_error"), False
        observation, reward, _done, info = await rec.env(env.step, reading.answer)
        rec.turn(reading.answer, observation, float(reward), completion)
        rec.info["answer"] = reading.answer
        return ended(info, rec.info)
