"""The README's viewer and export section, run as written in a fresh folder."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Every episode: the viewer and the export"
MODULES = {"memrl-bench": "memrl_bench", "memrl-bench-report": "memrl_bench.report", "memrl-bench-export": "memrl_bench.core.export"}


def _blocks() -> tuple[list[str], str]:
    section = (ROOT / "README.md").read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    shell = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    python = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return [line.split("  #", 1)[0].strip() for line in shell.splitlines() if line.strip()], python


@pytest.mark.slow  # two whole runs of the default synthetic world, then the report
def test_the_readme_commands_make_the_viewer_and_the_export(tmp_path):
    commands, python = _blocks()
    assert [c.split()[0] for c in commands] == ["memrl-bench", "memrl-bench-report", "memrl-bench-export"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for command in commands:
        program, *args = shlex.split(command)
        done = subprocess.run([sys.executable, "-m", MODULES[program], *args], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
    peek = tmp_path / "results" / "peek"
    runs = sorted(p.parent for p in peek.rglob("manifest.json"))
    assert len(runs) == 2
    assert len(list((peek / "report" / "episodes" / "data").glob("*.js"))) == 2
    logged = sum(len((run / "episodes.jsonl").read_text().splitlines()) for run in runs)
    assert len(pd.read_parquet(peek / "export" / "episodes.parquet")) == logged
    assert (peek / "export" / "retrievals.csv").exists()
    done = subprocess.run([sys.executable, "-c", python], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "memrl" in done.stdout and "rag" in done.stdout
