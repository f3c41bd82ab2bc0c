"""MemP: each build, retrieval and update strategy, the discard rule, repair, cost, resume."""

import asyncio
import json

import numpy as np
import pytest

from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import MemoryItem, Provenance, strip_measured
from memrl_bench.core.vector_index import unit_rows
from memrl_bench.methods.base import MethodContext, fingerprint
from memrl_bench.methods.memp import MemP
from tests.memory_llm_helpers import ScriptedModel, answer, context, embed, experience, is_prompt, query, run_synthetic, used


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def scripted(prompt: str) -> str:
    """A deterministic MemP model: scripts, keywords (the task's words) and adjustments."""
    task = prompt.split("Task: ")[1].split("\n")[0] if "Task: " in prompt else ""
    if is_prompt(prompt, "memp_script"):
        return f"To {task}, look around first, then act."
    if is_prompt(prompt, "memp_keywords"):
        return answer({"keywords": task.split()})
    if is_prompt(prompt, "memp_adjust"):
        return answer({"analysis": "The key was elsewhere.", "workflow": f"Search every room before trying to {task}."})
    raise AssertionError(f"unexpected prompt: {prompt[:80]}")


def make(loop, model=None, **cfg):
    return MemP(cfg, context(model or ScriptedModel(scripted), loop))


def test_needs_an_llm_and_avefact_needs_a_text_embedder(loop):
    with pytest.raises(ConfigError, match="method memp manages memory with an LLM"):
        MemP({}, MethodContext(seed=0))
    with pytest.raises(ConfigError, match="method.retrieve=avefact .* set embedder=minilm"):
        MemP({"retrieve": "avefact"}, context(ScriptedModel(scripted), loop, text_embed=False))


def test_build_trajectory_stores_it_verbatim_without_llm_calls(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model, build="trajectory", update="vanilla")
    m.learn([experience(0, "take the key", True), experience(1, "open the door", False)])
    assert model.calls == [] and m.stats().items == 2  # vanilla writes the failure too
    content = m.store.get("train-e01-00000-s0").content
    assert content.startswith("Task: take the key\nTrajectory:\n> look") and "Workflow" not in content


def test_build_script_distils_the_trajectory(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model, build="script", update="vanilla")
    m.learn([experience(0, "take the key", True)])
    (item,) = m.items()
    assert item.content == "Task: take the key\nWorkflow: To take the key, look around first, then act."
    assert "> take key" in model.calls[0][0]["content"] and model.overrides[0] == {"temperature": 0.2}


def test_build_proceduralization_keeps_script_and_trajectory(loop):
    m = make(loop, build="proceduralization", update="vanilla")
    m.learn([experience(0, "take the key", True)])
    content = m.items()[0].content
    assert "Workflow: To take the key" in content and "Trajectory:\n> look" in content


def test_validation_writes_successes_only(loop):
    m = make(loop, update="validation")
    m.learn([experience(0, "take the key", True), experience(1, "open the door", False)])
    assert [i.id for i in m.items()] == ["train-e01-00000-s0"]


def test_one_memory_per_task(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model, update="vanilla")
    m.learn([experience(0, "take the key", True, task_id="t"), experience(1, "take the key", False, task_id="t")])
    m.learn([experience(2, "take the key", True, task_id="t")])
    assert m.stats().items == 1 and len(model.calls) == 1


def test_adjustment_rewrites_the_first_retrieved_workflow_in_place(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model, update="adjustment")
    m.learn([experience(0, "take the key", True)])
    original = m.items()[0]
    failure = experience(1, "take the red key", False, retrieved=[used(m, original.id)])
    result = m.learn([failure])
    (item,) = m.items()  # the failure is not written
    assert "Workflow: Search every room before trying to take the red key." in item.content
    assert "Trajectory:\n> look" in item.content  # the trajectory part is kept
    assert item.provenance == original.provenance and item.fields["adjusted_by"] == [failure.episode.episode_id]
    adjust = model.calls[-1][0]["content"]
    assert is_prompt(adjust, "memp_adjust") and "To take the key, look around first" in adjust and "There is no key here." in adjust
    assert model.overrides[-1] == {"temperature": 1.0}
    assert result.usage_by_episode[failure.episode.episode_id].calls == 1


def test_adjustment_of_a_trajectory_memory_rewrites_the_trajectory(loop):
    m = make(loop, build="trajectory", update="adjustment")
    m.learn([experience(0, "take the key", True)])
    m.learn([experience(1, "take the key", False, task_id="other", retrieved=[used(m, "train-e01-00000-s0")])])
    assert m.items()[0].content == "Task: take the key\nTrajectory:\nSearch every room before trying to take the key."


