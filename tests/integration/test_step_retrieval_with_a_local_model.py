"""Step-level retrieval (retrieval_granularity=step) with a real local model on LifelongAgentBench-DB:
every step after the first asks memory by its observation, its turn logs what it was shown and how long
the retrieval took, and the steps of training episodes reach the step library (the snapshots' steps.jsonl)."""

import json

import pytest

from memrl_bench.runner.loop import run
from tests.helpers import composed
from tests.integration.test_methods_with_a_local_model import TINY_RUN

pytestmark = [pytest.mark.llm, pytest.mark.slow]


@pytest.mark.parametrize("method", ["rag", "memrl"])
def test_step_retrieval_runs_on_llb_db_with_a_local_model(tmp_path, method):
    cfg = composed(
        "env=llb_db",
        f"method={method}",
        "+method.retrieval_granularity=step",
        *TINY_RUN,
        f"llm.cache_path={tmp_path / 'cache.sqlite'}",
        "actor.max_steps=3",
        "+protocol.max_tasks={train: 2, test: 1}",
    )
    run(cfg, tmp_path / "run")
    log = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert (tmp_path / "run" / "COMPLETE").exists() and all(e["status"] != "llm_error" for e in log)
    assert all("retrieval" not in e["turns"][0] for e in log if e["turns"])
    later = [turn for e in log for turn in e["turns"][1:]]
    assert all("retrieval" in turn and turn["latency_s"]["retrieve"] >= 0 for turn in later)
    executed = [e for e in log if e["phase"] == "train" and sum(t["format_failure"] is None for t in e["turns"][1:])]
    if executed:  # a training episode executed a second step: it is in the step library
        steps = [json.loads(line) for path in (tmp_path / "run").rglob("steps.jsonl") for line in path.read_text().splitlines()]
        assert {s["provenance"]["episode_id"] for s in steps} & {e["episode_id"] for e in executed}
