"""The LLM actors: multi-turn ReAct for text environments, single-turn for answer-checked tasks.

Both code against the ChatModel protocol (anything with `async chat(messages, ...)`),
call the env in a worker thread so the other episodes of a batch keep their LLM
requests in flight, and never raise for an LLM or env failure: the episode ends with
status "llm_error" / "env_error" and the message (a whole-server outage is re-raised
so the runner can stop the run).
"""

from __future__ import annotations

import asyncio
import difflib
import re
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import memrl_bench.llm
from memrl_bench import prompts
from memrl_bench.actors import Actor, Job
from memrl_bench.config import ActorSettings
from memrl_bench.envs.base import Env
from memrl_bench.llm import ChatModel, Completion, LLMError
from memrl_bench.memrl_alfworld import MemRLAlfworldPrompt
from memrl_bench.types import EpisodeStatus, Outcome, Task, Turn, Usage


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

    async def chat(self, llm: ChatModel, messages: list[dict[str, str]], sample_index: int, generation: dict[str, Any]) -> Completion:
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
        if self.keep_transcript:
            self.transcript.append({"messages": messages, "completion": completion.text})
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

    def turn(self, action: str, observation: str, reward: float, raw_output: str | None) -> None:
        """Record one step with its own latency: the LLM time since the last step and the env step."""
        latency = {"act": self.step_act_s, "env": self.last_env_s}
        self.turns.append(Turn(action=action, observation=observation, reward=reward, raw_output=raw_output, latency_s=latency))
        self.step_act_s = 0.0


class _LLMActor(Actor):
    llm: ChatModel

    async def play(self, job: Job, env: Env) -> Outcome:
        rec = _Recorder(self.transcripts)
        error: str | None = None
        try:
            status, success = await self._play(job, env, rec)
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


def system_prompt(template: str, env: Env, memory_block: str) -> str:
    """The env's instructions, then the method's memory block (no section when empty)."""
    memory_section = f"\n\n{memory_block.strip()}" if memory_block.strip() else ""
    return prompts.render(template, instructions=env.instructions().strip(), memory_section=memory_section).strip()


# A ReAct section label at the start of a line, as models write it: "Action:", "**Action:**",
# "**Action**:", "### Action", "- Thought:". Without a colon only when nothing follows on the line.
_LABEL = r"(think|thought|thoughts|reasoning|observation|action|act)"
_EMPHASIS = r"(?:\*\*|__|\*|_)?"
_LABEL_LINE = re.compile(rf"^[ \t]*(?:#{{1,6}}[ \t]*|[-*>][ \t]+)?{_EMPHASIS}{_LABEL}{_EMPHASIS}[ \t]*(?::{_EMPHASIS}|{_EMPHASIS}[ \t]*$)", re.IGNORECASE | re.MULTILINE)
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

    action: str  # the action to send; without a usable one, the completion's first line (sent as written)
    usable: bool  # the completion held an action: after "Action:", an env action word, a code block, or a bare command


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
    if start is not None:
        end = next((m.start() for m in labels if m.start() >= start), len(text))  # the next label line
        body = text[start:end]
    elif (end_word := _end_word_line(text)) is not None:
        body = end_word
    elif (fence := _FENCE.search(text)) is not None:
        body = fence.group(0)
    elif not labels and (step := _next_step(text)) is not None:
        code = _INLINE_CODE.search(step)
        body = code.group(1) if code else step
    elif not labels and "\n" not in text:
        body = text
    else:
        return ParsedAction(_first_line(text), usable=False)
    action = _clean(body, multiline)
    if not action or _PLACEHOLDER.fullmatch(action):
        return ParsedAction(_first_line(text), usable=False)
    return ParsedAction(action, usable=True)


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


def _normalise(command: str) -> str:
    return " ".join(command.lower().split())


