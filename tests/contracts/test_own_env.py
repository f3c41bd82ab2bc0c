"""An environment of one's own is one module and one YAML outside the package (tests/own_env.py,
tests/own_env_conf/env/parity.yaml): the env checker passes it, and composed by Hydra from a
search path the command names it runs end to end through the runner, the report and the
findings with no package file edited (answers from a scripted model that knows parity, and
errs on multiples of 3, so that there is something to learn and to score)."""

from __future__ import annotations

import re
from pathlib import Path

from memrl_bench.core.registry import get
from memrl_bench.envs.checker import check_env
from memrl_bench.findings import load_runs
from memrl_bench.report import report
from memrl_bench.runner.loop import run
from tests.helpers import composed
from tests.scripted_llm import ScriptedChatModel

CONF = Path(__file__).parents[1] / "own_env_conf"


def answer(messages: list[dict[str, str]]) -> str:
    n = int(re.search(r"Is (\d+) even", messages[-1]["content"]).group(1))
    right = "yes" if n % 2 == 0 else "no"
    return right if n % 3 else {"yes": "no", "no": "yes"}[right]


def test_an_own_env_passes_the_checker_and_runs_through_runner_report_and_findings(tmp_path):
    check_env(get("env", "tests.own_env:Parity")({}))
    cfg = composed(
        "env=parity", f"hydra.searchpath=[file://{CONF}]", "method=rag", "embedder=minilm", "protocol.epochs=1", "protocol.batch_size=4"
    )
    assert cfg["env"]["name"] == "tests.own_env:Parity"
    metrics = run(cfg, tmp_path / "runs" / "parity", llm=ScriptedChatModel(answer))
    expected = sum(n % 3 != 0 for n in range(200, 208)) / 8  # 201, 204, 207 answered wrong
    assert metrics["success_rate"]["test"] == {1: expected} and metrics["episodes"] == 12 + 4 + 8
    report(tmp_path / "runs", tmp_path / "report")
    assert "parity" in (tmp_path / "report" / "report.html").read_text()
    (run_,) = load_runs(tmp_path / "runs", workers=1, warn=None)
    assert run_.kind == "held_out" and run_.config["env"]["name"] == "tests.own_env:Parity"
