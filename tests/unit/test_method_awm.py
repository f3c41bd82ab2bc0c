"""AWM: judged successes (the model's or the env's) rebuild the whole workflow set from one example per
template, real-model-style replies, repair, cost, resume."""

import asyncio
import dataclasses

import pytest

from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Task, strip_measured
from memrl_bench.methods.awm import AWM, workflow_text
from memrl_bench.methods.base import MethodContext, fingerprint
from memrl_bench.methods.llm_ops import OpError
from tests.memory_llm_helpers import ScriptedModel, context, experience, is_prompt, query, run_synthetic, whole_and_resumed

JUDGED_SUCCESS = "Thoughts: the environment answered 'Taken.', so the key was taken.\nStatus: **SUCCESS**"
JUDGED_FAILURE = "Thoughts: There is no key here, so nothing was taken.\n\nStatus: failure."


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def scripted(prompt: str) -> str:
    """A model that judges from what the environment said and induces one workflow per solved task shown."""
    if is_prompt(prompt, "llm_ops_judge"):
        return JUDGED_SUCCESS if "Taken." in prompt else JUDGED_FAILURE
    if is_prompt(prompt, "awm_induce"):
        tasks = [part.split("\n")[0] for part in prompt.split("Solved tasks:\n")[1].split("Task: ")[1:]]
        blocks = [
            f"## Workflow {n}: {task}\nReasoning: look first.\nAction: look\nReasoning: act.\nAction: take {{key}}"
            for n, task in enumerate(tasks, 1)
        ]
        return "Here are the workflows I found:\n\n" + "\n\n".join(blocks)
    raise AssertionError(f"unexpected prompt: {prompt[:80]}")


def make(loop, model=None, **cfg):
    return AWM(cfg, context(model or ScriptedModel(scripted), loop))


def typed(exp, task_type):
    """The experience with a task template (an env's task_type)."""
    return dataclasses.replace(exp, task=Task(exp.task.id, exp.task.split, exp.task.description, data={"task_type": task_type}))


def test_needs_an_llm():
    with pytest.raises(ConfigError, match="method awm manages memory with an LLM"):
        AWM({}, MethodContext(seed=0))


def test_the_workflows_start_at_the_first_heading():
    assert workflow_text("Sure!\n**Workflow 1: Open a door**\nAction: open {door}") == "**Workflow 1: Open a door**\nAction: open {door}"
    with pytest.raises(OpError, match='block starting "Workflow 1:'):
        workflow_text("Workflows are useful. First look, then act.")


def test_the_models_judgement_picks_the_examples_and_the_reply_replaces_the_set(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model)
    assert m.retrieve(query("take the key")).prompt_block == ""
    result = m.learn(
        [experience(0, "take the red key", True), experience(1, "open the door", False), experience(2, "take the blue key", True)]
    )
    assert len(model.calls) == 4 and is_prompt(model.calls[3][0]["content"], "awm_induce")  # three judgements, one induction
    induce = model.calls[3][0]["content"]
    assert "Task: take the red key\nSteps:\n> look" in induce and "Task: take the blue key" in induce and "open the door" not in induce
    assert model.overrides[3] == {"temperature": 1.0}
    workflows = m.items()[0]
    assert workflows.id == "workflows" and workflows.content.startswith("## Workflow 1: take the red key")
    assert workflows.fields == {"contributors": ["train-e01-00000-s0", "train-e01-00002-s0"], "version": 1}
    assert workflows.provenance.episode_id == "train-e01-00002-s0"  # the newest example shown
    assert result.usage_by_episode["train-e01-00002-s0"].calls == 2  # its judgement and the induction
    assert [i.fields["judge_thoughts"][:26] for i in m.items()[1:]] == ["the environment answered '"] * 2
    found = m.retrieve(query("anything"))
    assert [r.item_id for r in found.items] == ["workflows"] and found.prompt_block.endswith("Action: take {key}")


