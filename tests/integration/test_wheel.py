"""A normal install works: the wheel carries its configs and prompts and runs from any directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The installed wheel alone: no PYTHONPATH pointing at a source tree (its egg-info would
# make pip think the project is installed already).
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_virtualenv_and_runs_the_demo_from_elsewhere(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        env=CLEAN_ENV,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("memrl_bench-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "memrl_bench/conf/config.yaml" in names and "memrl_bench/conf/experiment/demo.yaml" in names
    assert "memrl_bench/prompts/react_system.txt" in names
    assert "memrl_bench/report/viewer_assets/viewer.js" in names  # the episode viewer's page code

    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=1200,
        env=CLEAN_ENV,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    help_text = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "memrl-bench"), "--help"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
        env=CLEAN_ENV,
    )
    assert help_text.returncode == 0 and "fair protocol" in help_text.stdout, help_text.stderr[-2000:]
    small = [
        "env.tasks.train=16",
        "env.tasks.validation=8",
        "env.tasks.test_in_distribution=8",
        "env.tasks.test_out_of_distribution=8",
        "protocol.epochs=1",
        "progress=false",
    ]
    demo = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "memrl-bench"), "-m", "+experiment=demo", *small],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=900,
        env=CLEAN_ENV,
    )
    assert demo.returncode == 0, demo.stderr[-3000:]
    runs = sorted((elsewhere / "results" / "demo").glob("*/COMPLETE"))
    assert len(runs) == 9  # none, rag, memrl x 3 seeds
    assert all(json.loads((r.parent / "metrics.json").read_text())["episodes"] == 40 for r in runs)
