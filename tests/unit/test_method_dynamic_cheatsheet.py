"""Dynamic Cheatsheet: DC-Cu's sequential curation, DC-RS's synthesis at retrieval (charged there, no state
changed), the tag extraction on real-model-style replies, the hard cap, repair, cost, resume."""

import asyncio
import dataclasses

import pytest

from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import strip_measured
from memrl_bench.methods.base import MethodContext, fingerprint
from memrl_bench.methods.dynamic_cheatsheet import DynamicCheatsheet, capped, cheatsheet_text
from memrl_bench.methods.llm_ops import OpError
from tests.memory_llm_helpers import ScriptedModel, context, experience, is_prompt, query, run_synthetic, whole_and_resumed


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def curator(prompt: str) -> str:
    """What an instruction model writes: its own check of the attempt, a quoted format line, then the sheet."""
    task = prompt.split("Task: ")[1].split("\n")[0] if "Task: " in prompt else "?"
    new = prompt.split("New task: ")[1].split("\n")[0] if "New task: " in prompt else None
    if is_prompt(prompt, "dynamic_cheatsheet_curate"):
        old = prompt.split("Current cheatsheet:\n")[1].split("\n\nTask: ")[0]
        kept = "" if old == "(empty)" else old + "\n"
        verdict = "correct" if "Taken." in prompt else "wrong"
        entry = f"<memory_item><description>{task}: the attempt was {verdict}.</description></memory_item> ** Count: 1"
        return f"The attempt looks {verdict}. I will use the <cheatsheet> format.\n\n<cheatsheet>\n{kept}{entry}\n</cheatsheet>\nDone."
    if is_prompt(prompt, "dynamic_cheatsheet_synthesis"):
        return f"```\n<cheatsheet>\nFor {new}: start from what the earlier attempts show.\n</cheatsheet>\n```"
    raise AssertionError(f"unexpected prompt: {prompt[:80]}")


def make(loop, model=None, **cfg):
    return DynamicCheatsheet(cfg, context(model or ScriptedModel(curator), loop))


def test_needs_an_llm():
    with pytest.raises(ConfigError, match="method dynamic_cheatsheet manages memory with an LLM"):
        DynamicCheatsheet({}, MethodContext(seed=0))


def test_the_sheet_is_read_between_the_last_tags():
    assert cheatsheet_text("Use <cheatsheet>...</cheatsheet> tags.\n<cheatsheet>\nA\n</cheatsheet>") == "A"
    with pytest.raises(OpError, match="no cheatsheet"):
        cheatsheet_text("Here is the updated cheatsheet:\n- look first")
    with pytest.raises(OpError, match="no cheatsheet"):
        cheatsheet_text("<cheatsheet>\n  \n</cheatsheet>")


def test_cumulative_curates_after_each_episode_in_batch_order(loop):
    model = ScriptedModel(curator)
    m = make(loop, model)
    assert m.retrieve(query("take the key")).prompt_block == ""  # "(empty)" is not injected
    result = m.learn([experience(0, "take the key", True), experience(1, "open the door", False)])
    first, second = (call[0]["content"] for call in model.calls)
    assert "Current cheatsheet:\n(empty)\n" in first and "> take key\nTaken." in first
    assert "take the key: the attempt was correct." in second.split("Current cheatsheet:\n")[1]  # the second sees the first's sheet
    assert model.overrides == [{"temperature": 0.0}] * 2
    (sheet,) = m.items()
    assert sheet.content.splitlines() == [
        "<memory_item><description>take the key: the attempt was correct.</description></memory_item> ** Count: 1",
        "<memory_item><description>open the door: the attempt was wrong.</description></memory_item> ** Count: 1",
    ]
    assert sheet.provenance.episode_id == "train-e01-00001-s0"  # the latest contributing episode
    assert sheet.fields["contributors"] == ["train-e01-00000-s0", "train-e01-00001-s0"] and sheet.fields["version"] == 2
    assert result.usage_by_episode["train-e01-00000-s0"].calls == 1
    found = m.retrieve(query("anything at all"))
    assert [r.item_id for r in found.items] == ["cheatsheet"] and found.prompt_block.endswith(sheet.content)


def test_the_curator_never_sees_the_real_outcome(loop):
    exps = [experience(0, "take the key", True), experience(1, "open the door", False)]
    flipped = [dataclasses.replace(e, episode=dataclasses.replace(e.episode, success=not e.episode.success)) for e in exps]
    a_model, b_model = ScriptedModel(curator), ScriptedModel(curator)
    a, b = make(loop, a_model), make(loop, b_model)
    a.learn(exps)
    b.learn(flipped)
    assert a_model.calls == b_model.calls and a.items()[0].content == b.items()[0].content


def test_no_sheet_in_the_answer_is_repaired_then_the_sheet_is_kept(loop):
    model = ScriptedModel(["<cheatsheet>\nA\n</cheatsheet>", "Updated:\n- A\n- B", "- A\n- B"])
    m = make(loop, model)
    m.learn([experience(0, "take the key", True)])
    result = m.learn([experience(1, "open the door", False)])
    assert "put the whole new cheatsheet between <cheatsheet> and </cheatsheet>" in model.calls[2][-1]["content"]
    assert m.items()[0].content == "A" and m.items()[0].fields["version"] == 1
    assert result.op_errors_by_episode == {"train-e01-00001-s0": 1}