def test_a_judged_success_induces_even_if_the_env_says_failure(loop):
    exp = experience(0, "take the key", True)
    lying = dataclasses.replace(exp, episode=dataclasses.replace(exp.episode, success=False, reward=0.0))
    m = make(loop)
    m.learn([lying])
    assert m.items()[0].fields["contributors"] == ["train-e01-00000-s0"] and m.items()[1].provenance.success is False


def test_judge_env_uses_the_reward_and_makes_no_judge_call(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model, judge="env", max_tokens=300)
    m.learn([experience(0, "take the key", True), experience(1, "open the door", False)])
    assert model.overrides == [{"temperature": 1.0, "max_tokens": 300}]
    assert len(model.calls) == 1 and is_prompt(model.calls[0][0]["content"], "awm_induce") and m.labels
    assert make(loop, judge="env").learn([experience(1, "open the door", False)]).calls_by_episode == {}  # no success, no call


def test_each_rebuild_shows_one_example_per_template_from_the_whole_pool(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model)
    first = [typed(experience(n, f"take key {n}", True), "take") for n in range(3)] + [typed(experience(3, "heat soup", True), "heat")]
    m.learn(first)
    assert m.items()[0].fields["contributors"][-1] == "train-e01-00003-s0" and len(m.items()[0].fields["contributors"]) == 2
    result = m.learn([typed(experience(4, "cool the milk", True), "cool")])
    assert {e: u.calls for e, u in result.usage_by_episode.items()} == {"train-e01-00004-s0": 2}  # charged inside the batch
    shown = m.items()[0].fields["contributors"]
    assert len(shown) == 3 and shown[-2:] == ["train-e01-00003-s0", "train-e01-00004-s0"] and m.items()[0].fields["version"] == 2
    assert shown == [m.sources.items[p].id for p in m.shown_examples()]  # the draw is fixed by the seed and the pool


def test_the_cap_keeps_the_templates_with_the_newest_successes(loop):
    m = make(loop, judge="env", max_examples=2)
    m.learn([typed(experience(n, f"task {n}", True), f"type{n}") for n in range(4)])
    assert m.items()[0].fields["contributors"] == ["train-e01-00002-s0", "train-e01-00003-s0"]


def test_a_reply_without_workflows_is_repaired_then_the_old_set_is_kept(loop):
    model = ScriptedModel(["Workflow 1: Take\nAction: take {x}\nAction: look", "I could not find a pattern.", "Sorry, none."])
    m = make(loop, model, judge="env")
    m.learn([experience(0, "take the key", True)])
    result = m.learn([experience(1, "take the red key", True)])
    assert 'block starting "Workflow 1: <what it does>"' in model.calls[2][-1]["content"]
    assert m.items()[0].content.startswith("Workflow 1: Take") and m.items()[0].fields["version"] == 1
    assert result.op_errors_by_episode == {"train-e01-00001-s0": 1}


def test_snapshot_restore_continue_equals_an_uninterrupted_run(loop, tmp_path):
    first = [experience(0, "take the red key", True), experience(1, "heat the soup", False)]
    whole, resumed = whole_and_resumed(lambda: make(loop), [first, [experience(2, "take the blue key", True)]], tmp_path)
    assert fingerprint(resumed, tmp_path / "x") == fingerprint(whole, tmp_path / "y")
    assert resumed.retrieve(query("key")).prompt_block == whole.retrieve(query("key")).prompt_block


@pytest.mark.parametrize("judge", ["llm", "env"])
def test_a_whole_synthetic_run_is_audited_costed_and_reproducible(tmp_path, judge):
    method = {"name": "awm", "judge": judge}
    metrics, records, model = run_synthetic(tmp_path, "a", method)
    _, again, _ = run_synthetic(tmp_path, "b", method)
    assert metrics["usage"]["memory"]["calls"] == len(model.calls)
    assert all(r["memory_usage"]["calls"] == 0 for r in records if r["phase"] != "train")
    if judge == "llm":  # every training episode is judged
        assert all(r["memory_usage"]["calls"] >= 1 for r in records if r["phase"] == "train")
    else:
        assert metrics["memory_final"]["items"] > 0 and any(r["retrieved"] for r in records if r["phase"] == "test")
    assert [strip_measured(r) for r in records] == [strip_measured(r) for r in again]
