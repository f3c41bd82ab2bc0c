"""Reflexion-style retry within a task (protocol.retries) with a real local model on LifelongAgentBench-DB:
SmolLM2-135M fails most tasks, so most are retried; each variant logs every attempt as its own record, charges
the reflection and judge calls to the attempt they were for, and keeps SR@1 and SR@k apart."""

import gzip
import json

import pytest

from memrl_bench.runner.loop import run
from tests.helpers import composed
from tests.integration.test_methods_with_a_local_model import TINY_RUN

pytestmark = [pytest.mark.llm, pytest.mark.slow]


@pytest.mark.parametrize(
    "variant",
    [
        ["+protocol.reflection=note"],
        ["+protocol.reflection=reflexion"],
        ["+protocol.reflection=reflexion", "+protocol.verdict=llm_judge"],
    ],
    ids=["note", "reflexion", "reflexion_judged"],
)
def test_retry_runs_on_llb_db_with_a_local_model(tmp_path, variant):
    cfg = composed(
        "env=llb_db",
        "method=none",
        *TINY_RUN,
        f"llm.cache_path={tmp_path / 'cache.sqlite'}",
        "actor.max_steps=3",
        "protocol.epochs=1",
        "+protocol.max_tasks={train: 2, test: 2}",
        "+protocol.retries=2",
        *variant,
    )
    metrics = run(cfg, tmp_path / "run")
    folder = tmp_path / "run"
    log = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    assert (folder / "COMPLETE").exists() and all(e["status"] != "llm_error" for e in log)
    first = [e for e in log if e["attempt"] == 0]
    assert len(first) == metrics["episodes"] == 4
    assert sum(e["info"]["retry"]["attempts"] for e in first) == len(log)
    retried = [e for e in log if e["attempt"]]
    assert all(e["info"]["retry"]["note_chars"] >= 0 for e in retried)
    for phase, by_epoch in metrics["retries"].items():
        cell = by_epoch[1]
        assert cell["sr_at_k"] >= cell["sr_at_1"] == metrics["success_rate"][phase][1]
    calls = [c for t in gzip.open(folder / "transcripts.jsonl.gz", "rt") for c in json.loads(t)["memory_calls"]]
    judged = [e for e in log if e["info"]["retry"]["verdict"] is not None]
    if "+protocol.reflection=reflexion" in variant:  # one reflection per failed attempt that was retried, an unreadable one repaired once
        reflections = [c for c in calls if c["purpose"] == "retry_reflexion"]
        assert len(retried) <= len(reflections) <= 2 * len(retried)
        assert sum(c["problem"] is None for c in reflections) <= len(retried)
    if "+protocol.verdict=llm_judge" in variant:  # every judged attempt was judged by the model, which never saw the env's grading
        assert sum(c["purpose"] == "llm_ops_judge" for c in calls) >= len(judged)
        assert not any("The answer is right" in c["messages"][0]["content"] for c in calls if c["purpose"] == "llm_ops_judge")
        assert "retry_ground_truth_verdict_at_evaluation" not in metrics["labels"]
    else:
        assert not calls or all(c["purpose"] == "retry_reflexion" for c in calls)
        assert "retry_ground_truth_verdict_at_evaluation" in metrics["labels"]
