"""Mem0: extraction, the four update operations, id mapping, repair, cost, resume."""

import asyncio
import json

import numpy as np
import pytest

from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Usage, strip_measured
from memrl_bench.llm import LLMError, LLMOutageError
from memrl_bench.methods.base import MethodContext, fingerprint
from memrl_bench.methods.mem0 import Mem0
from tests.memory_llm_helpers import (
    ScriptedModel,
    answer,
    context,
    embed,
    experience,
    is_prompt,
    query,
    run_synthetic,
    usage_of,
    whole_and_resumed,
)


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def facts(*texts):
    return answer({"facts": list(texts)})


def ops(*entries):
    return answer({"memory": list(entries)})


def make(model, loop, **cfg):
    return Mem0(cfg, context(model, loop))


def seeded(loop, *texts):
    """A Mem0 whose store holds `texts`, added by one scripted episode."""
    model = ScriptedModel([facts(*texts), ops(*({"event": "ADD", "text": t} for t in texts))])
    m = make(model, loop)
    m.learn([experience(0, "open the door", True)])
    return m


def test_needs_an_llm():
    with pytest.raises(ConfigError, match="method mem0 manages memory with an LLM: set llm=local or llm=openai"):
        Mem0({}, MethodContext(seed=0))


def test_add_stores_facts_with_the_episode_provenance_and_text_keys(loop):
    model = ScriptedModel(
        [
            facts("Keys open doors.", "The coin is in the kitchen."),
            ops({"event": "ADD", "text": "Keys open doors."}, {"event": "ADD", "text": "The coin is in the kitchen."}),
        ]
    )
    m = make(model, loop)
    exp = experience(0, "find the coin", True)
    result = m.learn([exp])
    assert [i.content for i in m.items()] == ["Keys open doors.", "The coin is in the kitchen."]
    assert all(i.provenance.episode_id == exp.episode.episode_id and i.fields["updated_by"] == [] for i in m.items())
    assert np.allclose(m.store.keys, embed(["Keys open doors.", "The coin is in the kitchen."]))
    update_prompt = model.calls[1][0]["content"]
    assert is_prompt(model.calls[0][0]["content"], "mem0_extract") and "find the coin" in model.calls[0][0]["content"]
    assert "(memory is empty)" in update_prompt and '"The coin is in the kitchen."' in update_prompt
    expected = Usage()
    for call, reply in zip(model.calls, [facts("Keys open doors.", "The coin is in the kitchen."), model.replies[1]]):
        expected.add(usage_of(call, reply))
    assert result.usage_by_episode == {exp.episode.episode_id: expected} and expected.calls == 2
    assert result.op_errors_by_episode == {}
    assert all(o == {"temperature": 0.0} for o in model.overrides)


def test_update_shows_small_ids_and_keeps_the_original_provenance(loop):
    m = seeded(loop, "Keys open doors.")
    first = m.items()[0]
    model = ScriptedModel(
        [facts("Keys open locked chests too."), ops({"event": "UPDATE", "id": "0", "text": "Keys open doors and locked chests."})]
    )
    m.ctx.llm = model
    exp = experience(1, "open the chest", True)
    m.learn([exp])
    shown = json.loads(model.calls[1][0]["content"].split("Stored memories:\n")[1].split("\n\nNew facts:")[0])
    assert shown == [{"id": "0", "text": "Keys open doors."}]  # the stored id mem-0 is never shown
    (item,) = m.items()
    assert (item.id, item.content) == (first.id, "Keys open doors and locked chests.")
    assert item.provenance == first.provenance and item.fields["updated_by"] == [exp.episode.episode_id]
    assert np.allclose(m.store.keys[0], embed(["Keys open doors and locked chests."])[0])
    assert m.stats().bytes == len(item.content.encode()) + m.store.keys.nbytes
    assert m.history[-1] == {"episode_id": exp.episode.episode_id, "event": "UPDATE", "item_id": first.id}


def test_delete_and_none(loop):
    m = seeded(loop, "The door is red.", "The key is under the mat.")
    model = ScriptedModel(
        [
            facts("The door is blue.", "The key is under the mat."),
            ops({"event": "DELETE", "id": "0"}, {"event": "NONE", "text": "The key is under the mat."}),
        ]
    )
    m.ctx.llm = model
    exp = experience(1, "the door is blue", False)
    m.learn([exp])
    assert [i.content for i in m.items()] == ["The key is under the mat."]
    assert [h["event"] for h in m.history[-2:]] == ["DELETE", "NONE"]


def test_s_limits_the_memories_shown_per_fact(loop):
    m = seeded(loop, "red door north", "blue key south", "green coin east")
    model = ScriptedModel([facts("the blue key"), ops({"event": "NONE", "text": "the blue key"})])
    m.ctx.llm = model
    m.config.s = 1
    m.learn([experience(1, "blue key", True)])
    shown = json.loads(model.calls[1][0]["content"].split("Stored memories:\n")[1].split("\n\nNew facts:")[0])
    assert shown == [{"id": "0", "text": "blue key south"}]


