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
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from memrl_bench.envs.sandbox.processes import descendants, live_processes
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


def sweep_command(tmp_path: Path, launcher: str, overrides: list[str]) -> list[str]:
    """The command of a sweep through `launcher` (skipped where its plugin is not installed)."""
    plugin, extra, launcher_overrides = LAUNCHERS[launcher]
    if importlib.util.find_spec(plugin) is None:
        pytest.skip(f"{plugin} is not installed: pip install 'memrl-bench[{extra}]'")
    return [
        sys.executable,
        "-m",
        "memrl_bench",
        "-m",
        *launcher_overrides,
        f"results_dir={tmp_path}",
        f"experiment_name={launcher}",
        *overrides,
    ]


def sweep_env(env: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **(env or {})}


def run_sweep(tmp_path: Path, launcher: str, overrides: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        sweep_command(tmp_path, launcher, overrides), cwd=REPO, env=sweep_env(env), capture_output=True, text=True, timeout=600
    )


def own_lines(stderr: str) -> list[str]:
    """The command's lines, Hydra's log lines aside."""
    return [line for line in stderr.splitlines() if not line.startswith("[20")]


def sweep(tmp_path: Path, launcher: str, overrides: list[str], env: dict[str, str] | None = None) -> list[Path]:
    """Run a sweep through `launcher`; the folders of its complete runs, sorted."""
    done = run_sweep(tmp_path, launcher, overrides, env)
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


def processes_below(pid: int) -> set[int]:
    return descendants(pid, live_processes())


def running(pids: set[int]) -> set[int]:
    """Those of `pids` still running (a zombie has ended)."""
    return pids & live_processes().keys()


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # ended
        return b""


def still_running_after_a_while(workers: set[int]) -> set[int]:
    """Those of `workers` still running once interrupts.JOB_STOP_S and a margin have passed (or as soon as none is)."""
    deadline = time.monotonic() + 90
    while running(workers) and time.monotonic() < deadline:
        time.sleep(0.5)
    return running(workers)


def logged(tmp_path: Path, launcher: str) -> list[int]:
    return sorted(len(log.read_bytes().splitlines()) for log in (tmp_path / launcher).glob("*/episodes.jsonl"))


def ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell starts a command in the background (`nohup ... &`)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("launcher", "background"), [("joblib", False), ("submitit_local", False), ("joblib", True)], ids=["joblib", "submitit", "nohup"]
)
def test_a_killed_sweeps_workers_end_with_it_and_the_sweep_resumes(tmp_path, launcher, background):
    """A sweep's process SIGKILLed while its jobs play their runs in a launcher's worker processes: the workers went on
    playing them to the end, holding their folders' locks, and the same command was refused meanwhile (55b). Now each job
    stops as by a Ctrl-C, every worker ends, nothing more is written, and the same command completes both runs; also when
    the sweep was started with SIGINT ignored, as in the background (a job played on for a minute then)."""
    overrides = [
        "llm.model=job-a,job-b",
        "env=mmlu",
        "env.tasks_per_split=40",
        "method=none",
        "llm=openai",
        "llm.cache_mode=off",
        "llm.max_concurrency=1",
        "protocol.epochs=1",
        "protocol.batch_size=1",
        "progress=false",
    ]
    with FaultServer(reply=answer_b, delay_s=0.3) as server:
        command = sweep_command(tmp_path, launcher, [f"llm.base_url={server.base_url}", *overrides])
        env = sweep_env({"OPENAI_API_KEY": "test-key-not-a-secret"})
        sweeping = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=ignoring_sigint if background else None,
        )
        deadline = time.monotonic() + 120
        while (len(logged(tmp_path, launcher)) < 2 or min(logged(tmp_path, launcher)) < 1) and time.monotonic() < deadline:
            assert sweeping.poll() is None, sweeping.stderr.read().decode()[-3000:]
            time.sleep(0.2)
        workers = processes_below(sweeping.pid)
        assert running(workers), "the jobs run in processes of their own"
        sweeping.kill()
        sweeping.wait()
        assert not still_running_after_a_while(workers)
        lines = logged(tmp_path, launcher)
        time.sleep(2)
        assert logged(tmp_path, launcher) == lines and max(lines) < 120  # nothing more written; neither run finished
        server.delay_s = 0.0
        runs = sweep(tmp_path, launcher, [f"llm.base_url={server.base_url}", *overrides], env={"OPENAI_API_KEY": "test-key-not-a-secret"})
    assert len(runs) == 2
    for run in runs:
        assert json.loads((run / "metrics.json").read_text())["episodes"] == 120


SECRETS_FOR_SUBMITIT = {  # name: (overrides, a config file's text or "", the setting named)
    "a password": (["llm.base_url=http://user:pw-NOT-IN-ANY-FILE@127.0.0.1:9/v1"], "", "llm.base_url"),
    "a key parameter": (["llm.base_url='http://127.0.0.1:9/v1?api_key=key-NOT-IN-ANY-FILE'"], "", "llm.base_url"),
    "one value of a sweep": (["llm.base_url=http://127.0.0.1:9/v1,http://u:pw-NOT-IN-ANY-FILE@127.0.0.1:9/v1"], "", "llm.base_url"),
    # 56b: the `hydra` node is pickled too
    "hydra's environment for the jobs": (["+hydra.job.env_set.MY_URL=http://u:pw-NOT-IN-ANY-FILE@h/v1"], "", "hydra.job.env_set.MY_URL"),
    "a config file's sweeper params": (
        ["+experiment=leak"],
        "hydra:\n  sweeper:\n    params:\n      llm.base_url: http://127.0.0.1:9/v1,http://u:pw-NOT-IN-ANY-FILE@127.0.0.1:9/v1\n",
        "hydra.sweeper.params.llm.base_url",
    ),
}


