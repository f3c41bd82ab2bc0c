"""The LLM actors' parsing and control flow, driven by a scripted chat model and tiny in-test envs.

The integration test against the real local llama.cpp model lives with the LLM client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memrl_bench.llm
from memrl_bench import CONF_DIR
from memrl_bench.actors.base import ActorSettings, EnvPool, Job
from memrl_bench.actors.llm_actors import ReActActor, SingleTurnActor, parse_action
from memrl_bench.core import registry
from memrl_bench.core.answers import read_answer
from memrl_bench.core.config import ConfigError
from memrl_bench.core.registry import UnknownNameError
from memrl_bench.core.schema import Outcome, Retrieval, Task, Usage
from memrl_bench.envs.base import Env
from memrl_bench.envs.checker import check_env
from memrl_bench.llm import Completion, LLMError
from tests.helpers import composed

MEMORY_BLOCK = "Relevant experience:\n- The apple is usually in the kitchen."


class ScriptedChat:
    """A ChatModel that answers from a script: a list of replies (the last repeats) or a function of the messages."""

    identity = {"name": "scripted"}

    def __init__(self, script: list[str | Exception] | Callable[[list[dict[str, str]]], str], delay_s: float = 0.0):
        self.script = script
        self.delay_s = delay_s
        self.calls: list[dict[str, Any]] = []

    async def chat(self, messages: list[dict[str, str]], *, sample_index: int = 0, **overrides: Any) -> Completion:
        self.calls.append({"messages": messages, "sample_index": sample_index, "overrides": overrides})
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if callable(self.script):
            reply: str | Exception = self.script(messages)
        else:
            reply = self.script[min(len(self.calls), len(self.script)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return Completion(text=reply, usage=Usage(calls=1, prompt_tokens=100, completion_tokens=10, latency_s=0.01))


class RoomsEnv(Env):
    """Three rooms (hall, kitchen, garden): carry the apple from the kitchen to the basket in the garden."""

    name = "rooms"
    ROOMS = ("hall", "kitchen", "garden")

    def splits(self) -> dict[str, str]:
        return {"train": "two fixed tasks"}

    def tasks(self, split: str) -> list[Task]:
        return [Task(id=f"rooms-{i}", split=split, description="put the apple in the basket") for i in range(2)]

    def instructions(self) -> str:
        return "You are in a small house with a hall, a kitchen and a garden."

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.room, self.apple, self.steps = "hall", "kitchen", 0
        self.fail_at_step = task.data.get("fail_at_step")
        return "You are in the hall. Doors lead to the kitchen and the garden.", {"admissible_commands": self._commands()}

    def _commands(self) -> list[str]:
        commands = [f"go to {room}" for room in self.ROOMS if room != self.room] + ["look", "inventory"]
        if self.apple == self.room:
            commands.append("take apple")
        if self.apple == "carried" and self.room == "garden":
            commands.append("put apple in basket")
        return commands

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        self.steps += 1
        if self.steps == self.fail_at_step:
            raise RuntimeError("the house collapsed")
        done = False
        if action not in self._commands():
            observation = "Nothing happens."
        elif action.startswith("go to "):
            self.room = action.removeprefix("go to ")
            observation = f"You are in the {self.room}."
        elif action == "take apple":
            self.apple = "carried"
            observation = "You take the apple."
        elif action == "put apple in basket":
            self.apple, done = "basket", True
            observation = "You put the apple in the basket."
        else:
            observation = f"You are in the {self.room}."
        return observation, float(done), done, {"admissible_commands": self._commands(), "success": done}


class QuestionEnv(Env):
    """One question per task; the answer is checked by `task.data["check"]`."""

    name = "questions"
    default_actor = "single_turn"

    def splits(self) -> dict[str, str]:
        return {"test": "in-test questions"}

    def tasks(self, split: str) -> list[Task]:
        return []

    def instructions(self) -> str:
        return "Answer the question."

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.task = task
        self.received: str | None = None
        return task.description, {"answer_format": task.data["format"]}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        self.received = action
        success = bool(self.task.data["check"](action))
        return ("correct" if success else "wrong"), float(success), True, {"success": success}


SOLUTION = [
    "Think: the apple is in the kitchen.\nAction: go to kitchen",
    "Action: take apple",
    "Action: go to garden",
    "Action: put apple in basket",
]


def job(task_id: str = "rooms-0", block: str = "", sample_index: int = 0, **data: Any) -> Job:
    task = Task(id=task_id, split="train", description="put the apple in the basket", data=data)
    return Job(task=task, retrieval=Retrieval(prompt_block=block), episode_id=f"ep-{task_id}-{sample_index}", sample_index=sample_index)


def play(actor: ReActActor | SingleTurnActor, the_job: Job, env: Env | None = None) -> Outcome:
    return asyncio.run(actor.play(the_job, env or RoomsEnv({})))


def test_rooms_env_passes_the_env_checker() -> None:
    check_env(RoomsEnv({}))


def test_react_solves_with_exact_actions() -> None:
    llm = ScriptedChat(SOLUTION)
    outcome = play(ReActActor(llm, {"generation": {"temperature": 0.0}}), job(sample_index=3))
    assert (outcome.status, outcome.success, outcome.reward) == ("ok", True, 1.0)
    assert [t.action for t in outcome.turns] == ["go to kitchen", "take apple", "go to garden", "put apple in basket"]
    assert outcome.turns[0].raw_output == SOLUTION[0] and outcome.turns[-1].observation == "You put the apple in the basket."
    assert outcome.info["invalid_actions"] == 0 and outcome.info["fuzzy_matched_actions"] == 0
    assert (outcome.usage.calls, outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (4, 400, 40)
    assert set(outcome.latency_s) == {"act", "env", "reset"} and outcome.latency_s["act"] > 0 and outcome.latency_s["env"] > 0
    assert all(set(t.latency_s) == {"act", "env"} and t.latency_s["act"] > 0 for t in outcome.turns)  # per step
    assert sum(t.latency_s["env"] for t in outcome.turns) == pytest.approx(outcome.latency_s["env"])
    assert {c["sample_index"] for c in llm.calls} == {3}
    assert all(c["overrides"] == {"temperature": 0.0, "stop": ["\nObservation:"]} for c in llm.calls)
    assert "transcript" not in outcome.info


def test_react_normalised_and_fuzzy_matching_are_logged_and_invalid_actions_counted() -> None:
    llm = ScriptedChat(
        [
            "Action: GO TO KITCHEN",
            "Action: take the apple",
            "Action: dance wildly",
            "Action: Go to the garden.",
            "Action: put the apple into basket",
        ]
    )
    env = RoomsEnv({})
    sent: list[str] = []
    step = env.step
    env.step = lambda action: (sent.append(action), step(action))[1]  # type: ignore[method-assign]
    outcome = play(ReActActor(llm), job(), env)  # the default cutoff, 0.75
    assert sent == ["go to kitchen", "take apple", "dance wildly", "go to garden", "put apple in basket"]
    assert outcome.turns[2].observation == "Nothing happens." and outcome.turns[2].rewrite is None
    assert outcome.info["invalid_actions"] == 1
    assert (outcome.info["normalised_actions"], outcome.info["fuzzy_matched_actions"]) == (3, 1)
    assert outcome.turns[0].rewrite == {"raw": "GO TO KITCHEN", "executed": "go to kitchen", "score": 1.0, "kind": "normalised"}
    fuzzy = outcome.turns[4].rewrite
    assert (fuzzy["raw"], fuzzy["executed"], fuzzy["kind"]) == (
        "put the apple into basket",
        "put apple in basket",
        "fuzzy",
    ) and 0.75 <= fuzzy["score"] < 1
    assert outcome.success


def test_parse_action() -> None:
    def action(completion: str, multiline: bool = False) -> str:
        return parse_action(completion, multiline).action

    assert action("Think: hmm.\nAction: go to kitchen\nThink: better.\nAction: look") == "go to kitchen"  # the first action
    assert action("Action: go to kitchen\nObservation: You are in the kitchen.\nAction: take apple") == "go to kitchen"
    assert action("go to kitchen\nbecause it is close") == "go to kitchen"
    assert action("Think: x\nACTION:  `look` ") == "look"
    assert action("Action:\nSELECT *\nFROM t;", multiline=True) == "SELECT *\nFROM t;"
    assert action("Action:\nSELECT *\nFROM t;") == "SELECT *"
    assert not parse_action("Think: no idea yet.").usable


def test_react_step_limit() -> None:
    outcome = play(ReActActor(ScriptedChat(["Think: wait.\nAction: look"]), {"max_steps": 3}), job())
    assert (outcome.status, outcome.success, len(outcome.turns)) == ("step_limit", False, 3)


def test_react_ends_an_episode_whose_turns_would_outgrow_its_log_line(monkeypatch) -> None:
    """44b: a model answering 65,000 emoji a step (12 bytes each in the log) made a 70 MB line at the largest output cap,
    past what the log's readers take, so the run stopped for good; 48 MB at the defaults. The episode now ends as at its
    step limit once its turns pass their budget (here 64 kB: the second turn of ~48 kB passes it)."""
    from memrl_bench.actors import llm_actors

    monkeypatch.setattr(llm_actors, "TURNS_LOG_BUDGET", 1 << 16)
    long = "Think: " + "\U0001f600" * 4000 + "\nAction: look"
    outcome = play(ReActActor(ScriptedChat([long]), {"max_steps": 30}), job())
    assert (outcome.status, outcome.success, len(outcome.turns)) == ("step_limit", False, 2) and outcome.info["log_budget_reached"]
    short = play(ReActActor(ScriptedChat(["Think: wait.\nAction: look"]), {"max_steps": 30}), job())
    assert len(short.turns) == 30 and "log_budget_reached" not in short.info  # a normal episode is far from it


def test_react_llm_error_ends_the_episode_without_raising() -> None:
    llm = ScriptedChat([SOLUTION[0], LLMError("server returned 500 three times")])
    outcome = play(ReActActor(llm), job())
    assert (outcome.status, outcome.success, len(outcome.turns)) == ("llm_error", False, 1)
    assert "server returned 500" in (outcome.error or "")
    assert outcome.usage.calls == 2 and outcome.usage.failures == 1  # the failed call counts too


def test_react_reraises_an_outage(monkeypatch: pytest.MonkeyPatch) -> None:
    class LLMOutageError(LLMError):
        pass

    monkeypatch.setattr(memrl_bench.llm, "LLMOutageError", LLMOutageError, raising=False)
    with pytest.raises(LLMOutageError):
        play(ReActActor(ScriptedChat([LLMOutageError("server is gone")])), job())


def test_react_env_error_is_recorded() -> None:
    outcome = play(ReActActor(ScriptedChat(SOLUTION)), job(fail_at_step=2))
    assert (outcome.status, outcome.success, len(outcome.turns)) == ("env_error", False, 1)
    assert outcome.error == "RuntimeError: the house collapsed"


def test_memory_block_only_in_the_system_prompt_and_only_when_non_empty() -> None:
    without, with_memory = ScriptedChat(SOLUTION), ScriptedChat(SOLUTION)
    play(ReActActor(without), job(block="   "))
    play(ReActActor(with_memory), job(block=MEMORY_BLOCK))
    plain_system, memory_system = without.calls[0]["messages"][0]["content"], with_memory.calls[0]["messages"][0]["content"]
    assert plain_system.startswith(RoomsEnv({}).instructions()) and "Action: <" in plain_system
    assert MEMORY_BLOCK in memory_system and "experience" not in plain_system.lower()
    assert memory_system.replace("\n\n" + MEMORY_BLOCK, "") == plain_system
    assert all(MEMORY_BLOCK not in c["messages"][1]["content"] for c in with_memory.calls)


def test_history_is_truncated_to_the_last_turns() -> None:
    llm = ScriptedChat(["Action: go to kitchen", "Action: go to hall", "Action: go to garden", "Action: go to hall", "Action: look"])
    play(ReActActor(llm, {"max_steps": 5, "history_turns": 2}), job())
    first, last = llm.calls[0]["messages"][1]["content"], llm.calls[4]["messages"][1]["content"]
    assert "You are in the hall. Doors lead" in first and ">" not in first
    assert "Task: put the apple in the basket" in last and "You are in the hall. Doors lead" in last  # first observation kept
    assert "(2 earlier steps not shown)" in last
    assert "> go to garden\nYou are in the garden." in last and "> go to hall\nYou are in the hall." in last
    assert "> go to kitchen" not in last
    assert "Admissible actions: go to kitchen, go to garden, look, inventory" in last


def test_transcripts_are_kept_on_request() -> None:
    outcome = play(ReActActor(ScriptedChat(SOLUTION), transcripts=True), job())
    transcript = outcome.info["transcript"]
    assert [t["completion"] for t in transcript] == SOLUTION
    assert transcript[0]["messages"][0]["role"] == "system" and transcript[0]["messages"][1]["role"] == "user"


def test_read_answer_formats() -> None:
    def letter(text: str, **kw) -> str | None:
        return read_answer(text, "letter", **kw).answer

    assert letter("The capital is B? No. Answer: (C)") == "C"  # the final stated answer wins
    assert letter("I would pick B, not C.") == "B"
    assert letter("I cannot tell.") is None
    assert letter("Answer: G", letters="ABCDEFGHIJ") == "G"
    code = "Here it is:\n```python\ndef add(a, b):\n    return a + b\n```\nand a test:\n```python\nassert add(1, 2) == 3\n```"
    assert read_answer(code, "code").answer == "def add(a, b):\n    return a + b"
    assert read_answer("```\nx = 1\n", "code").answer == "x = 1"  # unterminated, but the completion ended there
    cut = read_answer("```\nx = 1\n", "code", finished=False)
    assert cut.answer is None and cut.cut  # cut at max_tokens inside its block
    assert read_answer("x = 1", "code").answer == "x = 1"
    assert read_answer("  42 ", "text").answer == "42" and read_answer("42", "text", finished=False).cut
    with pytest.raises(ValueError, match="answer_format 'essay'"):
        read_answer("text", "essay")


def _add_passes(code: str) -> bool:
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # noqa: S102 (the in-test "sandbox" runs only the scripted completion)
    return namespace["add"](2, 3) == 5


@pytest.mark.parametrize(
    ("fmt", "completion", "check", "expected_answer"),
    [
        ("letter", "Paris is the capital of France.\nAnswer: B", lambda a: a == "B", "B"),
        ("code", "```python\ndef add(a, b):\n    return a + b\n```", _add_passes, "def add(a, b):\n    return a + b"),
    ],
)
def test_single_turn_plays_one_checked_answer(fmt: str, completion: str, check: Callable[[str], bool], expected_answer: str) -> None:
    env = QuestionEnv({})
    llm = ScriptedChat([completion])
    task_job = job(block=MEMORY_BLOCK, format=fmt, check=check)
    outcome = play(SingleTurnActor(llm), task_job, env)
    assert (outcome.status, outcome.success, outcome.reward) == ("ok", True, 1.0)
    assert env.received == expected_answer and outcome.turns[0].action == expected_answer
    system, user = llm.calls[0]["messages"]
    assert system["content"].startswith("Answer the question.") and MEMORY_BLOCK in system["content"]
    assert user == {"role": "user", "content": task_job.task.description}


def test_single_turn_without_a_letter_is_a_parse_error() -> None:
    env = QuestionEnv({})
    outcome = play(SingleTurnActor(ScriptedChat(["I do not know."])), job(format="letter", check=lambda a: True), env)
    assert (outcome.status, outcome.success) == ("parse_error", False)
    assert env.received is None and outcome.turns[0].raw_output == "I do not know."


def test_play_batch_runs_episodes_concurrently() -> None:
    delay_s, jobs = 0.2, [job(f"rooms-{i}") for i in range(8)]
    llm = ScriptedChat(lambda messages: SOLUTION[sum(">" in line[:1] for line in messages[1]["content"].splitlines())], delay_s=delay_s)
    pool = EnvPool(RoomsEnv({}), size=4)
    actor = ReActActor(llm)

    async def run() -> list[Outcome]:
        return await actor.play_batch(jobs, pool)

    start = time.perf_counter()
    outcomes = asyncio.run(run())
    elapsed = time.perf_counter() - start
    serial_s = len(llm.calls) * delay_s
    assert len(llm.calls) == 8 * len(SOLUTION) and all(o.success for o in outcomes)
    assert len(pool._all) == 4
    assert elapsed < 0.6 * serial_s, f"batch took {elapsed:.2f} s, serial would take {serial_s:.2f} s"


def test_actors_by_name_and_config_errors() -> None:
    llm = ScriptedChat(SOLUTION)
    assert isinstance(registry.get("actor", "react")(llm, {"kind": "react", "max_steps": 5}), ReActActor)
    assert isinstance(registry.get("actor", "single_turn")(llm, {}), SingleTurnActor)
    assert registry.names("actor") == ["react", "single_turn", "synthetic"]
    with pytest.raises(UnknownNameError, match="valid actors: react, single_turn, synthetic"):
        registry.get("actor", "reflexion")
    with pytest.raises(ConfigError, match="actor.max_step: Extra inputs are not permitted"):
        ReActActor(llm, {"max_step": 5})
    with pytest.raises(ConfigError, match="actor.max_steps: Input should be greater than or equal to 1"):
        ReActActor(llm, {"max_steps": 0})
    # One actor config serves whichever actor the env asks for: react's keys do not bother single_turn.
    actor = SingleTurnActor(llm, {"max_steps": 30, "history_turns": 10}, transcripts=True)
    assert actor.transcripts and actor.cfg.max_steps == 30


@pytest.mark.parametrize("path", sorted((Path(CONF_DIR) / "actor").glob("*.yaml")), ids=lambda p: p.stem)
def test_actor_config_files_build_their_actors(path: Path) -> None:
    cfg = composed(f"actor={path.stem}")["actor"]  # the YAML over the settings it starts from
    for kind in [cfg["kind"]] if cfg.get("kind") else ["react", "single_turn"]:  # kind null: the env's choice
        actor_cls = registry.get("actor", kind)
        assert isinstance(actor_cls(ScriptedChat(SOLUTION), cfg), actor_cls)


def test_react_sends_its_stop_sequences_unless_told_otherwise() -> None:
    default, own, none = ScriptedChat(SOLUTION), ScriptedChat(SOLUTION), ScriptedChat(SOLUTION)
    play(ReActActor(default), job())
    play(ReActActor(own, {"generation": {"stop": ["\nTask:"]}}), job())
    play(ReActActor(none, {"stop_sequences": None}), job())
    assert default.calls[0]["overrides"] == {"stop": ActorSettings().stop_sequences} == {"stop": ["\nObservation:"]}
    assert own.calls[0]["overrides"] == {"stop": ["\nTask:"]}  # generation.stop wins
    assert none.calls[0]["overrides"] == {}  # nothing sent: the llm config's own `stop` applies


def test_a_think_without_an_action_is_never_sent_to_the_env() -> None:
    llm = ScriptedChat(["Think: where is the apple?", *SOLUTION])
    env = RoomsEnv({})
    sent: list[str] = []
    step = env.step
    env.step = lambda action: (sent.append(action), step(action))[1]  # type: ignore[method-assign]
    outcome = play(ReActActor(llm), job(), env)
    assert outcome.success and outcome.info["format_failures"] == 1 and outcome.info["invalid_actions"] == 0
    assert sent == ["go to kitchen", "take apple", "go to garden", "put apple in basket"]
    first = outcome.turns[0]
    assert (first.action, first.format_failure, first.latency_s["env"]) == ("Think: where is the apple?", "no_action", 0.0)
    assert first.observation.startswith("(Nothing was done: your reply held no action")
    assert first.observation in llm.calls[1]["messages"][1]["content"]  # the model reads why


def test_fuzzy_matching_never_moves_the_agent_to_another_receptacle() -> None:
    from memrl_bench.actors.matching import match_action

    here = ["go to bed 1", "go to safe 1", "go to drawer 1", "look", "inventory"]
    # difflib ranks both pairs at 0.78, above the cutoff: the old matcher ran them as the other receptacle.
    assert match_action("go to desk 1", here, 0.75, 0.1).command is None
    assert match_action("go to bed 1", ["go to safe 1", "go to desk 1"], 0.75, 0.1).command is None
    assert match_action("Go to the bed 1.", here, 0.75, 0.1).kind == "normalised"
    fills_in = match_action("take mug from countertop 1", ["take mug 1 from countertop 1", "go to bed 1"], 0.75, 0.1)
    assert (fills_in.command, fills_in.kind) == ("take mug 1 from countertop 1", "fuzzy")
    two_mugs = ["take mug 1 from countertop 1", "take mug 2 from countertop 1"]
    assert match_action("take mug from countertop 1", two_mugs, 0.75, 0.1).command is None  # ambiguous


def test_a_truncated_action_is_not_executed_and_the_model_is_told() -> None:
    from tests.scripted_llm import ScriptedChatModel

    llm = ScriptedChatModel(["Think: the kitchen first.\nAction: go to kit"] * 2, finish_reason="length")
    env = RoomsEnv({})
    sent: list[str] = []
    step = env.step
    env.step = lambda action: (sent.append(action), step(action))[1]  # type: ignore[method-assign]
    outcome = play(ReActActor(llm, {"max_steps": 2}), job(), env)
    assert sent == [] and outcome.status == "step_limit"
    assert outcome.info["truncated_actions"] == 2 and outcome.info["format_failures"] == 2
    assert [t.format_failure for t in outcome.turns] == ["truncated", "truncated"]
    assert outcome.turns[0].finish_reason == "length" and outcome.turns[0].completion_tokens == 8
    assert "cut off at the length limit" in llm.calls[1].messages[1]["content"]


def test_a_completion_cut_after_its_action_line_still_runs() -> None:
    from tests.scripted_llm import ScriptedChatModel

    llm = ScriptedChatModel(["Action: go to kitchen\nThink: then the"], finish_reason="length")
    outcome = play(ReActActor(llm, {"max_steps": 1}), job())
    assert outcome.turns[0].action == "go to kitchen" and outcome.turns[0].format_failure is None


def test_prompts_too_long_lose_the_oldest_history_first_never_the_memory_block() -> None:
    from tests.scripted_llm import ScriptedChatModel

    llm = ScriptedChatModel(["Action: look"] * 6, context_size=125)  # words: the first prompt 95, +7 a turn
    outcome = play(ReActActor(llm, {"max_steps": 6, "generation": {"max_tokens": 10}}), job(block=MEMORY_BLOCK))
    assert outcome.status == "step_limit" and outcome.info["trimmed_tokens"] > 0
    for call in llm.calls:
        assert MEMORY_BLOCK in call.messages[0]["content"]  # never cut
        assert sum(len(m["content"].split()) for m in call.messages) <= 115
    last = llm.calls[-1].messages[1]["content"]
    assert "earlier steps not shown" in last and last.count("> look") < 5  # the oldest went first
    assert sum(t.prompt_tokens for t in outcome.turns) > 0


def test_a_prompt_that_cannot_fit_is_a_context_refusal_not_a_task_failure() -> None:
    from tests.scripted_llm import ScriptedChatModel

    llm = ScriptedChatModel(["Action: look"], context_size=30)
    outcome = play(ReActActor(llm, {"generation": {"max_tokens": 10}}), job(block=MEMORY_BLOCK))
    assert outcome.status == "context_exceeded" and not outcome.success and llm.calls == []
    assert "without any history turn" in outcome.error


def test_an_env_status_ends_the_episode_as_a_failure_whatever_success_says():
    from memrl_bench.actors.llm_actors import ended

    assert ended({"success": True}) == ("ok", True)
    assert ended({"success": False}) == ("ok", False)
    assert ended({"success": True, "status": "tampered"}) == ("tampered", False)
    assert ended({"status": "env_limit"}) == ("env_limit", False)
    episode_info: dict = {}
    assert ended({"success": True, "status": "tampered", "tampering": ["tests_run_mismatch"]}, episode_info) == ("tampered", False)
    assert episode_info == {"tampering": ["tests_run_mismatch"]}
