"""Reflexion-style retry within a task (protocol.retries, memrl_bench/protocols/retry.py): the reflection a model
writes read as real models write it, the note and the reflexion memory of 3, the judge's verdict, and runs on
the synthetic world that count attempts, keep SR@1 and SR@k apart and resume."""

from __future__ import annotations

import asyncio
import gzip
import json
import math

import pytest

from memrl_bench import prompts, protocols
from memrl_bench.core.config import ConfigError
from memrl_bench.core.records import memory_items
from memrl_bench.core.runfolder import RunFolder, retries_complete
from memrl_bench.core.schema import Episode, Task, Turn
from memrl_bench.methods.base import ENDED_HERE
from memrl_bench.methods.llm_ops import OpError
from memrl_bench.protocols.retry import REFLECTIONS_KEPT, Chain, Retrier, kind_suffix, labels, reflection_text
from memrl_bench.runner.loop import run
from tests.helpers import config
from tests.memory_llm_helpers import ScriptedModel, is_prompt

TASK = Task("db-7", "train", "Give every employee in the sales department a 10% raise.")


def attempt(episode_id: str = "train-e01-00000-s0", success: bool = False) -> Episode:
    turns = [
        Turn("SQL: SELECT * FROM employees WHERE dept = 'sales'", "[(1, 'Ann', 'sales', 5000)]"),
        Turn("SQL: UPDATE employees SET salary = salary * 1.1", "UPDATE 14"),
        Turn("COMMIT", "The answer is wrong."),
    ]
    return Episode(episode_id, TASK.id, "train", "train", 1, 0, 0, success, float(success), "ok", turns=turns)


def retrier(model=None, **keys) -> Retrier:
    settings = protocols.build({"retries": 2, **keys}).settings
    loop = asyncio.new_event_loop()
    return Retrier(settings, model, graded_ending=True, run=loop.run_until_complete)


def play(r: Retrier, coroutine_of):
    calls = r.calls()
    return r.ctx.run(coroutine_of(calls)), calls


# ---- what a model writes --------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "New plan: I updated every employee instead of only sales. Next time add WHERE dept = 'sales' to the UPDATE, then COMMIT.",
        "**New plan:** I updated every employee instead of only sales. Next time add WHERE dept = 'sales' to the UPDATE, then COMMIT.",
        "```\nPlan: I updated every employee instead of only sales. Next time add WHERE dept = 'sales' to the UPDATE, then COMMIT.\n```",
        "  I updated every employee instead of only sales. Next time add WHERE dept = 'sales' to the UPDATE, then COMMIT.\n",
    ],
)
def test_a_reflection_is_read_without_its_label_or_fence(reply):
    assert reflection_text(reply) == (
        "I updated every employee instead of only sales. Next time add WHERE dept = 'sales' to the UPDATE, then COMMIT."
    )


@pytest.mark.parametrize("reply", ["", "New plan:", "```\n\n```"])
def test_an_empty_reflection_is_an_op_error(reply):
    with pytest.raises(OpError):
        reflection_text(reply)


# ---- the note (MemRL) and the reflexion memory (Reflexion) ------------------------------------


def test_the_note_shows_the_previous_attempt_and_its_verdict_without_a_call():
    model = ScriptedModel([])
    note, calls = play(retrier(model), lambda calls: retrier(model).note(calls, Chain([attempt()]), TASK))
    assert "UPDATE employees SET salary = salary * 1.1" in note and "UPDATE 14" in note
    assert "was incorrect" in note and "attempt 2 of at most 3" in note
    assert "The answer is wrong." in note  # the env's verdict was the verdict: nothing to hide
    assert model.calls == [] and calls.result().usage_by_episode == {}


def test_after_a_judge_the_note_hides_the_envs_grading():
    r = retrier(ScriptedModel([]), verdict="llm_judge")
    note, _ = play(r, lambda calls: r.note(calls, Chain([attempt()]), TASK))
    assert "The answer is wrong." not in note and ENDED_HERE in note and "judged a failure" in note


