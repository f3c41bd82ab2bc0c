"""ExpeL: the four rule operations and their counters, the cap, pairing, examples, repair, resume."""

import asyncio

import pytest

from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import MemoryItem, Provenance, strip_measured
from memrl_bench.methods.base import MethodContext, fingerprint
from memrl_bench.methods.expel import ExpeL
from tests.memory_llm_helpers import ScriptedModel, answer, context, experience, is_prompt, query, run_synthetic, whole_and_resumed


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def ops(*entries):
    return answer({"operations": list(entries)})


def make(model, loop, **cfg):
    return ExpeL(cfg, context(model, loop))


def with_rules(loop, *importances, **cfg):
    """An ExpeL whose rules "rule i." have the given importances, in that order."""
    m = make(ScriptedModel([]), loop, **cfg)
    prov = Provenance("t", "train", "train", 1, "train-e01-99999-s0", True)
    m.rules = [MemoryItem(f"rule-{i}", f"rule {i}.", prov, {"importance": imp, "edited_by": []}) for i, imp in enumerate(importances)]
    m.next_rule = len(importances)
    return m


def counters(m):
    return [(r.content, r.fields["importance"]) for r in m.rules]


def test_needs_an_llm():
    with pytest.raises(ConfigError, match="method expel manages memory with an LLM"):
        ExpeL({}, MethodContext(seed=0))


def test_add_from_successes_starts_rules_at_2(loop):
    model = ScriptedModel([ops({"op": "ADD", "rule": "Look before you act."}, {"op": "ADD", "rule": "Take keys first."})])
    m = make(model, loop)
    exp = experience(0, "take the key", True)
    result = m.learn([exp])
    assert counters(m) == [("Look before you act.", 2), ("Take keys first.", 2)]
    assert all(r.provenance.episode_id == exp.episode.episode_id for r in m.rules)
    prompt = model.calls[0][0]["content"]
    assert is_prompt(prompt, "expel_successes") and "(none yet)" in prompt and "Task: take the key\n> look" in prompt
    assert "list of rules is full" not in prompt and model.overrides[0] == {"temperature": 0.0}
    assert m.examples.get(exp.episode.episode_id).content.startswith("Task: take the key")
    assert result.usage_by_episode[exp.episode.episode_id].calls == 1


def test_agree_edit_remove_counters_and_drop_at_zero(loop):
    m = with_rules(loop, 3, 2, 1, 1)
    m.apply(
        [("AGREE", "rule-0", ""), ("EDIT", "rule-1", "rule 1, improved."), ("REMOVE", "rule-2", ""), ("REMOVE", "rule-3", "")],
        experience(5, "x", True).episode,
        full=False,
    )
    assert counters(m) == [("rule 0.", 4), ("rule 1, improved.", 3)]  # rules 2 and 3 fell to 0 and were dropped
    assert m.rules[1].fields["edited_by"] == ["train-e01-00005-s0"] and m.rules[1].provenance.episode_id == "train-e01-99999-s0"


def test_rules_are_sorted_by_importance_and_ties_keep_their_order(loop):
    m = with_rules(loop, 2, 2, 2)
    m.apply([("AGREE", "rule-2", ""), ("ADD", None, "new rule.")], experience(5, "x", True).episode, full=False)
    assert counters(m) == [("rule 2.", 3), ("rule 0.", 2), ("rule 1.", 2), ("new rule.", 2)]


def test_a_duplicate_add_is_ignored_and_an_unchanged_edit_counts_as_agree(loop):
    m = with_rules(loop, 2)
    m.apply([("EDIT", "rule-0", "  Rule 0. "), ("ADD", None, "RULE 0.")], experience(5, "x", True).episode, full=False)
    assert counters(m) == [("rule 0.", 3)] and m.rules[0].fields["edited_by"] == []


def test_at_the_cap_remove_counts_3_the_prompt_says_full_and_the_lowest_are_dropped(loop):
    model = ScriptedModel([ops({"op": "REMOVE", "id": 1}, {"op": "ADD", "rule": "A new rule."}, {"op": "ADD", "rule": "Another rule."})])
    m = with_rules(loop, 5, 4, 4, 4, 4, 4, 4, 4, 4, 1)
    m.ctx.llm = model
    m.learn([experience(0, "take the key", True)])
    assert "The list of rules is full" in model.calls[0][0]["content"] and "10. rule 9." in model.calls[0][0]["content"]
    assert len(m.rules) == 10
    assert m.rules[-1].fields["importance"] == 2 and ("rule 0.", 2) in counters(m)  # 5 - 3
    assert "rule 9." not in [r.content for r in m.rules]  # importance 1: below the cap
    assert [c for c, _ in counters(m)].count("A new rule.") + [c for c, _ in counters(m)].count("Another rule.") == 1


def test_a_failure_is_compared_with_the_most_similar_success(loop):
    model = ScriptedModel([ops({"op": "ADD", "rule": "Search for the key first."}), ops()])
    m = make(model, loop)
    win, loss = experience(0, "take the red key", True), experience(1, "take the red key", False, task_id="t-other")
    m.learn([win, loss])
    compare = model.calls[0][0]["content"]
    assert is_prompt(compare, "expel_compare")
    assert compare.index("There is no key here.") < compare.index("SUCCESSFUL ATTEMPT") < compare.index("Taken.")
    assert is_prompt(model.calls[1][0]["content"], "expel_successes")
    assert m.rules[0].provenance.episode_id == loss.episode.episode_id


