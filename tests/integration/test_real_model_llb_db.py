"""The model of the real-model studies acts: Qwen2.5-Coder-1.5B plays LifelongAgentBench-DB (issue 28).

The catalogue's smaller models solve none of these tasks (Qwen2.5-Coder-0.5B: 0 of 12 validation
tasks in BENCHMARKS.md, "Where the local model can act"); the 1.5B solved 10 of 12. This plays the
first six validation tasks with the study's setting (llb_db_world: 256 output tokens, 5 actions) and no
memory, one episode at a time (two in flight share the server's batches, which makes temperature-0
answers depend on timing: a run under load solved fewer), and asks that the model solves some of
them by its own SQL.
"""

import json
from pathlib import Path

import pytest

from memrl_bench.llm import catalogue as models
from memrl_bench.runner.loop import run
from tests.helpers import composed

pytestmark = [pytest.mark.llm, pytest.mark.slow]

MODEL = "qwen2.5-coder-1.5b"


def test_qwen_1_5b_solves_llb_db_tasks_by_its_own_sql(tmp_path):
    try:
        models.ensure(MODEL)
    except models.ModelError as err:
        pytest.skip(f"the {MODEL} model file is not available: {err}")
    cfg = composed(
        "env=llb_db",
        "method=none",
        "llm=local",
        f"llm.model={MODEL}",
        "llm.max_tokens=256",
        "llm.max_concurrency=1",
        "llm.timeout_s=900",
        f"llm.cache_path={tmp_path / 'cache.sqlite'}",
        "actor.max_steps=5",
        "protocol.epochs=1",
        "protocol.batch_size=6",
        "protocol.test_at_end=false",
        "+protocol.max_tasks={train: 1, validation: 6}",
        "progress=false",
    )
    run(cfg, tmp_path / "run")
    log = [json.loads(line) for line in (Path(tmp_path / "run") / "episodes.jsonl").read_text().splitlines()]
    scored = [e for e in log if e["phase"] == "validation"]
    assert (tmp_path / "run" / "COMPLETE").exists() and len(scored) == 6
    assert all(e["status"] in ("ok", "step_limit") for e in scored), [(e["status"], e["error"]) for e in scored]
    solved = [e for e in scored if e["success"]]
    assert len(solved) >= 3, [[t["action"] for t in e["turns"]] for e in scored]
    # Solved by SQL the model wrote and then an answer or a commit, not by a lucky first line.
    for episode in solved:
        actions = [t["action"] for t in episode["turns"]]
        statements = [a.removeprefix("SQL:").lstrip().upper() for a in actions]  # the env takes SQL with or without its label
        assert any(s.startswith(("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")) for s in statements), actions
        assert actions[-1].startswith(("ANSWER:", "COMMIT")), actions