def test_no_facts_means_no_update_call(loop):
    model = ScriptedModel([facts()])
    m = make(model, loop)
    result = m.learn([experience(0, "x", False)])
    assert len(model.calls) == 1 and m.stats().items == 0 and result.op_errors_by_episode == {}


def test_invalid_json_is_repaired_once(loop):
    model = ScriptedModel(
        ["Sure! Here are the facts: keys open doors", facts("Keys open doors."), ops({"event": "ADD", "text": "Keys open doors."})]
    )
    m = make(model, loop)
    exp = experience(0, "door", True)
    result = m.learn([exp])
    assert [i.content for i in m.items()] == ["Keys open doors."]
    repair = model.calls[1]
    assert repair[1] == {"role": "assistant", "content": "Sure! Here are the facts: keys open doors"}
    assert "not valid JSON" in repair[2]["content"]
    assert result.usage_by_episode[exp.episode.episode_id].calls == 3 and result.op_errors_by_episode == {}


def test_fenced_json_needs_no_repair(loop):
    model = ScriptedModel(['```json\n{"facts": ["Keys open doors."]}\n```', ops({"event": "ADD", "text": "Keys open doors."})])
    make(model, loop).learn([experience(0, "door", True)])
    assert len(model.calls) == 2


def test_invalid_twice_is_skipped_and_counted(loop):
    model = ScriptedModel(["no", "still no"])
    m = make(model, loop)
    exp = experience(0, "door", True)
    result = m.learn([exp])
    assert m.stats().items == 0 and len(model.calls) == 2
    assert result.op_errors_by_episode == {exp.episode.episode_id: 1}
    assert result.usage_by_episode[exp.episode.episode_id].calls == 2


@pytest.mark.parametrize(
    "text",
    ["[" * 30000 + "]" * 30000, '{"facts": [' + "9" * 5000 + "]}"],
    ids=["brackets nested past the stack", "an integer of 5,000 digits"],
)
def test_an_answer_json_cannot_read_is_skipped_and_counted_not_raised(loop, text):
    """Round 25b: json.loads raises RecursionError and a plain ValueError on these; they left learn() as a traceback, and
    the cached answer ended every resume the same way."""
    model = ScriptedModel([text, text])
    m = make(model, loop)
    exp = experience(0, "door", True)
    result = m.learn([exp])
    assert m.stats().items == 0 and result.op_errors_by_episode == {exp.episode.episode_id: 1}


def test_an_invented_id_rejects_the_whole_list_then_repair_applies(loop):
    m = seeded(loop, "Keys open doors.")
    bad = ops({"event": "ADD", "text": "A new fact."}, {"event": "UPDATE", "id": "7", "text": "x"})
    good = ops({"event": "ADD", "text": "A new fact."})
    model = ScriptedModel([facts("A new fact."), bad, good])
    m.ctx.llm = model
    m.learn([experience(1, "fact", True)])
    assert "unknown id '7'; valid ids: 0" in model.calls[2][2]["content"]
    assert [i.content for i in m.items()] == ["Keys open doors.", "A new fact."]


def test_an_invented_id_twice_applies_nothing(loop):
    m = seeded(loop, "Keys open doors.")
    bad = ops({"event": "ADD", "text": "A new fact."}, {"event": "DELETE", "id": "mem-0"})
    model = ScriptedModel([facts("A new fact."), bad, bad])
    m.ctx.llm = model
    exp = experience(1, "fact", True)
    result = m.learn([exp])
    assert [i.content for i in m.items()] == ["Keys open doors."]  # the valid ADD is not applied either
    assert result.op_errors_by_episode == {exp.episode.episode_id: 1}


def test_two_operations_on_one_memory_are_rejected(loop):
    m = seeded(loop, "Keys open doors.")
    bad = ops({"event": "UPDATE", "id": "0", "text": "y"}, {"event": "DELETE", "id": "0"})
    model = ScriptedModel([facts("f"), bad, bad])
    m.ctx.llm = model
    m.learn([experience(1, "fact", True)])
    assert "second operation" in model.calls[2][2]["content"] and m.items()[0].content == "Keys open doors."


def test_empty_answer_is_repaired(loop):
    model = ScriptedModel(["", facts("Keys open doors."), ops({"event": "ADD", "text": "Keys open doors."})])
    m = make(model, loop)
    m.learn([experience(0, "door", True)])
    assert "the answer was empty" in model.calls[1][2]["content"] and m.stats().items == 1


def test_llm_error_is_counted_not_raised(loop):
    model = ScriptedModel([LLMError("server said 500"), facts("Keys open doors."), ops({"event": "ADD", "text": "Keys open doors."})])
    m = make(model, loop)
    a, b = experience(0, "door", True), experience(1, "door", True)
    result = m.learn([a, b])
    assert result.op_errors_by_episode == {a.episode.episode_id: 1}
    assert result.usage_by_episode[a.episode.episode_id].failures == 1
    assert result.usage_by_episode[b.episode.episode_id].calls == 2 and m.stats().items == 1