def test_reflexion_writes_one_plan_per_failure_with_256_tokens_at_temperature_0_and_keeps_the_last_3():
    replies = [f"New plan: mistake {n}; filter on dept = 'sales' before the UPDATE." for n in range(1, 6)]
    model = ScriptedModel(replies)
    r = retrier(model, reflection="reflexion")
    chain = Chain([attempt()])
    for n in range(1, 6):
        chain.attempts.append(attempt(f"train-e01-00000-s0-a{n}"))
        block, calls = play(r, lambda calls: r.note(calls, chain, TASK))
        assert calls.result().usage_by_episode[f"train-e01-00000-s0-a{n}"].calls == 1  # charged to the attempt it reflects on
    assert len(model.calls) == 5 and all(o == {"max_tokens": 256, "temperature": 0.0} for o in model.overrides)
    assert all(is_prompt(c[0]["content"], "retry_reflexion") for c in model.calls)
    last_prompt = model.calls[-1][0]["content"]
    assert "mistake 4" in last_prompt and "mistake 2" in last_prompt and "mistake 1" not in last_prompt  # the last 3 earlier plans
    assert [f"mistake {n}" in block for n in range(1, 6)] == [False, False, True, True, True]
    assert REFLECTIONS_KEPT == 3 and block.startswith(prompts.load("retry_reflexion_block").split("{")[0].strip())


def test_an_unreadable_reflection_is_repaired_once_then_the_retry_goes_on_with_the_plans_it_has():
    model = ScriptedModel(["I am not sure what happened.\n\nNew plan:", "New plan:"])
    r = retrier(model, reflection="reflexion")
    block, calls = play(r, lambda calls: r.note(calls, Chain([attempt()]), TASK))
    assert block == "" and len(model.calls) == 2 and calls.result().op_errors_by_episode == {"train-e01-00000-s0": 1}


# ---- the verdict ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "succeeded"),
    [
        ("Thoughts: the UPDATE has no WHERE clause, so every department got the raise.\nStatus: failure", False),
        ("Thoughts: it filtered on sales and committed.\n\n**Status:** success", True),
        ("The agent updated the salaries. I think it worked.", False),  # no verdict after the repair: a failure
    ],
)
def test_the_judge_decides_from_the_attempt_without_the_envs_grading(reply, succeeded):
    model = ScriptedModel(lambda prompt: reply)
    r = retrier(model, verdict="llm_judge")
    ok, calls = play(r, lambda calls: r.succeeded(calls, attempt(success=not succeeded), TASK))
    assert ok is succeeded
    assert all("The answer is wrong." not in c[0]["content"] and ENDED_HERE in c[0]["content"] for c in model.calls[:1])
    assert calls.result().usage_by_episode["train-e01-00000-s0"].calls == len(model.calls)


def test_ground_truth_is_the_episodes_success_without_a_call():
    model = ScriptedModel([])
    r = retrier(model)
    assert play(r, lambda calls: r.succeeded(calls, attempt(success=True), TASK))[0] is True
    assert play(r, lambda calls: r.succeeded(calls, attempt(success=False), TASK))[0] is False
    assert model.calls == []


# ---- the settings --------------------------------------------------------------------------------


def test_retry_keys_need_retries_and_a_model_when_they_ask_one():
    with pytest.raises(ConfigError, match="reflection has no effect without retries"):
        protocols.build({"reflection": "reflexion"})
    with pytest.raises(ConfigError, match="reflection=reflexion asks a model"):
        Retrier(protocols.build({"retries": 1, "reflection": "reflexion"}).settings, None, True, None)
    settings = protocols.build({"retries": 3, "retry_phases": ["train"]}).settings
    assert labels(settings) == ["retry_note"]  # no evaluation phase retried: no leak
    assert labels(protocols.build({"retries": 3}).settings) == ["retry_note", "retry_ground_truth_verdict_at_evaluation"]
    assert labels(protocols.build({}).settings) == [] and kind_suffix({}) == "" and kind_suffix({"retries": 3}) == "+retry3"


# ---- runs on the synthetic world -------------------------------------------------------------------

RETRY_RUN = {"protocol": {"epochs": 2, "retries": 2}, "env": {"outcome_temperature": 1.0}}


def _log(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]