def test_a_failure_without_a_similar_success_makes_no_call(loop):
    model = ScriptedModel([ops()])
    m = make(model, loop)
    m.learn([experience(0, "take the red key", True), experience(1, "cook a meal in the kitchen", False)])
    assert len(model.calls) == 1 and is_prompt(model.calls[0][0]["content"], "expel_successes")


def test_successes_are_critiqued_in_groups_charged_to_the_first(loop):
    model = ScriptedModel([ops(), ops()])
    m = make(model, loop, success_critique_num=2)
    batch = [experience(i, f"task {i}", True) for i in range(3)]
    result = m.learn(batch)
    assert len(model.calls) == 2 and "Task: task 1" in model.calls[0][0]["content"] and "Task: task 2" in model.calls[1][0]["content"]
    assert set(result.usage_by_episode) == {batch[0].episode.episode_id, batch[2].episode.episode_id}


def test_retrieve_injects_all_rules_and_the_two_most_similar_successes_one_per_task(loop, tmp_path):
    model = ScriptedModel([ops({"op": "ADD", "rule": "Look first."})])
    m = make(model, loop)
    m.learn(
        [
            experience(0, "take the red key", True, task_id="a"),
            experience(1, "take the red key", True, task_id="a"),
            experience(2, "take the blue key", True),
            experience(3, "cook", True),
        ]
    )
    before = fingerprint(m, tmp_path / "a")
    r = m.retrieve(query("take the red key"))
    assert [i.item_id for i in r.items] == ["rule-0", "train-e01-00000-s0", "train-e01-00002-s0"]
    assert r.items[0].score == 2.0 and r.items[1].similarity == pytest.approx(1.0)
    assert r.prompt_block.startswith(
        "Rules learned from earlier tasks:\n1. Look first.\n\nSuccessful examples of similar tasks:\nTask: take the red key"
    )
    assert fingerprint(m, tmp_path / "b") == before


def test_an_invented_rule_number_is_repaired(loop):
    m = with_rules(loop, 2)
    model = ScriptedModel([ops({"op": "AGREE", "id": 2}), ops({"op": "AGREE", "id": 1})])
    m.ctx.llm = model
    m.learn([experience(0, "x", True)])
    assert "unknown id 2; valid ids: 1" in model.calls[1][2]["content"] and counters(m) == [("rule 0.", 3)]


def test_bad_operations_twice_are_skipped_whole_and_counted(loop):
    m = with_rules(loop, 2)
    bad = ops({"op": "ADD", "rule": "Fine rule."}, {"op": "AGREE", "id": 1}, {"op": "REMOVE", "id": 1})
    model = ScriptedModel([bad, "REMOVE 1: rule 0."])
    m.ctx.llm = model
    exp = experience(0, "x", True)
    result = m.learn([exp])
    assert "second operation" in model.calls[1][2]["content"]
    assert counters(m) == [("rule 0.", 2)] and result.op_errors_by_episode == {exp.episode.episode_id: 1}
    assert result.usage_by_episode[exp.episode.episode_id].calls == 2


def test_unknown_operation_and_missing_rule_text_are_rejected(loop):
    model = ScriptedModel([ops({"op": "MERGE", "id": 1}), ops({"op": "ADD"})])
    m = make(model, loop)
    result = m.learn([experience(0, "x", True)])
    assert "must be one of REMOVE, AGREE, EDIT, ADD" in model.calls[1][2]["content"] and m.rules == []
    assert sum(result.op_errors_by_episode.values()) == 1


def scripted_insights(prompt: str) -> str:
    """A deterministic ExpeL model: ADD a rule per prompt, AGREE with rule 1, EDIT rule 2."""
    task = prompt.split("Task: ")[1].split("\n")[0]
    entries = [{"op": "ADD", "rule": f"When asked to {task}, plan first."}]
    if "1. " in prompt:
        entries.append({"op": "AGREE", "id": 1})
    if "\n2. " in prompt:
        entries.append({"op": "EDIT", "id": 2, "rule": f"Edited for {task}."})
    return ops(*entries)


def test_snapshot_restore_continue_equals_an_uninterrupted_run(loop, tmp_path):
    first = [experience(i, t, i != 1) for i, t in enumerate(["take the red key", "take the red key", "open the door"])]
    second = [experience(i + 3, t, i != 0) for i, t in enumerate(["open the door", "cook the meal", "take the blue key"])]
    whole, resumed = whole_and_resumed(lambda: make(ScriptedModel(scripted_insights), loop), [first, second], tmp_path)
    assert any(r.fields["edited_by"] for r in whole.rules) and max(r.fields["importance"] for r in whole.rules) > 2
    assert fingerprint(resumed, tmp_path / "x") == fingerprint(whole, tmp_path / "y")
    for q in ["red key", "door", "meal"]:
        a, b = resumed.retrieve(query(q)), whole.retrieve(query(q))
        assert [(i.item_id, i.similarity, i.score) for i in a.items] == [(i.item_id, i.similarity, i.score) for i in b.items]


def test_a_whole_synthetic_run_is_audited_costed_and_reproducible(tmp_path):
    metrics, records, model = run_synthetic(tmp_path, "a", {"name": "expel"})
    _, again, _ = run_synthetic(tmp_path, "b", {"name": "expel"})
    assert metrics["usage"]["memory"]["calls"] == len(model.calls) > 0
    assert all(r["memory_usage"]["calls"] == 0 for r in records if r["phase"] != "train")
    test_retrievals = [r["retrieved"] for r in records if r["phase"] == "test"]
    assert all(any(i["item_id"].startswith("rule-") for i in items) for items in test_retrievals)
    assert [strip_measured(r) for r in records] == [strip_measured(r) for r in again]
