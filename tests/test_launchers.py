"""Scale-out: a 2-job sweep of the synthetic env through each Hydra launcher.

Every launcher runs the real CLI (`python -m memrl_bench -m ...`) in subprocesses, and
each job must leave a complete run folder whose metrics count every scheduled episode.
Ray: the launcher starts a local Ray instance inside the sweep's process (address
null, no dashboard) and shuts it down when the sweep ends.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TINY = [
    "method=none,rag",
    "protocol.epochs=1",
    "env.tasks.train=16",
    "env.tasks.validation=8",
    "env.tasks.test_in_distribution=8",
    "env.tasks.test_out_of_distribution=8",
    "progress=false",
]
EPISODES_PER_RUN = 16 + 8 + 8 + 8

LAUNCHERS = {
    "joblib": ("hydra_plugins.hydra_joblib_launcher", ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]),
    "submitit_local": ("hydra_plugins.hydra_submitit_launcher", ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10"]),
    "ray": ("hydra_plugins.hydra_ray_launcher", ["hydra/launcher=ray", "+hydra.launcher.ray.init.include_dashboard=false", "+hydra.launcher.ray.init.num_cpus=2"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_two_job_sweep_completes(tmp_path, launcher):
    plugin, overrides = LAUNCHERS[launcher]
    if importlib.util.find_spec(plugin) is None:
        pytest.skip(f"{plugin} is not installed (pip install 'memrl-bench[launchers]')")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    command = [sys.executable, "-m", "memrl_bench", "-m", *overrides, f"results_dir={tmp_path}", f"experiment_name={launcher}", *TINY]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = sorted(p.parent for p in (tmp_path / launcher).glob("*/COMPLETE"))
    assert [r.name.split("method=")[1].split(",")[0] for r in runs] == ["none", "rag"]
    for run in runs:
        metrics = json.loads((run / "metrics.json").read_text())
        assert metrics["episodes"] == EPISODES_PER_RUN
        assert json.loads((run / "manifest.json").read_text())["config"]["method"]["name"] in ("none", "rag")
