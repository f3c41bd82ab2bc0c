"""Nothing lost, no one in: a failed start deletes only what it created, one writer per
run folder, COMPLETE checked against the log, memory snapshots checked on resume."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from memrl_bench.core.runfolder import CorruptRunFolderError, RunFolder
from memrl_bench.core.schema import strip_measured
from memrl_bench.runner.loop import run
from tests.helpers import composed, config, default_sigint

ROOT = Path(__file__).resolve().parents[2]
SMALL = [
    "env.tasks.train=24",
    "env.tasks.validation=8",
    "env.tasks.test_in_distribution=8",
    "env.tasks.test_out_of_distribution=8",
    "protocol.epochs=2",
    "protocol.batch_size=8",
    "progress=false",
]
# A run long enough (2-8 s on 2 cores) for a second process to find it running.
LONG = [
    "env.tasks.train=200",
    "env.tasks.validation=40",
    "protocol.epochs=5",
    "protocol.batch_size=8",
    "protocol.checkpoint_interval_s=0",
    "progress=false",
]


def command(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memrl_bench", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "memrl_bench", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def stripped(folder: Path) -> list[dict]:
    return [strip_measured(json.loads(line)) for line in (folder / "episodes.jsonl").read_text().splitlines()]


def snapshot_of(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def wait_for(path: Path, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


# ---- finding 1: a failed start deletes only what it created ------------------------------


@pytest.fixture
def project(tmp_path) -> Path:
    """A user's folder with a repository in it: nothing of it may go."""
    folder = tmp_path / "myproj"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "notes.txt").write_text("mine\n")
    return folder


def test_failed_start_never_removes_an_existing_directory(project):
    before = snapshot_of(project)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for args, code in [
        (("method.epsilon=2",), 2),
        (("seed=abc",), 2),
        (("llm=openai", f"llm.base_url=http://127.0.0.1:{port}/v1", "llm.model=m"), 3),  # the outage path
    ]:
        out = command("hydra.run.dir=.", *args, cwd=project)
        assert out.returncode == code and "Traceback" not in out.stderr, out.stderr
        assert snapshot_of(project) == before  # no file removed, none left behind (the lock file either)
    out = command(f"hydra.run.dir={project}", "seed=abc")
    assert out.returncode == 2 and snapshot_of(project) == before


def test_a_failed_start_removes_the_folders_it_created_and_nothing_else(tmp_path):
    kept = tmp_path / "results" / "default" / "earlier-run"
    kept.mkdir(parents=True)
    (kept / "manifest.json").write_text("{}")
    out = command(f"results_dir={tmp_path / 'results'}", "seed=-1")
    assert out.returncode == 2
    assert sorted(tmp_path.rglob("*")) == [tmp_path / "results", tmp_path / "results" / "default", kept, kept / "manifest.json"]
    out = command(f"results_dir={tmp_path / 'new' / 'deeper'}", "seed=-1")
    assert out.returncode == 2 and not (tmp_path / "new").exists()
    # a config that does not resolve, after Hydra made the folder (twentieth independent round: default/ and the run's left)
    out = command(f"results_dir={tmp_path / 'unresolved'}", "~seed")
    assert out.returncode == 2 and "Interpolation key 'seed' not found" in out.stderr and not (tmp_path / "unresolved").exists()


# ---- finding 2: one writer per run folder ------------------------------------------------


def test_second_writer_on_a_run_folder_is_refused(tmp_path):
    args = (f"results_dir={tmp_path}", *LONG)
    first = start(*args)
    manifest, deadline = None, time.monotonic() + 120
    while manifest is None:
        manifest = next(tmp_path.glob("default/*/manifest.json"), None)
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.01)
    second = command(*args)
    assert first.poll() is None, "the first run ended before the second tried: make LONG longer"
    assert second.returncode == 2 and "Traceback" not in second.stderr
    assert f"is in use by another memrl-bench process (PID {first.pid})" in second.stderr and str(manifest.parent) in second.stderr
    assert first.wait(timeout=300) == 0, first.communicate()
    records = [json.loads(line) for line in (manifest.parent / "episodes.jsonl").read_text().splitlines()]
    assert not [i for i, n in Counter(r["episode_id"] for r in records).items() if n > 1]


@pytest.mark.parametrize("kind", ["a link to a file outside", "a FIFO", "a link to /dev/null"])
def test_a_lock_file_that_is_not_a_regular_file_is_refused_by_name_and_nothing_outside_is_written(tmp_path, kind):
    """Round 25b: `.lock` a link to a file outside the results folder had that file's text replaced by a PID (a complete
    run too: "nothing to do"); a FIFO or /dev/null ended in ftruncate's traceback."""
    results = tmp_path / "results"
    args = (f"results_dir={results}", *SMALL)
    assert command(*args).returncode == 0
    lock = next(results.glob("default/*/.lock"))
    victim = tmp_path / "victim.txt"
    victim.write_text("someone else's text\n")
    lock.unlink()
    if kind == "a FIFO":
        os.mkfifo(lock)
    else:
        lock.symlink_to(victim if kind == "a link to a file outside" else "/dev/null")
    again = command(*args)
    assert again.returncode == 2 and str(lock) in again.stderr and "Traceback" not in again.stderr, again.stderr
    assert victim.read_text() == "someone else's text\n"


