"""full_context and simplemem: what each chooses, and that the injected block never exceeds
its token budget, on the synthetic world end to end and on every text env's tasks."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from memrl_bench.core import registry
from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Turn
from memrl_bench.methods.base import MethodContext
from memrl_bench.methods.budget import block_tokens, fill
from memrl_bench.methods.full_context import FullContext
from memrl_bench.methods.simplemem import SimpleMem
from tests.helpers import composed
from tests.memory_llm_helpers import ScriptedModel, context, experience, generic_reply, query, run_synthetic

TEXT_ENVS = [
    "alfworld",
    "bigcodebench",
    "llb_db",
    pytest.param("llb_os", marks=pytest.mark.slow),
    "mmlu",
    "textworld_express",
]  # llb_os takes ~20 s to load
BUDGETS = (40, 150, 600, 3000)


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def long_experience(n: int, task: str, success: bool):
    """An experience whose trajectory is long enough for the budget to bind."""
    exp = experience(n, task, success)
    turns = [Turn(f"step {i} towards {task[:40]}", f"Observation {i}: nothing of note happened here. " * 3) for i in range(8)]
    return dataclasses.replace(exp, episode=dataclasses.replace(exp.episode, turns=turns))


def test_fill_stops_at_the_first_entry_that_does_not_fit():
    assert fill("h" * 3, ["a" * 3, "b" * 9, "c"], budget_tokens=3) == [0]  # "c" would fit but comes after "b"
    assert fill("h" * 3, ["a" * 3, "c"], budget_tokens=3) == [0, 1]  # 3 + 3 + 1 (separator) + 1 = 8 bytes <= 9
    assert fill("", ["x" * 10], budget_tokens=3) == []
    assert block_tokens("é" * 3) == 2  # UTF-8 bytes, rounded up


def test_full_context_injects_the_newest_episodes_that_fit_whatever_the_task(loop):
    m = FullContext({"budget_tokens": 200, "max_trajectory_chars": 120}, context(None, loop))
    m.learn([long_experience(n, f"task number {n}", n % 2 == 0) for n in range(6)])
    chosen = [[i.item_id for i in m.retrieve(query(task)).items] for task in ("task number 0", "something else entirely")]
    assert chosen[0] == chosen[1]  # no retrieval: the task does not change the choice
    newest_first = [i.id for i in m.items()][::-1]
    assert 0 < len(chosen[0]) < 6 and chosen[0] == newest_first[: len(chosen[0])]
    assert m.retrieve(query("x")).candidates == 6


def test_simplemem_compresses_with_the_llm_and_packs_the_most_relevant(loop):
    model = ScriptedModel(generic_reply)
    m = SimpleMem({"budget_tokens": 45}, context(model, loop))
    result = m.learn(
        [experience(0, "open the red door", True), experience(1, "heat the soup", False), experience(2, "take the blue key", True)]
    )
    assert [i.content for i in m.items()][1] == "- Task: heat the soup (failure): To heat the soup, look around first, then act."
    assert result.usage_by_episode["train-e01-00001-s0"].calls == 1 and model.overrides[0] == {"temperature": 0.0}
    found = m.retrieve(query("heat the soup"))
    assert [i.item_id for i in found.items] == ["train-e01-00001-s0"]  # the most relevant first; the next does not fit 45 tokens
    assert block_tokens(found.prompt_block) <= 45


def test_simplemem_without_llm_writes_outcome_and_actions_and_a_failed_compression_writes_nothing(loop):
    with pytest.raises(ConfigError, match="method simplemem manages memory with an LLM"):
        SimpleMem({}, MethodContext(seed=0))
    plain = SimpleMem({"write_with_llm": False}, MethodContext(seed=0))
    plain.learn([experience(0, "take the key", False)])
    assert plain.items()[0].content == "- Task: take the key (failure): failed with the actions: look; take key"
    broken = SimpleMem({}, context(ScriptedModel(["", "  "]), loop))
    result = broken.learn([experience(0, "take the key", True)])
    assert broken.items() == [] and result.op_errors_by_episode == {"train-e01-00000-s0": 1}


def env_tasks(name: str) -> list[str]:
    cls = registry.get("env", name)
    quick = {"tasks_per_split": 6} if "tasks_per_split" in cls.Settings.model_fields else {}  # alfworld has no such setting
    env = cls(composed(f"env={name}")["env"] | quick)
    try:
        return [t.description for t in env.tasks(next(iter(env.splits())))[:6]]
    finally:
        env.close()


@pytest.mark.parametrize("env", TEXT_ENVS)
@pytest.mark.parametrize("method", ["full_context", "simplemem"])
def test_injected_tokens_never_exceed_the_budget_on_text_env_tasks(env, method, loop):
    tasks = env_tasks(env)
    injected = []
    for budget in BUDGETS:
        m = registry.get("method", method)({"budget_tokens": budget}, context(ScriptedModel(generic_reply), loop))
        m.learn([long_experience(n, task, n % 2 == 0) for n, task in enumerate(tasks)])
        found = [m.retrieve(query(task, f"validation-e01-{n:05d}-s0")) for n, task in enumerate(tasks)]
        assert all(block_tokens(r.prompt_block) <= budget for r in found), (env, method, budget)
        assert all(bool(r.prompt_block) == bool(r.items) for r in found)
        injected.append(sum(len(r.items) for r in found))
    assert injected == sorted(injected) and injected[-1] > 0  # a larger budget injects at least as much, the largest something


@pytest.mark.parametrize("method, budget", [("full_context", 150), ("simplemem", 60)])
def test_injected_tokens_never_exceed_the_budget_on_the_synthetic_world(method, budget, tmp_path):
    _, records, _ = run_synthetic(tmp_path, method, {"name": method, "budget_tokens": budget})
    injected = [r["injected_chars"] for r in records if r["phase"] != "train" or r["epoch"] > 1]
    assert max(injected) > 0 and max(-(-c // 3) for c in injected) <= budget  # the synthetic world's text is ASCII: a char is a byte