def test_an_outage_stops_the_run(loop):
    m = make(ScriptedModel([LLMOutageError("connection refused")]), loop)
    with pytest.raises(LLMOutageError):
        m.learn([experience(0, "door", True)])


def test_retrieve_injects_the_top_k_most_similar_and_changes_nothing(loop, tmp_path):
    m = seeded(loop, "red door north", "blue key south", "green coin east")
    m.config.top_k = 2
    before = fingerprint(m, tmp_path / "a")
    r = m.retrieve(query("where is the blue key"))
    assert [m.store.get(i.item_id).content for i in r.items][0] == "blue key south" and len(r.items) == 2
    assert r.items[0].similarity == pytest.approx(float(embed(["blue key south"])[0] @ embed(["where is the blue key"])[0]))
    assert "- blue key south" in r.prompt_block and r.candidates == 3
    assert fingerprint(m, tmp_path / "b") == before


def test_without_a_text_embedder_memories_take_the_episode_key(loop):
    model = ScriptedModel(
        [facts("Lesson A.", "Lesson B."), ops({"event": "ADD", "text": "Lesson A."}, {"event": "ADD", "text": "Lesson B."})]
    )
    m = Mem0({}, context(model, loop, text_embed=False))
    intent = np.eye(8, dtype=np.float32)[2]
    m.learn([experience(0, "synthetic task", True, key=intent)])
    assert np.allclose(m.store.keys, [intent, intent])
    r = m.retrieve(query("synthetic task", key=intent))
    assert [i.similarity for i in r.items] == pytest.approx([1.0, 1.0])


def scripted_memory_manager(prompt: str) -> str:
    """A deterministic Mem0 model: one fact per task; UPDATE the first shown memory, else ADD."""
    if "Stored memories:" in prompt:
        fact = json.loads(prompt.split("New facts:\n")[1].split("\n\nReturn JSON")[0])[0]
        if "(memory is empty)" in prompt or "door" in fact:
            return ops({"event": "ADD", "text": fact})
        return ops({"event": "UPDATE", "id": "0", "text": fact + " (merged)"})
    task = prompt.split("Task: ")[1].split("\n")[0]
    return facts(f"Remember: {task}.")


def test_snapshot_restore_continue_equals_an_uninterrupted_run(loop, tmp_path):
    tasks = ["open the red door", "take the blue key", "find the coin", "open the door with the key", "cook the meal", "take the coin"]
    batches = [
        [experience(i, t, i % 2 == 0) for i, t in enumerate(tasks[:3])],
        [experience(i + 3, t, i % 2 == 1) for i, t in enumerate(tasks[3:])],
    ]
    whole, resumed = whole_and_resumed(lambda: make(ScriptedModel(scripted_memory_manager), loop), batches, tmp_path)
    assert {h["event"] for h in whole.history} == {"ADD", "UPDATE"}
    assert fingerprint(resumed, tmp_path / "x") == fingerprint(whole, tmp_path / "y")
    for q in ["red door", "coin", "meal"]:
        assert [(i.item_id, i.similarity) for i in resumed.retrieve(query(q)).items] == [
            (i.item_id, i.similarity) for i in whole.retrieve(query(q)).items
        ]


def test_a_whole_synthetic_run_is_audited_costed_and_reproducible(tmp_path):
    metrics, records, model = run_synthetic(tmp_path, "a", {"name": "mem0"})
    _, again, _ = run_synthetic(tmp_path, "b", {"name": "mem0"})
    train = [r for r in records if r["phase"] == "train"]
    assert all(r["memory_usage"]["calls"] == 2 for r in train)  # extraction + update, charged per episode
    assert all(r["memory_usage"]["calls"] == 0 for r in records if r["phase"] != "train")
    assert metrics["usage"]["memory"]["calls"] == len(model.calls) == 2 * len(train)
    assert metrics["memory_final"]["items"] > 0 and any(r["retrieved"] for r in records if r["phase"] == "test")
    assert [strip_measured(r) for r in records] == [strip_measured(r) for r in again]


def test_memory_management_calls_are_in_the_transcripts_next_to_their_episode(tmp_path):
    from memrl_bench.core.transcripts import TRANSCRIPTS, TranscriptLog

    _, records, model = run_synthetic(tmp_path, "a", {"name": "mem0"})
    (path,) = tmp_path.rglob(TRANSCRIPTS)
    by_episode = {r["episode_id"]: r for r in TranscriptLog(path.parent).read()}
    train = [r["episode_id"] for r in records if r["phase"] == "train"]
    assert set(by_episode) == set(train)  # the synthetic env acts without an LLM: only memory calls
    calls = [c for e in train for c in by_episode[e]["memory_calls"]]
    assert [c["purpose"] for c in by_episode[train[0]]["memory_calls"]] == ["mem0_extract", "mem0_update"]
    assert [c["messages"] for c in calls] == [[m] for m in (call[0] for call in model.calls)]
    assert all(c["completion"] and c["parsed"] for c in calls)