def test_the_lock_of_a_killed_run_is_not_stale(tmp_path):
    args = (f"results_dir={tmp_path}", *LONG)
    first = start(*args)
    wait_for(tmp_path / "default", first)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("default/*/episodes.jsonl")):
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    first.send_signal(signal.SIGKILL)
    first.wait()
    again = command(*args)
    assert again.returncode == 0, again.stderr
    assert list(tmp_path.glob("default/*/COMPLETE"))


@pytest.mark.slow
def test_two_processes_on_one_run_folder_at_random_offsets_only_one_writes(tmp_path):
    """20 times: two identical commands on one fresh run folder, the second started 0-1 s
    after the first. Exactly one runs (exit 0), the other exits 2, and the log holds
    every episode of the schedule once."""
    rng = random.Random(13)
    for trial in range(20):
        results = tmp_path / f"trial{trial}"
        args = (f"results_dir={results}", *LONG)
        first = start(*args)
        time.sleep(rng.uniform(0.0, 1.0))
        second = start(*args)
        outs = [p.communicate(timeout=300) for p in (first, second)]
        codes = sorted(p.returncode for p in (first, second))
        assert codes == [0, 2], (trial, outs)
        loser = outs[[first.returncode, second.returncode].index(2)][1]
        assert "is in use by another memrl-bench process (PID" in loser and "Traceback" not in loser, loser
        (folder,) = (results / "default").iterdir()
        records = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
        assert len(records) == len({r["episode_id"] for r in records}) == 5 * 200 + 5 * 40 + 2 * 100
        assert (folder / "COMPLETE").exists()


# ---- finding 3 (the run side): COMPLETE checked against the log ----------------------------


def test_complete_is_checked_against_the_log_before_nothing_to_do(tmp_path):
    cfg = config(protocol={"epochs": 1})
    run(cfg, tmp_path / "run")
    lines = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "run" / "episodes.jsonl").write_text("".join(lines[:-8]))  # a log that lost its last batch
    with pytest.raises(
        CorruptRunFolderError, match="is marked COMPLETE, but episodes.jsonl holds 92 episodes, its schedule 100; delete its COMPLETE"
    ):
        run(cfg, tmp_path / "run")
    (tmp_path / "run" / "COMPLETE").unlink()  # as the message says: the run resumes and ends as it should
    run(cfg, tmp_path / "run")
    reference = tmp_path / "reference"
    run(cfg, reference)
    assert stripped(tmp_path / "run") == stripped(reference)


# ---- finding 9 (the run side): snapshots verified; one lost to a crash is written again ----


def crash_when_saving(monkeypatch, snapshot: str) -> None:
    real = RunFolder.save_snapshot

    def save_snapshot(self, name, *args, **kwargs):
        if name == snapshot:
            raise OSError(28, "No space left on device")
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(RunFolder, "save_snapshot", save_snapshot)


def test_an_epoch_snapshot_lost_to_a_crash_is_written_on_resume(tmp_path, monkeypatch):
    cfg = config(protocol={"epochs": 3, "checkpoint_interval_s": 1e9})  # checkpoints at epoch ends only
    run(cfg, tmp_path / "reference")
    with monkeypatch.context() as patch:
        crash_when_saving(patch, "epoch_1")
        with pytest.raises(OSError, match="No space left"):
            run(cfg, tmp_path / "run")
    assert RunFolder(tmp_path / "run").snapshot_path("epoch_1") is None
    run(cfg, tmp_path / "run")
    for name in ("epoch_1", "epoch_2", "epoch_3", "final"):
        assert snapshot_of(tmp_path / "run" / "memory" / name) == snapshot_of(tmp_path / "reference" / "memory" / name), name
    assert stripped(tmp_path / "run") == stripped(tmp_path / "reference")


def test_a_damaged_checkpoint_is_refused_and_memory_is_rebuilt_from_the_log(tmp_path, monkeypatch):
    cfg = config(protocol={"epochs": 3})
    run(cfg, tmp_path / "reference")
    with monkeypatch.context() as patch:
        crash_when_saving(patch, "epoch_3")
        with pytest.raises(OSError):
            run(cfg, tmp_path / "run")
    keys = tmp_path / "run" / "memory" / "checkpoint" / "keys.npy"
    keys.write_bytes(keys.read_bytes()[:-16])
    with pytest.raises(
        CorruptRunFolderError, match="checkpoint/keys.npy does not match its checksum.*delete the folder memory/ and re-run"
    ):
        run(cfg, tmp_path / "run")
    shutil.rmtree(tmp_path / "run" / "memory")  # as the message says
    run(cfg, tmp_path / "run")
    assert stripped(tmp_path / "run") == stripped(tmp_path / "reference")
    for name in ("epoch_1", "epoch_2", "epoch_3", "final"):
        assert snapshot_of(tmp_path / "run" / "memory" / name) == snapshot_of(tmp_path / "reference" / "memory" / name), name