def test_a_retry_run_counts_attempts_and_keeps_sr_at_1_and_sr_at_k_apart(tmp_path):
    metrics = run(config(**RETRY_RUN), tmp_path / "run")
    log = _log(tmp_path / "run")
    first = [r for r in log if r["attempt"] == 0]
    assert len(first) == json.loads((tmp_path / "run" / "manifest.json").read_text())["schedule_episodes"] == metrics["episodes"]
    for r in first:  # a chain: the scheduled episode, then its retries while the verdict (here the env's) is a failure
        chain = [r] + [x for x in log if x["episode_id"].startswith(r["episode_id"] + "-a")]
        assert [x["attempt"] for x in chain] == list(range(len(chain))) == list(range(r["info"]["retry"]["attempts"]))
        assert [x["success"] for x in chain[:-1]] == [False] * (len(chain) - 1)
        assert chain[-1]["success"] or len(chain) == 3
        assert all(x["info"]["retry"]["note_chars"] > 0 for x in chain[1:])
    retried = {r["episode_id"] for r in log if r["attempt"]}
    assert retried and log.index(first[1]) > log.index(first[0])
    validation = metrics["retries"]["validation"][2]
    assert validation["sr_at_1"] == metrics["success_rate"]["validation"][2]  # success_rate is SR@1
    assert (
        validation["sr_at_k"] >= validation["sr_at_1"]
        and metrics["retries"]["train"][1]["sr_at_k"] > metrics["retries"]["train"][1]["sr_at_1"]
    )
    assert 1 < validation["attempts_mean"] <= 3
    assert "retry_ground_truth_verdict_at_evaluation" in metrics["labels"]
    # learn() saw each task's final attempt only: every memory comes from one
    sources = {i.provenance.episode_id for i in memory_items(tmp_path / "run" / "memory" / "final")}
    assert sources and sources <= _final_ids(log) and sources & retried


def _final_ids(log: list[dict]) -> set[str]:
    by_base: dict[str, str] = {}
    for r in log:
        by_base[r["episode_id"].split("-a")[0]] = r["episode_id"]
    return set(by_base.values())


def test_a_run_without_retries_logs_no_attempt_and_no_retries_block(tmp_path):
    metrics = run(config(protocol={"epochs": 1}), tmp_path / "run")
    assert "retries" not in metrics and all("attempt" not in r for r in _log(tmp_path / "run"))