def test_invalid_adjustment_is_repaired_then_skipped(loop):
    m = make(loop, update="adjustment")
    m.learn([experience(0, "take the key", True)])
    before = m.items()[0].content
    m.ctx.llm = ScriptedModel([answer({"analysis": "?"}), "not json at all"])
    failure = experience(1, "x", False, retrieved=[used(m, "train-e01-00000-s0")])
    result = m.learn([failure])
    assert '"workflow" must be a non-empty string' in m.ctx.llm.calls[1][2]["content"]
    assert m.items()[0].content == before and result.op_errors_by_episode == {failure.episode.episode_id: 1}


def test_a_failed_script_writes_nothing_and_is_counted(loop):
    model = ScriptedModel(["", "   "])
    m = make(loop, model, build="script", update="vanilla")
    exp = experience(0, "take the key", True)
    result = m.learn([exp])
    assert m.stats().items == 0 and "the answer was empty" in model.calls[1][2]["content"]
    assert result.op_errors_by_episode == {exp.episode.episode_id: 1} and result.usage_by_episode[exp.episode.episode_id].calls == 2


def test_query_retrieval_top_k_above_the_floor(loop):
    m = make(loop, build="trajectory", update="vanilla", top_k=2, sim_floor=0.3)
    m.learn([experience(i, t, True) for i, t in enumerate(["take the blue key", "take the red key", "cook a meal", "take the key"])])
    q = query("take the key")
    sims = {i.id: float(embed([i.fields["task"]])[0] @ q.key) for i in m.items()}
    r = m.retrieve(q)
    expected = sorted((i for i in sims if sims[i] >= 0.3), key=lambda i: -sims[i])
    assert [i.item_id for i in r.items] == expected[:2] and r.candidates == len(expected) == 3
    assert [i.similarity for i in r.items] == pytest.approx([sims[i] for i in expected[:2]])
    assert r.prompt_block.startswith("Guidelines from similar tasks done before:\nTask: take the key")


def test_random_retrieval_is_fixed_per_episode_and_varies_across_episodes(loop):
    m = make(loop, build="trajectory", update="vanilla", retrieve="random", top_k=2)
    m.learn([experience(i, f"task number {i}", True) for i in range(6)])
    picks = [tuple(i.item_id for i in m.retrieve(query("anything", episode_id=f"ep-{n}")).items) for n in range(8)]
    assert picks[0] == tuple(i.item_id for i in m.retrieve(query("anything", episode_id="ep-0")).items)
    assert all(len(p) == 2 for p in picks) and len(set(picks)) > 2


def test_avefact_score_is_the_mean_best_keyword_cosine(loop):
    model = ScriptedModel(scripted)
    m = make(loop, model, build="trajectory", update="vanilla", retrieve="avefact")
    m.learn([experience(0, "red key", True), experience(1, "blue box", True)])
    assert [k.content for k in m.keywords.items] == ["red", "key", "blue", "box"]
    r = m.retrieve(query("key box"))
    q = embed(["key", "box"])
    k = embed(["red", "key", "blue", "box"])
    expected = {
        "train-e01-00000-s0": np.mean([max(q[0] @ k[0], q[0] @ k[1]), max(q[1] @ k[0], q[1] @ k[1])]),
        "train-e01-00001-s0": np.mean([max(q[0] @ k[2], q[0] @ k[3]), max(q[1] @ k[2], q[1] @ k[3])]),
    }
    assert {i.item_id: i.similarity for i in r.items} == pytest.approx(expected)
    assert r.usage.calls == 1 and is_prompt(model.calls[-1][0]["content"], "memp_keywords")  # the query's keywords


def test_avefact_hand_numbers(loop):
    m = make(loop, retrieve="avefact")
    prov = Provenance("t", "train", "train", 1, "e", True)
    for memory in ("a", "b"):
        m.store.add(MemoryItem(memory, memory, prov), np.ones(2))
    for n, (memory, vec) in enumerate([("a", [1, 0]), ("a", [0, 1]), ("b", [1, 1])]):
        m.keywords.add(
            MemoryItem(f"{memory}{n}", "", prov, {"memory": memory}), unit_rows(np.array([vec]))[0]
        )  # stored as given: unit, as embedders give them
    scores = m.avefact_scores(unit_rows(np.array([[1, 0], [0.6, 0.8]])), np.array([0, 0, 1]))
    # a: mean(max(1, 0), max(0.6, 0.8)) = 0.9; b: mean(1 / sqrt 2, 1.4 / sqrt 2)
    assert scores == pytest.approx([0.9, (0.70711 + 0.98995) / 2], abs=1e-4)


def test_avefact_falls_back_to_the_description_when_keywords_fail(loop):
    m = make(loop, build="trajectory", update="vanilla", retrieve="avefact")
    m.learn([experience(0, "red key", True)])
    m.ctx.llm = ScriptedModel(["nope", "nope"])
    r = m.retrieve(query("red key"))
    best = float((embed(["red", "key"]) @ embed(["red key"])[0]).max())  # one query keyword: the description
    assert r.items[0].similarity == pytest.approx(best) and r.usage.calls == 2


