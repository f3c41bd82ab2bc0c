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


_ACTION_MARK = re.compile(r"action\s*:", re.IGNORECASE)
_INVENTED_OBSERVATION = re.compile(r"\n\s*observation\s*:", re.IGNORECASE)


def parse_action(completion: str, multiline: bool = False) -> str:
    """The text after the last "Action:" (the whole completion if there is none).

    A model that goes on to invent the env's reply is cut at its first "Observation:".
    Only the first line is kept unless the env takes multi-line actions.
    """
    text = _INVENTED_OBSERVATION.split(completion, maxsplit=1)[0]
    marks = list(_ACTION_MARK.finditer(text))
    action = (text[marks[-1].end() :] if marks else text).strip()
    if not multiline:
        action = action.split("\n", 1)[0].strip()
        action = action.strip("`\"'").strip()
    return action


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
        rec.info.update(invalid_actions=0, fuzzy_matched_actions=0)
        for _ in range(self.cfg.max_steps):
            messages = conversation.messages if conversation else [
                {"role": "system", "content": system},
                {"role": "user", "content": self._user_prompt(job.task, first_observation, rec.turns, info)},
            ]
            completion = await rec.chat(self.llm, messages, job.sample_index, self.generation)
            action = parse_action(completion.text, multiline)
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

    "letter": the first standalone choice letter after the last "Answer:", else anywhere;
    "code": the first fenced code block, else the whole text; "text": the whole text.
    """
    if answer_format == "letter":
        standalone_letter = rf"(?<![A-Za-z])[{re.escape(letters)}](?![A-Za-z])"
        marks = list(re.finditer(r"answer\s*:", completion, re.IGNORECASE))
        if marks:
            after = re.search(standalone_letter, completion[marks[-1].end() :], re.IGNORECASE)
            if after:
                return after.group(0).upper()
        anywhere = re.search(standalone_letter, completion)
        return anywhere.group(0) if anywhere else None
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
