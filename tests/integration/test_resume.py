"""Resume: a killed run, re-run with the same command, ends with the uninterrupted run's log."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memrl_bench.core.runfolder import CorruptRunFolderError
from memrl_bench.core.schema import strip_measured
from memrl_bench.runner.loop import ConfigMismatchError, run
from tests.helpers import config, crash_in_learn, crash_in_learn_then_resume, run_to

ROOT = Path(__file__).resolve().parents[2]


def stripped(folder: Path) -> list[dict]:
    return [strip_measured(json.loads(line)) for line in (folder / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("checkpoint_interval_s", [0.0, 1e9])  # a checkpoint every batch; or only at epoch ends (learn replayed)
@pytest.mark.parametrize("drift", [None, {"epoch": 2}])  # the drift protocol replays the changed tasks
def test_crash_inside_a_batch_then_resume_equals_uninterrupted(tmp_path, monkeypatch, checkpoint_interval_s, drift):
    cfg = config(protocol={"checkpoint_interval_s": checkpoint_interval_s, **({"name": "drift", "drift": drift} if drift else {})})
    _, reference = run_to(tmp_path, "reference", cfg)
    crash_in_learn_then_resume(monkeypatch, cfg, tmp_path / "resumed", (2, 5, 4))  # learn() calls counted per attempt, replays included
    assert stripped(tmp_path / "resumed") == stripped(reference)


def test_torn_last_line_and_incomplete_batch_are_cut(tmp_path):
    cfg = config(protocol={"epochs": 1})
    _, reference = run_to(tmp_path, "reference", cfg)
    folder = tmp_path / "torn"
    lines = (reference / "episodes.jsonl").read_text().splitlines(keepends=True)
    folder.mkdir()
    for name in ("manifest.json",):
        (folder / name).write_text((reference / name).read_text())
    # 1.5 batches and half a line, as a crash mid-write would leave them.
    (folder / "episodes.jsonl").write_text("".join(lines[:12]) + lines[12][:40])
    run(cfg, folder)
    assert stripped(folder) == stripped(reference)


@pytest.mark.parametrize("edit", ["removed", "repeated"])
def test_a_line_removed_or_repeated_in_a_batch_before_others_is_refused(tmp_path, edit):
    """The twentieth independent round: after a kill, a line deleted from (or repeated in) a middle batch was played to
    COMPLETE over 599 (601) of 600 episodes, and refused only after; only the last batch can be cut by a crash."""
    cfg = config(protocol={"epochs": 1})
    _, reference = run_to(tmp_path, "reference", cfg)
    folder = tmp_path / "edited"
    folder.mkdir()
    (folder / "manifest.json").write_text((reference / "manifest.json").read_text())
    lines = (reference / "episodes.jsonl").read_text().splitlines(keepends=True)[:20]  # 2.5 batches of 8
    lines = lines[:3] + lines[4:] if edit == "removed" else lines[:4] + lines[3:]
    (folder / "episodes.jsonl").write_text("".join(lines))
    with pytest.raises(CorruptRunFolderError, match=r"episodes.jsonl: batch .* is not whole .* the log was edited or damaged"):
        run(cfg, folder)
    assert (folder / "episodes.jsonl").read_text() == "".join(lines)  # nothing cut


def test_a_folder_of_another_config_is_refused(tmp_path):
    run(config(protocol={"epochs": 1}), tmp_path / "run")
    with pytest.raises(ConfigMismatchError, match="refusing to mix"):
        run(config(protocol={"epochs": 1}, method={"alpha": 0.5}), tmp_path / "run")


@pytest.mark.parametrize(
    "protocol", [{"epochs": 1}, {"name": "poison", "epochs": 2, "poison_share": 0.25, "poison_epoch": 2}], ids=["plain", "poisoned"]
)
def test_a_complete_run_is_not_run_again(tmp_path, capsys, protocol):
    """Also a poisoning run, whose log holds memories metrics.json counts apart from its episodes."""
    run(config(protocol=protocol), tmp_path / "run")
    before = (tmp_path / "run" / "episodes.jsonl").read_bytes()
    run(config(protocol=protocol), tmp_path / "run")
    assert (tmp_path / "run" / "episodes.jsonl").read_bytes() == before
    assert "is complete; nothing to do" in capsys.readouterr().out


CLI_ARGS = [
    "env.tasks.train=200",
    "env.tasks.validation=60",
    "env.tasks.test_in_distribution=40",
    "env.tasks.test_out_of_distribution=40",
    "protocol.epochs=4",
    "protocol.batch_size=8",
    "protocol.checkpoint_interval_s=0.05",
    "progress=false",
]


def cli(results: Path, extra: list[str] = ()) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "memrl_bench", f"results_dir={results}", *CLI_ARGS, *extra],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_equals_uninterrupted(tmp_path):
    """At least 5 SIGKILLs at random moments of one run; the resumed log equals the reference."""
    reference_proc = cli(tmp_path / "ref")
    assert reference_proc.wait(timeout=300) == 0, reference_proc.stderr.read().decode()
    reference = next((tmp_path / "ref" / "default").iterdir())
    total = len(stripped(reference))
    rng = random.Random(1234)
    kills = 0
    folder = None
    for _ in range(20):
        proc = cli(tmp_path / "killed")
        target = rng.randrange(1, total)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            folder = next(iter((tmp_path / "killed" / "default").glob("*")), None) if (tmp_path / "killed" / "default").exists() else None
            log = folder / "episodes.jsonl" if folder else None
            if log and log.exists() and log.stat().st_size > target * 300:
                time.sleep(rng.random() * 0.05)
                break
            time.sleep(0.002)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
        if kills >= 6:
            break
    assert kills >= 5
    final = cli(tmp_path / "killed")
    assert final.wait(timeout=300) == 0, final.stderr.read().decode()
    assert stripped(folder) == stripped(reference)
    assert (folder / "COMPLETE").exists()


def test_a_resume_accepts_its_own_manifest_and_refuses_an_edited_one(tmp_path, monkeypatch):
    cfg, folder = config(protocol={"epochs": 2, "batch_size": 8, "checkpoint_interval_s": 0}), tmp_path / "run"
    crash_in_learn(monkeypatch, cfg, folder, 3)
    written = (folder / "manifest.json").read_text()
    edited = json.loads(written)
    edited["labels"] = []  # outside the config hash: only the manifest's digest tells
    (folder / "manifest.json").write_text(json.dumps(edited, indent=1, sort_keys=True))
    with pytest.raises(CorruptRunFolderError, match="its manifest_sha256 does not match its contents"):
        run(cfg, folder)
    (folder / "manifest.json").write_text(written)
    assert run(cfg, folder)["episodes"] == json.loads(written)["schedule_episodes"]
