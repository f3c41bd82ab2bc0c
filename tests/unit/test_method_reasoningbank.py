"""ReasoningBank: self-judged writing (no ground truth read), extraction from real-model-style replies,
top-n episode retrieval, repair, cost, resume."""

import asyncio
import dataclasses
import json

import numpy as np
import pytest

from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import strip_measured
from memrl_bench.methods.base import MethodContext, fingerprint
from memrl_bench.methods.reasoningbank import ReasoningBank
from tests.memory_llm_helpers import ScriptedModel, context, experience, is_prompt, query, run_synthetic, whole_and_resumed

# What small instruction models really write: prose around the verdict, markdown emphasis, fenced JSON.
JUDGED_SUCCESS = "Thoughts: The agent took the key and the environment confirmed it with 'Taken.'.\n\n**Status:** Success"
JUDGED_FAILURE = "Thoughts: the environment said there is no key, so the task was not done.\nStatus: failure"
EXTRACTED = """Sure! Here is my analysis and the memory items.

```json
{
  "analysis": "The agent looked around before acting, which revealed where the key was.",
  "memory_items": [
    {"title": "Look before acting", "description": "When the location of an object is unknown.",
     "content": "Inspect the room first; act only on objects the observation mentions."},
    {"title": "Confirm the result", "content": "Check the environment's answer after each action."}
  ]
}
```
I hope this helps."""


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def scripted(judge: str = JUDGED_SUCCESS, extracted: str = EXTRACTED):
    def reply(prompt: str) -> str:
        if is_prompt(prompt, "llm_ops_judge"):
            return judge
        if is_prompt(prompt, "reasoningbank_success") or is_prompt(prompt, "reasoningbank_failure"):
            return extracted
        raise AssertionError(f"unexpected prompt: {prompt[:80]}")

    return reply


def make(loop, model=None, **cfg):
    return ReasoningBank(cfg, context(model or ScriptedModel(scripted()), loop))


def test_needs_an_llm():
    with pytest.raises(ConfigError, match="method reasoningbank manages memory with an LLM"):
        ReasoningBank({}, MethodContext(seed=0))


def test_the_judge_then_the_success_prompt_write_items_with_the_verdict(loop):
    model = ScriptedModel(scripted())
    m = make(loop, model)
    result = m.learn([experience(0, "take the key", True)])
    judge, extract = (call[0]["content"] for call in model.calls)
    assert is_prompt(judge, "llm_ops_judge") and "> take key\nTaken." in judge
    assert (
        is_prompt(extract, "reasoningbank_success") and "A reviewer judged that the attempt succeeded, because: The agent took" in extract
    )
    assert model.overrides == [{"temperature": 0.0}, {"temperature": 1.0}]
    first, second = m.items()
    assert first.id == "train-e01-00000-s0#0" and first.content == (
        "Title: Look before acting\nDescription: When the location of an object is unknown.\n"
        "Content: Inspect the room first; act only on objects the observation mentions."
    )
    assert second.fields["description"] == ""  # a missing description is kept empty, not refused
    assert first.fields["judged_success"] is True and first.fields["judge_thoughts"].startswith("The agent took the key")
    assert result.usage_by_episode["train-e01-00000-s0"].calls == 2 and m.stats().groups == 1


def test_nothing_written_depends_on_the_real_outcome(loop, tmp_path):
    """The judge alone decides: flipping the env's success (and reward) changes no content, field or key."""
    exps = [experience(0, "take the key", True), experience(1, "open the door", False)]
    flipped = [
        dataclasses.replace(e, episode=dataclasses.replace(e.episode, success=not e.episode.success, reward=1.0 - e.episode.reward))
        for e in exps
    ]
    a, b = make(loop), make(loop)
    a.learn(exps)
    b.learn(flipped)
    assert [(i.id, i.content, i.fields) for i in a.items()] == [(i.id, i.content, i.fields) for i in b.items()]
    assert np.array_equal(a.store.keys, b.store.keys)
    assert [i.provenance.success for i in a.items()] != [i.provenance.success for i in b.items()]  # the audit keeps the truth


def test_a_judged_failure_uses_the_failure_prompt_even_if_the_env_says_success(loop):
    model = ScriptedModel(scripted(judge=JUDGED_FAILURE))
    m = make(loop, model)
    m.learn([experience(0, "take the key", True)])
    assert is_prompt(model.calls[1][0]["content"], "reasoningbank_failure")
    assert "judged that the attempt failed, because: the environment said" in model.calls[1][0]["content"]
    assert {i.fields["judged_success"] for i in m.items()} == {False} and {i.provenance.success for i in m.items()} == {True}


def test_ground_truth_judge_makes_no_judge_call_and_is_labelled(loop):
    model = ScriptedModel(scripted())
    m = make(loop, model, judge="ground_truth", max_tokens=300)
    m.learn([experience(0, "open the door", False)])
    assert model.overrides == [{"temperature": 1.0, "max_tokens": 300}]
    assert len(model.calls) == 1 and is_prompt(model.calls[0][0]["content"], "reasoningbank_failure")
    assert "A reviewer judged" not in model.calls[0][0]["content"] and m.labels