def test_a_batch_torn_between_an_attempt_and_its_retry_is_played_again_on_resume(tmp_path):
    cfg = config(**RETRY_RUN)
    folder = tmp_path / "run"
    run(cfg, folder)
    log = _log(folder)
    assert retries_complete([r for r in log if (r["phase"], r["epoch"], r["batch_index"]) == ("train", 1, 0)])
    # the log as a crash would leave it: the last batch's final retry lost at a line's end
    last_retry = max(i for i, r in enumerate(log) if r["attempt"])
    kept = log[:last_retry]
    (folder / "COMPLETE").unlink()
    (folder / "episodes.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))
    assert not retries_complete([r for r in kept if (r["phase"], r["split"], r["epoch"], r["batch_index"]) == _key(log[last_retry])])
    run(cfg, folder)
    again = _log(folder)
    assert [r["episode_id"] for r in again] == [r["episode_id"] for r in log]
    RunFolder(folder).verify_complete(json.loads((folder / "manifest.json").read_text()))


def _key(record: dict) -> tuple:
    return (record["phase"], record["split"], record["epoch"], record["batch_index"])


def test_reflexion_with_a_judge_charges_every_call_to_the_attempt_it_was_for(tmp_path):
    def reply(prompt: str) -> str:
        if is_prompt(prompt, "llm_ops_judge"):
            return "Thoughts: the agent acted, but nothing shows the task was done.\nStatus: failure"
        return "Reflection: I acted without checking the memories.\nNew plan: pick the memory of the same task type first."

    model = ScriptedModel(reply)
    cfg = config(protocol={"epochs": 1, "retries": 2, "reflection": "reflexion", "verdict": "llm_judge", "retry_phases": ["test"]})
    metrics = run(cfg, tmp_path / "run", llm=model)
    log = _log(tmp_path / "run")
    tests = [r for r in log if r["phase"] == "test"]
    assert all(("attempt" in r) == (r["phase"] == "test") for r in log)  # a phase not retried logs as without retries
    assert all(r["info"]["retry"]["attempts"] == 3 for r in tests if r["attempt"] == 0)  # the judge never saw a success
    judged = [c for c in model.calls if is_prompt(c[0]["content"], "llm_ops_judge")]
    reflected = [c for c in model.calls if is_prompt(c[0]["content"], "retry_reflexion")]
    assert len(judged) == len(reflected) == 2 * sum(r["attempt"] == 0 for r in tests)
    assert all(f"\n{ENDED_HERE}" in c[0]["content"] and "\nsuccess" not in c[0]["content"] for c in judged)
    for r in tests:  # the last attempt is neither judged nor reflected on
        assert r["memory_usage"]["calls"] == (0 if r["attempt"] == 2 else 2) and r["info"]["retry"]["call_tokens"] >= 0
    assert metrics["usage"]["memory"]["calls"] == len(model.calls)
    assert metrics["labels"][:1] == ["retry_reflexion"] and "retry_ground_truth_verdict_at_evaluation" not in metrics["labels"]
    transcripts = tmp_path / "run" / "transcripts.jsonl.gz"
    records = [json.loads(line) for line in gzip.open(transcripts, "rt")]
    purposes = [c["purpose"] for t in records for c in t["memory_calls"]]
    assert purposes.count("retry_reflexion") == len(reflected) and purposes.count("llm_ops_judge") == len(judged)


def test_the_report_shows_sr_at_1_and_sr_at_k_of_a_retry_run_apart_and_nothing_of_retries_without_them(tmp_path):
    from memrl_bench.report.aggregate import aggregate
    from memrl_bench.report.load import load
    from memrl_bench.report.tables import all_tables

    run(config(**RETRY_RUN), tmp_path / "runs" / "retry")
    run(config(protocol={"epochs": 2}, env={"outcome_temperature": 1.0}), tmp_path / "runs" / "plain")
    results = load(tmp_path / "runs")
    runs = results.runs.set_index("run")
    retry_row, plain_row = runs.loc[runs.index.str.contains("retr")].iloc[0], runs.loc[~runs.index.str.contains("retr")].iloc[0]
    metrics = json.loads((tmp_path / "runs" / "retry" / "metrics.json").read_text())
    assert retry_row["retry_sr_at_k"] == metrics["retries"]["test_in_distribution"]["2"]["sr_at_k"]
    assert retry_row["retry_sr_at_1"] == metrics["success_rate"]["test_in_distribution"]["2"]
    assert retry_row["poison_memories"] == 0 and retry_row["episodes"] == metrics["episodes"]  # retries are neither poison nor SR
    assert math.isnan(plain_row["retry_sr_at_k"])
    tables = all_tables(results, aggregate(results))
    assert "retries" in tables and "retry_ground_truth_verdict_at_evaluation" in tables["retries"].note
    assert "retry_ground_truth_verdict_at_evaluation" in retry_row["labels"]


@pytest.mark.parametrize("protocol", ["held_out", "repair", "drift"])
def test_any_protocol_retries_from_the_command_line_and_its_runs_are_a_kind_of_their_own(protocol, tmp_path):
    from memrl_bench.findings import load_runs
    from tests.contracts.test_protocol_contract import NEEDS, SMALL
    from tests.helpers import composed

    cfg = composed(*SMALL, f"protocol={protocol}", *NEEDS[protocol], "+protocol.retries=2", "env.outcome_temperature=1")
    plain = composed(*SMALL, f"protocol={protocol}", *NEEDS[protocol], "env.outcome_temperature=1")
    assert "retries" not in plain["protocol"] and cfg["protocol"]["retries"] == 2
    metrics = run(cfg, tmp_path / "runs" / "retry")
    log = _log(tmp_path / "runs" / "retry")
    manifest = json.loads((tmp_path / "runs" / "retry" / "manifest.json").read_text())
    assert manifest["schedule_episodes"] == sum(r["attempt"] == 0 for r in log) < len(log)
    assert {"retry_note", "retry_ground_truth_verdict_at_evaluation"} <= set(metrics["labels"])
    (kind,) = {r.kind for r in load_runs(tmp_path / "runs")}
    assert kind.endswith("+retry2") and not kind.startswith("+")


def test_a_resume_that_replays_learn_from_the_log_ends_where_the_whole_run_ends(tmp_path):
    import shutil

    from memrl_bench.core.schema import strip_measured

    cfg = config(protocol={"epochs": 2, "retries": 2, "checkpoint_interval_s": 1e9}, env={"outcome_temperature": 1.0})
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    run(cfg, whole)
    shutil.copytree(whole, resumed)
    for name in ("COMPLETE", "metrics.json"):
        (resumed / name).unlink()
    for snapshot in ("final", "epoch_2", "checkpoint"):  # memory before epoch 1's end is rebuilt by replaying learn() from the log
        shutil.rmtree(resumed / "memory" / snapshot)
    log = _log(whole)
    cut = next(i for i, r in enumerate(log) if (r["phase"], r["epoch"], r["batch_index"]) == ("train", 2, 2))
    (resumed / "episodes.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in log[:cut]))
    run(cfg, resumed)
    assert [strip_measured(r) for r in _log(resumed)] == [strip_measured(r) for r in log]
    assert [i.to_dict() for i in memory_items(resumed / "memory" / "final")] == [
        i.to_dict() for i in memory_items(whole / "memory" / "final")
    ]