def test_discard_deletes_memories_used_3_times_with_success_below_half(loop):
    m = make(loop, build="trajectory", update="validation")
    m.learn([experience(i, f"task {i}", True) for i in range(3)])
    bad, good, young = (m.store.items[i].id for i in range(3))
    outcomes = [(bad, True), (bad, False), (bad, False), (good, True), (good, True), (good, False), (young, False), (young, False)]
    m.learn(
        [
            experience(10 + n, "another task", success, task_id=f"x{n}", retrieved=[used(m, item)])
            for n, (item, success) in enumerate(outcomes)
        ]
    )
    assert bad not in m.store and good in m.store and young in m.store
    assert (m.store.get(good).fields["uses"], m.store.get(good).fields["successes"]) == (3, 2)


def test_discard_removes_the_keywords_too(loop):
    m = make(loop, build="trajectory", update="validation", retrieve="avefact", discard_min_uses=1)
    m.learn([experience(0, "red key", True), experience(1, "blue box", True)])
    m.learn([experience(2, "zzz", False, retrieved=[used(m, "train-e01-00000-s0")])])
    assert [k.fields["memory"] for k in m.keywords.items] == ["train-e01-00001-s0", "train-e01-00001-s0"]
    assert [i.item_id for i in m.retrieve(query("red key")).items] == ["train-e01-00001-s0"]


def test_snapshot_restore_continue_equals_an_uninterrupted_run(loop, tmp_path):
    cfg = {"retrieve": "avefact", "update": "adjustment"}
    first = [experience(i, t, True) for i, t in enumerate(["take the red key", "open the blue door", "cook the meal"])]

    def second(m):
        return [
            experience(3, "take the blue key", False, retrieved=[used(m, "train-e01-00000-s0")]),
            experience(4, "open the red door", True),
            experience(5, "cook the soup", False, retrieved=[used(m, "train-e01-00002-s0")]),
        ]

    whole = make(loop, **cfg)
    whole.learn(first)
    whole.learn(second(whole))
    part = make(loop, **cfg)
    part.learn(first)
    (tmp_path / "snap").mkdir()
    part.snapshot(tmp_path / "snap")
    resumed = make(loop, **cfg)
    resumed.restore(tmp_path / "snap")
    resumed.learn(second(resumed))
    assert [i.id for i in whole.items() if i.fields["adjusted_by"]] == ["train-e01-00000-s0", "train-e01-00002-s0"]
    assert fingerprint(resumed, tmp_path / "x") == fingerprint(whole, tmp_path / "y")
    for q in ["red key", "door", "soup"]:
        a, b = resumed.retrieve(query(q)), whole.retrieve(query(q))
        assert [(i.item_id, i.similarity) for i in a.items] == [
            (i.item_id, i.similarity) for i in b.items
        ] and a.prompt_block == b.prompt_block


def test_snapshot_round_trip_keeps_adjustments(loop, tmp_path):
    m = make(loop)
    m.learn([experience(0, "take the key", True)])
    m.learn([experience(1, "take the key", False, task_id="other", retrieved=[used(m, "train-e01-00000-s0")])])
    (tmp_path / "s").mkdir()
    m.snapshot(tmp_path / "s")
    other = make(loop)
    other.restore(tmp_path / "s")
    assert [i.to_dict() for i in other.items()] == [i.to_dict() for i in m.items()]
    assert json.dumps(other.items()[0].fields["adjusted_by"]) == '["train-e01-00001-s0"]'


@pytest.mark.parametrize("update", ["vanilla", "adjustment"])
def test_a_whole_synthetic_run_is_audited_costed_and_reproducible(tmp_path, update):
    method = {"name": "memp", "update": update, "sim_floor": -1.0}
    metrics, records, model = run_synthetic(tmp_path, "a", method)
    _, again, _ = run_synthetic(tmp_path, "b", method)
    assert metrics["usage"]["memory"]["calls"] == len(model.calls) > 0
    assert all(r["memory_usage"]["calls"] == 0 for r in records if r["phase"] != "train")
    assert metrics["memory_final"]["items"] > 0 and any(r["retrieved"] for r in records if r["phase"] == "test")
    if update == "adjustment":
        assert any(is_prompt(call[0]["content"], "memp_adjust") for call in model.calls)
    assert [strip_measured(r) for r in records] == [strip_measured(r) for r in again]


def test_avefact_query_keywords_are_charged_to_the_episode_that_retrieves(tmp_path):
    metrics, records, model = run_synthetic(tmp_path, "a", {"name": "memp", "retrieve": "avefact", "update": "vanilla"}, text_embedder=True)
    evaluation = [r for r in records if r["phase"] != "train"]
    assert evaluation and all(r["memory_usage"]["calls"] == 1 and r["retrieved"] for r in evaluation)  # one keyword call each
    first_batch = [r for r in records if r["phase"] == "train" and r["epoch"] == 1 and r["batch_index"] == 0]
    assert all(r["memory_usage"]["calls"] == 2 for r in first_batch)  # empty memory: no query call; script + keywords
    assert metrics["usage"]["memory"]["calls"] == len(model.calls)