def test_a_reply_without_verdict_is_repaired_then_the_episode_is_skipped(loop):
    model = ScriptedModel(["The agent seems to have done fine overall.", "I think it worked."])
    m = make(loop, model)
    result = m.learn([experience(0, "take the key", True)])
    assert len(model.calls) == 2 and 'end the answer with "Status: success"' in model.calls[1][-1]["content"]
    assert m.items() == [] and result.op_errors_by_episode == {"train-e01-00000-s0": 1}


def test_an_item_without_content_is_repaired(loop):
    bad = '{"analysis": "ok", "memory_items": [{"title": "Look first", "description": "Always."}]}'
    good = '{"memory_items": [{"title": "Look first", "description": "Always.", "content": "Inspect the room."}]}'
    model = ScriptedModel([JUDGED_SUCCESS, bad, good])
    m = make(loop, model)
    m.learn([experience(0, "take the key", True)])
    assert 'entry 0: "content" must be a non-empty string' in model.calls[2][-1]["content"]
    assert [i.fields["content"] for i in m.items()] == ["Inspect the room."]


def test_at_most_max_items_are_kept(loop):
    many = {"memory_items": [{"title": f"T{n}", "description": "d", "content": f"c{n}"} for n in range(5)]}
    m = make(loop, ScriptedModel(scripted(extracted=json.dumps(many))))
    m.learn([experience(0, "take the key", True)])
    assert [i.fields["title"] for i in m.items()] == ["T0", "T1", "T2"]


def test_retrieval_injects_every_item_of_the_top_n_most_similar_episodes(loop):
    m = make(loop)
    m.learn([experience(0, "take the red key", True), experience(1, "heat the soup", False), experience(2, "open the blue door", True)])
    found = m.retrieve(query("take the red key now"))
    assert [r.item_id for r in found.items] == ["train-e01-00000-s0#0", "train-e01-00000-s0#1"] and found.candidates == 3
    assert found.prompt_block.startswith("Memory items from similar tasks") and "Title: Confirm the result" in found.prompt_block
    two = make(loop, top_n=2)
    two.learn([experience(0, "take the red key", True), experience(1, "heat the soup", False), experience(2, "take the blue key", True)])
    assert [r.item_id.split("#")[0] for r in two.retrieve(query("take the red key")).items] == ["train-e01-00000-s0"] * 2 + [
        "train-e01-00002-s0"
    ] * 2
    assert make(loop).retrieve(query("anything")).items == []


def test_snapshot_restore_continue_equals_an_uninterrupted_run(loop, tmp_path):
    first = [experience(0, "take the red key", True), experience(1, "heat the soup", False)]
    whole, resumed = whole_and_resumed(lambda: make(loop), [first, [experience(2, "open the blue door", True)]], tmp_path)
    assert fingerprint(resumed, tmp_path / "x") == fingerprint(whole, tmp_path / "y")
    assert resumed.retrieve(query("soup")).prompt_block == whole.retrieve(query("soup")).prompt_block


def test_a_whole_synthetic_run_is_audited_costed_and_reproducible(tmp_path):
    metrics, records, model = run_synthetic(tmp_path, "a", {"name": "reasoningbank"})
    _, again, _ = run_synthetic(tmp_path, "b", {"name": "reasoningbank"})
    assert metrics["usage"]["memory"]["calls"] == len(model.calls) > 0
    assert all(r["memory_usage"]["calls"] == 2 for r in records if r["phase"] == "train")  # judge + extraction, each episode
    assert all(r["memory_usage"]["calls"] == 0 for r in records if r["phase"] != "train")
    assert metrics["memory_final"]["items"] > 0 and any(r["retrieved"] for r in records if r["phase"] == "test")
    assert [strip_measured(r) for r in records] == [strip_measured(r) for r in again]


def test_the_judge_and_the_extractor_never_read_the_envs_verdict(loop):
    """Where the env answers the final action with its verdict (LLB-DB: "The answer is right."), the model judges
    from the actions and the observations before it; the env's words stay out of every prompt of the method."""
    model = ScriptedModel(scripted())
    graded = dataclasses.replace(experience(0, "take the key", True), graded_ending=True)
    make(loop, model).learn([graded])
    judge, extract = (call[0]["content"] for call in model.calls)
    for prompt in (judge, extract):
        assert "> take key\n(the episode ended here)" in prompt and "> take key\nTaken." not in prompt
    # The env's reward as the judge (judge=ground_truth) needs no hiding: the label is given.
    model = ScriptedModel(scripted())
    make(loop, model, judge="ground_truth").learn([graded])
    assert "> take key\nTaken." in model.calls[0][0]["content"]