@pytest.mark.parametrize("name", SECRETS_FOR_SUBMITIT)
def test_a_sweep_whose_launcher_writes_its_jobs_to_disk_refuses_a_secret_in_its_settings(tmp_path, name):
    """submitit pickles every job, its overrides and its whole config, into the sweep's `.submitit` folder: a URL password
    and a key-like URL parameter were written there in clear (55b, 56b). Such a sweep is refused in one line naming the
    setting, and nothing holding the secret is written."""
    overrides, text, setting = SECRETS_FOR_SUBMITIT[name]
    if text:
        (tmp_path / "conf" / "experiment").mkdir(parents=True)
        (tmp_path / "conf" / "experiment" / "leak.yaml").write_text(f"# @package _global_\n{text}")
        overrides = [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", *overrides]
    done = run_sweep(tmp_path / "results", "submitit_local", [*TINY, "llm=openai", *overrides])
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.count("\n") == 1 and f"{setting}: holds a URL password or a key" in done.stderr, done.stderr
    assert "NOT-IN-ANY-FILE" not in done.stderr + done.stdout
    assert not any(b"NOT-IN-ANY-FILE" in path.read_bytes() for path in (tmp_path / "results").rglob("*") if path.is_file())
    assert not list(tmp_path.rglob(".submitit"))


@pytest.mark.slow
def test_a_url_password_given_through_the_environment_reaches_the_server_and_no_file_through_submitit(tmp_path):
    """What the refusal above says to do: `llm.base_url='${oc.env:MY_URL}'` travels to the jobs as written, and each job
    reads the URL (its password too) from its environment."""
    with FaultServer(reply=answer_b) as server:
        url = server.base_url.replace("http://", "http://user:pw-NOT-IN-ANY-FILE@")
        overrides = [
            "env=mmlu",
            "env.tasks_per_split=2",
            "method=none,rag",
            "llm=openai",
            "llm.model=m",
            "llm.cache_mode=off",
            "llm.base_url=${oc.env:MY_URL}",
        ]
        runs = sweep(tmp_path, "submitit_local", [*overrides, "protocol.epochs=1"], env={"MY_URL": url, "OPENAI_API_KEY": "k"})
        assert len(runs) == 2 and len(server.chat_bodies) > 0
    assert not any(b"NOT-IN-ANY-FILE" in path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())


@pytest.mark.parametrize("sweeping", [False, True], ids=["a single run", "a sweep in its own process"])
def test_a_sweep_process_named_by_a_stale_variable_stops_no_run(tmp_path, sweeping):
    """MEMRL_BENCH_SWEEP_PROCESS names the sweep a worker's jobs end with; one inherited from elsewhere (here a process
    that has ended: pid 1 with another start time) stops neither a single run nor the jobs a sweep runs itself."""
    overrides = [f"results_dir={tmp_path}", "experiment_name=stale", *TINY]
    if not sweeping:
        overrides[overrides.index("method=none,rag")] = "method=none"
    command = [sys.executable, "-m", "memrl_bench", *(["-m"] if sweeping else []), *overrides]
    done = subprocess.run(
        command, cwd=REPO, env=sweep_env({"MEMRL_BENCH_SWEEP_PROCESS": "1 0"}), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list((tmp_path / "stale").glob("*/COMPLETE"))) == (2 if sweeping else 1)


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_a_jobs_bad_setting_is_its_one_line_and_exit_2_through_a_launcher(tmp_path, launcher):
    """A job refusing its settings in a launcher's worker: submitit handed the sweep the job's line inside 40 lines of its
    own traceback, exit 1 (found beside 55b); the sweep now ends on the job's line and code, as joblib's did. joblib runs
    both jobs at once: each that started before the sweep stopped says its line (CI saw both)."""
    done = run_sweep(tmp_path, launcher, ["method=none,rag", "env=mmlu", "env.tasks_per_split=2", "llm=openai", "progress=false"])
    assert done.returncode == 2, done.stderr[-3000:]
    own = own_lines(done.stderr)
    assert 1 <= len(own) <= 2 and len(set(own)) == 1, own
    assert own[0].startswith("memrl-bench: error: llm.model is required for llm=openai"), own


def test_a_job_past_the_joblib_launchers_time_limit_is_one_line(tmp_path):
    """joblib's launcher stops waiting for a job at `hydra.launcher.timeout`: multiprocessing's TimeoutError ended the
    sweep in 43 lines, exit 1 (56b)."""
    done = run_sweep(tmp_path, "joblib", [*TINY, "hydra.launcher.timeout=0.001"])
    assert done.returncode == 2 and own_lines(done.stderr) == [
        "memrl-bench: error: a job of the sweep ran past hydra.launcher.timeout; what finished is kept: re-run the same command to resume"
    ], done.stderr[-3000:]


@pytest.mark.slow
def test_a_sweep_killed_before_its_workers_had_jobs_leaves_none_waiting(tmp_path):
    """A joblib sweep SIGKILLed just as loky started its workers: a worker that had no job yet (so no job's watch) waited
    on its queue for good, holding the sweep's stderr open (56b: 4 of 6 kills within 0.7 s). Workers watch from their
    start now."""
    command = sweep_command(tmp_path, "joblib", [*TINY, "method=none,rag,memrl", "env.tasks.train=400"])
    sweeping = subprocess.Popen(command, cwd=REPO, env=sweep_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(b"LokyProcess" in command_line(pid) for pid in processes_below(sweeping.pid)):
            break
        time.sleep(0.01)
    time.sleep(0.3)
    workers = processes_below(sweeping.pid)
    sweeping.kill()
    sweeping.wait()
    assert workers and not still_running_after_a_while(workers)