def test_the_hard_cap_cuts_at_a_line_break_and_records_the_cut(loop):
    assert capped("abc\ndef\nghi", 9) == ("abc\ndef", 4) and capped("abcdef", 4) == ("abcd", 2) and capped("ab", 4) == ("ab", 0)
    long = "\n".join(f"line {n:03d} of a rambling sheet" for n in range(40))
    m = make(loop, ScriptedModel([f"<cheatsheet>{long}</cheatsheet>"]), max_cheatsheet_chars=100, max_tokens=512)
    m.learn([experience(0, "take the key", True)])
    sheet = m.items()[0]
    assert len(sheet.content) <= 100 and sheet.content.endswith("rambling sheet")
    assert sheet.fields["cut_chars"] == len(long) - len(sheet.content)
    assert "under 100 characters" in m.ctx.llm.calls[0][0]["content"] and m.ctx.llm.overrides == [{"temperature": 0.0, "max_tokens": 512}]


def test_retrieval_synthesis_writes_a_sheet_for_each_task_at_retrieval(loop, tmp_path):
    model = ScriptedModel(curator)
    m = make(loop, model, variant="retrieval_synthesis")
    assert m.retrieve(query("take the red key")).prompt_block == "" and model.calls == []  # empty memory: no call
    m.learn([experience(n, t, n % 2 == 0) for n, t in enumerate(["take the red key", "heat the soup", "take the blue key", "open a door"])])
    assert model.calls == [] and len(m.items()) == 4  # pairs stored, no sheet yet
    before = fingerprint(m, tmp_path / "before")
    found = m.retrieve_batch([query("take the red key", "validation-e01-00000-s0"), query("cook the soup", "validation-e01-00001-s0")])
    assert fingerprint(m, tmp_path / "after") == before
    prompt = model.calls[0][0]["content"]
    assert is_prompt(prompt, "dynamic_cheatsheet_synthesis") and "New task: take the red key" in prompt
    shown = prompt.split("Earlier similar tasks:\n")[1]
    assert shown.index("[1] Task: take the red key") < shown.index("[2] Task: take the blue key") and "[4]" not in shown
    assert found[0].prompt_block.endswith("For take the red key: start from what the earlier attempts show.")
    assert found[0].usage.calls == 1 and found[0].memory_calls[0]["purpose"] == "dynamic_cheatsheet_synthesis"
    assert [r.item_id for r in found[0].items] == ["train-e01-00000-s0", "train-e01-00002-s0", "train-e01-00003-s0"]


def test_retrieval_synthesis_carries_the_last_episodes_sheet_also_on_a_resume(loop):
    first = [experience(n, t, True) for n, t in enumerate(["take the red key", "heat the soup"])]
    second = [experience(2, "take the blue key", False), experience(3, "cook the soup", True)]
    played, resumed = make(loop, variant="retrieval_synthesis"), make(loop, variant="retrieval_synthesis")
    for m in (played, resumed):
        m.learn(first)
    found = played.retrieve_batch([query(e.task.description, e.episode.episode_id) for e in second])
    calls_before = len(played.ctx.llm.calls)
    played.learn([dataclasses.replace(e, retrieval=r) for e, r in zip(second, found)])
    assert len(played.ctx.llm.calls) == calls_before  # the sheet came with the retrieval
    result = resumed.learn(second)
    assert result.usage_by_episode["train-e01-00003-s0"].calls == 1  # redone on a resume, charged to that episode
    for m in (played, resumed):
        sheet = m.items()[0]
        assert sheet.content == "For cook the soup: start from what the earlier attempts show."
        assert sheet.provenance.episode_id == "train-e01-00003-s0" and sheet.fields["sources"] == [
            "train-e01-00001-s0",
            "train-e01-00000-s0",
        ]
    assert [i.to_dict() for i in played.items()] == [i.to_dict() for i in resumed.items()]


def test_a_failed_synthesis_injects_the_pairs_themselves(loop):
    model = ScriptedModel(lambda prompt: "I cannot help with that.")
    m = make(loop, model, variant="retrieval_synthesis")
    m.learn([experience(0, "take the red key", True)])
    found = m.retrieve(query("take the red key"))
    assert found.prompt_block.startswith("Earlier similar tasks and the attempts") and "[1] Task: take the red key" in found.prompt_block
    assert found.usage.calls == 2  # the call and its repair


@pytest.mark.parametrize("variant", ["cumulative", "retrieval_synthesis"])
def test_snapshot_restore_continue_equals_an_uninterrupted_run(loop, tmp_path, variant):
    first = [experience(0, "take the red key", True), experience(1, "heat the soup", False)]
    batches = [first, [experience(2, "open the blue door", True)]]
    whole, resumed = whole_and_resumed(lambda: make(loop, variant=variant), batches, tmp_path)
    assert fingerprint(resumed, tmp_path / "x") == fingerprint(whole, tmp_path / "y") and resumed.items()[0].id == "cheatsheet"
    assert resumed.retrieve(query("soup")).prompt_block == whole.retrieve(query("soup")).prompt_block


@pytest.mark.parametrize("variant", ["cumulative", "retrieval_synthesis"])
def test_a_whole_synthetic_run_is_audited_costed_and_reproducible(tmp_path, variant):
    method = {"name": "dynamic_cheatsheet", "variant": variant}
    metrics, records, model = run_synthetic(tmp_path, "a", method)
    _, again, _ = run_synthetic(tmp_path, "b", method)
    assert metrics["usage"]["memory"]["calls"] == len(model.calls) > 0
    evaluation = [r for r in records if r["phase"] != "train"]
    if variant == "cumulative":
        assert all(r["memory_usage"]["calls"] == 1 for r in records if r["phase"] == "train") and all(
            r["memory_usage"]["calls"] == 0 for r in evaluation
        )
    else:  # a synthesis per evaluated episode, charged to it
        assert evaluation and all(r["memory_usage"]["calls"] == 1 for r in evaluation)
    assert any(r["retrieved"] for r in records if r["phase"] == "test")
    assert [strip_measured(r) for r in records] == [strip_measured(r) for r in again]
