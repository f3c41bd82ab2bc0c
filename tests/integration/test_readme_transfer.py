"""The README's transfer commands ("Streaming, replay, repair and transfer"), run as written in a fresh folder."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "### Streaming, replay, repair and transfer"
MODULES = {"memrl-bench": "memrl_bench", "memrl-bench-report": "memrl_bench.report"}


def blocks() -> list[list[str]]:
    """The section's bash blocks, each as its command lines."""
    section = (ROOT / "README.md").read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [
        [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]
        for block in re.findall(r"```bash\n(.*?)```", section, re.S)
    ]


def run_as_written(commands: list[str], cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for command in commands:
        program, *args = shlex.split(command)
        done = subprocess.run(
            [sys.executable, "-m", MODULES[program], *args], cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 0, f"{command}: {done.stderr[-3000:]}"


def matrix_rows(report: Path) -> list[str]:
    return [
        line
        for line in (report / "tables" / "transfer.md").read_text().splitlines()
        if line.startswith("| memrl") or line.startswith("| rag")
    ]


@pytest.mark.slow  # 180 synthetic runs and their report: ~45 s on 2 cores
def test_the_readme_transfer_study_runs_as_written(tmp_path):
    study = next(b for b in blocks() if b[0].startswith("memrl-bench +experiment=transfer_study"))
    run_as_written(study, tmp_path)
    root = tmp_path / "results" / "transfer"
    assert len(list(root.glob("source/*/COMPLETE"))) == 45 and len(list(root.glob("target/*/COMPLETE"))) == 135
    rows = matrix_rows(root / "report")
    assert len(rows) == 2 * 9  # rag and memrl, three sources x three targets
    diagonal = [r.split(" | ") for r in rows if r.split(" | ")[1] == r.split(" | ")[2]]
    assert len(diagonal) == 6 and all(
        float(cells[3].split()[0]) > 0 for cells in diagonal if cells[0] == "| memrl"
    )  # memory helps where it was learned


@pytest.mark.slow  # the local Qwen model plays 16 LLB-DB and LLB-OS episodes: several minutes on 2 cores
def test_the_readme_llb_db_to_llb_os_commands_run_as_written(tmp_path):
    commands = next(b for b in blocks() if "protocol.transfer_from=results/db_to_os/source" in " ".join(b))
    run_as_written(commands, tmp_path)
    target = tmp_path / "results" / "db_to_os" / "target"
    metrics = {p.parent.name: json.loads(p.read_text()) for p in target.glob("*/metrics.json")}
    assert len(metrics) == 2 and all(m["transfer"]["source_env"]["name"] == "llb_db" for m in metrics.values())
    memrl = next(m for name, m in metrics.items() if "memrl" in name)["transfer"]
    assert memrl["inherited_items"] >= 1 and set(memrl["test_success"]) == {"test"}
    assert matrix_rows(tmp_path / "results" / "db_to_os" / "report")[0].startswith("| memrl | llb_db | llb_os |")
