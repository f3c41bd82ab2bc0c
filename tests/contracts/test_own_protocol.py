"""A protocol of one's own is one module and one YAML outside the package (tests/own_protocol.py,
tests/own_protocol_conf/protocol/unlabelled.yaml): composed by Hydra from a search path the
command names, it runs end to end through the runner, metrics, the report and the findings with
no package file edited."""

from __future__ import annotations

import json
from pathlib import Path

from memrl_bench.findings import load_runs
from memrl_bench.report import report
from memrl_bench.runner.loop import run
from tests.helpers import composed

CONF = Path(__file__).parents[1] / "own_protocol_conf"
SMALL = [
    "env.tasks.train=20",
    "env.tasks.validation=10",
    "env.tasks.test_in_distribution=10",
    "env.tasks.test_out_of_distribution=10",
    "protocol.epochs=2",
    "protocol.batch_size=10",
]


def test_an_own_protocol_runs_through_runner_metrics_report_and_findings(tmp_path):
    cfg = composed("protocol=unlabelled", f"hydra.searchpath=[file://{CONF}]", "method=memrl", *SMALL)
    assert cfg["protocol"]["name"] == "tests.own_protocol:Unlabelled" and cfg["protocol"]["epochs"] == 2  # held_out's keys, then its own
    metrics = run(cfg, tmp_path / "runs" / "unlabelled")
    run({**cfg, "protocol": {**cfg["protocol"], "name": "held_out"}}, tmp_path / "runs" / "held_out")

    log = [json.loads(line) for line in (tmp_path / "runs" / "unlabelled" / "episodes.jsonl").read_text().splitlines()]
    train = [r["success"] for r in log if r["phase"] == "train"]
    assert metrics["unlabelled"] == {"hidden_successes": sum(train) / len(train)} and "unlabelled" in metrics["labels"]
    memory = tmp_path / "runs" / "unlabelled" / "memory" / "final"
    assert memory.is_dir()  # memrl stored what it learned: every memory a failure, as the protocol told it
    stored = [json.loads(line)["provenance"]["success"] for line in (memory / "items.jsonl").read_text().splitlines()]
    assert stored and not any(stored)

    report(tmp_path / "runs", tmp_path / "report")
    table = (tmp_path / "report" / "tables" / "protocols.md").read_text()
    assert "training successes learn() was not told %" in table and f"{100 * metrics['unlabelled']['hidden_successes']:.1f} (n=1)" in table

    kinds = {r.path.name: r.kind for r in load_runs(tmp_path / "runs", workers=1, warn=None)}
    assert kinds == {"unlabelled": "unlabelled", "held_out": "held_out"}  # its own kind: never pooled with held-out runs
