"""Scale-out: 2-job sweeps through each Hydra launcher.

Every launcher runs the real CLI (`python -m memrl_bench -m ...`) in subprocesses, and
each job must leave a complete run folder whose metrics count every scheduled episode:
first on the synthetic env (no LLM), then on MMLU with both jobs sending their LLM
calls to one OpenAI-compatible server (the loopback fault server, started by the test).
Ray: the launcher starts a local Ray instance inside the sweep's process (address
null, no dashboard) and shuts it down when the sweep ends.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.fault_server import FaultServer

REPO = Path(__file__).resolve().parents[2]
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

# launcher: (its plugin module, the extra that installs it, its overrides)
LAUNCHERS = {
    "joblib": ("hydra_plugins.hydra_joblib_launcher", "launchers", ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]),
    "submitit_local": (
        "hydra_plugins.hydra_submitit_launcher",
        "launchers",
        ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10"],
    ),
    "ray": (
        "hydra_plugins.hydra_ray_launcher",
        "ray",
        ["hydra/launcher=ray", "+hydra.launcher.ray.init.include_dashboard=false", "+hydra.launcher.ray.init.num_cpus=2"],
    ),
}


def sweep(tmp_path: Path, launcher: str, overrides: list[str], env: dict[str, str] | None = None) -> list[Path]:
    """Run a sweep through `launcher`; the folders of its complete runs, sorted."""
    plugin, extra, launcher_overrides = LAUNCHERS[launcher]
    if importlib.util.find_spec(plugin) is None:
        pytest.skip(f"{plugin} is not installed: pip install 'memrl-bench[{extra}]'")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **(env or {})}
    command = [
        sys.executable,
        "-m",
        "memrl_bench",
        "-m",
        *launcher_overrides,
        f"results_dir={tmp_path}",
        f"experiment_name={launcher}",
        *overrides,
    ]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return sorted(p.parent for p in (tmp_path / launcher).glob("*/COMPLETE"))


@pytest.mark.slow
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_two_job_sweep_completes(tmp_path, launcher):
    runs = sweep(tmp_path, launcher, TINY)
    assert [r.name.split("method=")[1].split(",")[0] for r in runs] == ["none", "rag"]
    for run in runs:
        metrics = json.loads((run / "metrics.json").read_text())
        assert metrics["episodes"] == EPISODES_PER_RUN
        assert json.loads((run / "manifest.json").read_text())["config"]["method"]["name"] in ("none", "rag")


def answer_b(messages) -> str:
    return "Answer: B"


@pytest.mark.slow
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_two_jobs_share_one_llm_server(tmp_path, launcher):
    """Both jobs of an MMLU sweep call one server; it answers exactly the calls their metrics count.

    The jobs differ only in llm.model, which every request names, so the server's
    requests can be told apart by job. The response cache is off: every call is a request.
    """
    with FaultServer(reply=answer_b) as server:
        runs = sweep(
            tmp_path,
            launcher,
            [
                "llm.model=job-a,job-b",
                "env=mmlu",
                "env.tasks_per_split=4",
                "method=memrl",
                "llm=openai",
                f"llm.base_url={server.base_url}",
                "llm.cache_mode=off",
                "llm.max_concurrency=2",
                "embedder=openai",
                f"embedder.base_url={server.base_url}",
                "embedder.model=fault-server-embed",
                "protocol.epochs=1",
                "protocol.batch_size=2",
                "progress=false",
            ],
            env={"OPENAI_API_KEY": "test-key-not-a-secret"},
        )
        requests_by_model = Counter(body["model"] for body in server.chat_bodies)
    assert len(runs) == 2
    calls_by_model = {}
    for run in runs:
        model = json.loads((run / "manifest.json").read_text())["config"]["llm"]["model"]
        usage = json.loads((run / "metrics.json").read_text())["usage"]
        assert usage["act"]["cache_hits"] == usage["memory"]["cache_hits"] == 0
        assert usage["memory"]["calls"] > 0  # MemRL's scripts and reflections went to the server too
        calls_by_model[model] = sum(usage[purpose]["calls"] + usage[purpose]["retries"] for purpose in ("act", "memory"))
    assert requests_by_model == calls_by_model
    assert sorted(calls_by_model) == ["job-a", "job-b"] and min(calls_by_model.values()) > 0