def test_another_runs_checkpoint_is_refused_on_resume_and_memory_is_rebuilt_from_the_log(tmp_path, monkeypatch):
    """The thirty-second round: another run's checkpoint, whole in itself (its own SHA256SUMS), was restored by a resume
    without a word, and the run went on to COMPLETE with the other run's memory (2,000 of 3,200 log lines differed)."""
    cfg, other = config(protocol={"epochs": 3}), config(protocol={"epochs": 3}, seed=1, task_order_seed=1)
    run(cfg, tmp_path / "reference")
    for config_, folder in ((cfg, "run"), (other, "other")):
        with monkeypatch.context() as patch:
            crash_when_saving(patch, "epoch_3")
            with pytest.raises(OSError):
                run(config_, tmp_path / folder)
    shutil.rmtree(tmp_path / "run" / "memory" / "checkpoint")
    shutil.copytree(tmp_path / "other" / "memory" / "checkpoint", tmp_path / "run" / "memory" / "checkpoint")
    with pytest.raises(CorruptRunFolderError, match="checkpoint was not written beside this run's episodes.jsonl.*delete the folder"):
        run(cfg, tmp_path / "run")
    shutil.rmtree(tmp_path / "run" / "memory")  # as the message says
    run(cfg, tmp_path / "run")
    assert stripped(tmp_path / "run") == stripped(tmp_path / "reference")
    assert snapshot_of(tmp_path / "run" / "memory" / "final") == snapshot_of(tmp_path / "reference" / "memory" / "final")


def test_snapshots_carry_checksums_sha256sum_can_check(tmp_path):
    run(config(protocol={"epochs": 1}), tmp_path / "run")
    for folder in (tmp_path / "run" / "memory").iterdir():
        if folder.name.startswith("."):
            continue
        out = subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=folder, capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.count(": OK") >= 1, out.stdout + out.stderr


# ---- Ctrl-C -------------------------------------------------------------------------------


def test_ctrl_c_ends_with_one_line_and_exit_130_and_the_run_resumes(tmp_path):
    args = [*SMALL, "env.tasks.train=200", "protocol.checkpoint_interval_s=0"]
    reference = tmp_path / "reference"
    run(composed(*args), reference)
    proc = subprocess.Popen(
        [sys.executable, "-m", "memrl_bench", f"hydra.run.dir={tmp_path / 'run'}", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    wait_for(tmp_path / "run" / "episodes.jsonl", proc)
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err == "memrl-bench: interrupted; re-run the same command to resume\n", err
    assert not (tmp_path / "run" / "COMPLETE").exists()
    assert command(f"hydra.run.dir={tmp_path / 'run'}", *args).returncode == 0
    assert stripped(tmp_path / "run") == stripped(reference)


def test_a_studys_findings_are_replaced_together_or_not_at_all(tmp_path: Path):
    """43b: a study killed between its findings.md and findings.html writes left new findings beside old ones, each file
    whole (5 of 5 kills timed on the first rename). All three are written before the first rename now: a failure while
    writing the last (here, text it cannot encode) leaves the old set, and no temporary file."""
    from memrl_bench.core.runfolder import write_texts_atomic

    names = ("findings.md", "findings.html", "timing.json")
    for name in names:
        (tmp_path / name).write_text(f"old {name}")
    with pytest.raises(UnicodeEncodeError):
        write_texts_atomic({tmp_path / name: f"new {name}" + ("\ud800" if name == "timing.json" else "") for name in names})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    assert all((tmp_path / name).read_text() == f"old {name}" for name in names)
    write_texts_atomic({tmp_path / name: f"new {name}" for name in names})
    assert all((tmp_path / name).read_text() == f"new {name}" for name in names)


def test_an_episode_whose_log_line_readers_would_refuse_is_refused_before_it_is_written(tmp_path: Path, monkeypatch):
    """43b: a 1 GB line was written (500 MB outputs kept whole), and the run refused its own log on the next read: a run that
    could never finish. The writer refuses such a line first, with one line naming the settings; the log stays as it was."""
    from memrl_bench.core import runfolder

    folder = RunFolder(tmp_path)
    folder.append_episodes([{"episode_id": "a", "turns": []}])
    before = folder.episodes_path.read_bytes()
    monkeypatch.setattr(runfolder, "MAX_LINE_BYTES", 1 << 16)
    with pytest.raises(runfolder.EpisodeTooLargeError, match="episode b's line would be .* lower actor.max_steps"):
        folder.append_episodes([{"episode_id": "c", "turns": []}, {"episode_id": "b", "turns": [{"observation": "x" * (1 << 16)}]}])
    assert folder.episodes_path.read_bytes() == before