def match_action(action: str, commands: list[str], cutoff: float) -> str | None:
    """The admissible command meant by `action`: exact, then case-insensitive, then closest."""
    if action in commands:
        return action
    by_lower: dict[str, str] = {}
    for command in commands:
        by_lower.setdefault(command.lower(), command)
    wanted = _normalise(action)
    if wanted in by_lower:
        return by_lower[wanted]
    closest = difflib.get_close_matches(wanted, list(by_lower), n=1, cutoff=cutoff)
    return by_lower[closest[0]] if closest else None


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
        rec.info.update(invalid_actions=0, fuzzy_matched_actions=0, format_failures=0)
        generation = {**({"stop": self.cfg.stop_sequences} if self.cfg.stop_sequences else {}), **self.generation}
        for _ in range(self.cfg.max_steps):
            messages = conversation.messages if conversation else [
                {"role": "system", "content": system},
                {"role": "user", "content": self._user_prompt(job.task, first_observation, rec.turns, info)},
            ]
            completion = await rec.chat(self.llm, messages, job.sample_index, generation)
            parsed = parse_action(completion.text, multiline)
            action = parsed.action
            if not parsed.usable:
                rec.info["format_failures"] += 1
            commands = info.get("admissible_commands")
            if commands:
                matched = match_action(action, list(commands), self.cfg.fuzzy_cutoff)
                if matched is None:
                    # Sent as written: the env answers that nothing happens, as it would to a person.
                    rec.info["invalid_actions"] += 1
                elif matched.lower() != _normalise(action):
                    rec.info["fuzzy_matched_actions"] += 1
                action = matched or action
            observation, reward, done, info = await rec.env(env.step, action)
            rec.turn(action, observation, float(reward), completion.text)
            if conversation:
                conversation.add(completion.text, observation)
            if done:
                return "ok", bool(info.get("success", False))
        return "step_limit", False

    def _user_prompt(self, task: Task, first_observation: str, turns: list[Turn], info: dict[str, Any]) -> str:
        shown = turns[-self.cfg.history_turns :] if self.cfg.history_turns > 0 else []
        lines = [f"({len(turns) - len(shown)} earlier steps not shown)"] if len(shown) < len(turns) else []
        for turn in shown:
            lines += [f"> {turn.action}", turn.observation]
        history = "\n" + "\n".join(lines) + "\n" if lines else ""
        commands = info.get("admissible_commands")
        admissible = f"\nAdmissible actions: {', '.join(commands)}\n" if commands and self.cfg.show_admissible else ""
        return prompts.render("react_user", task=task.description, first_observation=first_observation.strip(), history=history, admissible=admissible)


_FENCED_CODE = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_answer(completion: str, answer_format: str, letters: str = "ABCD") -> str | None:
    """The answer the env checks, taken from a completion; None if there is none.

    "letter": the first standalone choice letter after the last "Answer:" / "answer is",
    else the first one anywhere outside lines that list the choices ("B. 1") and other than
    the article "A" ("A field is ..."); "code": the first fenced code block, else the whole
    text; "text": the whole text.
    """
    if answer_format == "letter":
        standalone_letter = rf"(?<![A-Za-z])[{re.escape(letters)}](?![A-Za-z])"
        marks = list(re.finditer(r"\banswer\s*(?::|is\b)", completion, re.IGNORECASE))
        if marks:
            after = re.search(standalone_letter, completion[marks[-1].end() :], re.IGNORECASE)
            if after:
                return after.group(0).upper()
        choice_line = re.compile(rf"\s*\(?[{re.escape(letters)}][.)]\s")
        prose = "\n".join(line for line in completion.splitlines() if not choice_line.match(line))
        for found in re.finditer(standalone_letter, prose):
            if not (found.group(0) == "A" and re.match(r" [a-z]", prose[found.end() :])):
                return found.group(0)
        return None
    if answer_format == "code":
        block = _FENCED_CODE.search(completion)
        return (block.group(1) if block else completion).strip("\n")
    if answer_format == "text":
        return completion.strip()
    raise ValueError(f"unknown answer_format {answer_format!r} in the env's reset info; valid: letter, code, text")


class SingleTurnActor(_LLMActor):
    """One question, one completion, one checked answer (multiple choice, code, ...)."""

    async def _play(self, job: Job, env: Env, rec: _Recorder) -> tuple[EpisodeStatus, bool]:
        question, info = await rec.reset(env, job.task)
        messages = [
            {"role": "system", "content": system_prompt("single_turn", env, job.retrieval.prompt_block)},
            {"role": "user", "content": question},
        ]
        completion = await rec.chat(self.llm, messages, job.sample_index, self.generation)
        answer = extract_answer(completion.text, info.get("answer_format", "text"), info.get("answer_letters", "ABCD"))
        if answer is None:
            rec.turns.append(Turn(action="", observation="", raw_output=completion.text))
            return "parse_error", False
        observation, reward, _done, info = await rec.env(env.step, answer)
        rec.turn(answer, observation, float(reward), completion.text)
        return "ok", bool(info.get("success", False))
