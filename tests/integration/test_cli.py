"""The memrl-bench command: runs and sweeps into folders named from overrides (bad input: test_bad_input.py)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SMALL = [
    "env.tasks.train=24",
    "env.tasks.validation=8",
    "env.tasks.test_in_distribution=8",
    "env.tasks.test_out_of_distribution=8",
    "protocol.epochs=2",
    "protocol.batch_size=8",
]


def memrl_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memrl_bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_run_prints_its_table_and_writes_a_complete_folder(tmp_path):
    out = memrl_bench(f"results_dir={tmp_path}", *SMALL)
    assert out.returncode == 0, out.stderr
    assert "SR" in out.stdout and "synthetic" in out.stdout
    (folder,) = (tmp_path / "default").iterdir()
    assert "env.tasks.train=24" in folder.name and "protocol.epochs=2" in folder.name
    for name in (
        "manifest.json",
        "episodes.jsonl",
        "metrics.json",
        "COMPLETE",
        ".hydra/config.yaml",
        "memory/epoch_1/items.jsonl",
        "memory/final/items.jsonl",
    ):
        assert (folder / name).exists(), name


def test_a_sweep_lands_in_folders_named_from_overrides_and_reruns_resume(tmp_path):
    args = ["-m", f"results_dir={tmp_path}", "experiment_name=sweep", "method=none,memrl", "seed=0,1", *SMALL[:4], "protocol.epochs=1"]
    assert memrl_bench(*args).returncode == 0
    names = sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert len(names) == 4 and any("method=none" in n and "seed=1" in n for n in names)
    again = memrl_bench(*args)
    assert again.returncode == 0 and again.stdout.count("is complete; nothing to do") == 4


def test_a_sweep_whose_record_is_not_a_regular_file_is_refused_by_name_not_hung(tmp_path):
    """Round 25b: multirun.yaml replaced by a FIFO hung the same command with no output (Hydra opens it for writing); a
    link would be written through."""
    import os

    args = ["-m", f"results_dir={tmp_path}", "experiment_name=sweep", "method=none", "seed=0,1", *SMALL[:4], "protocol.epochs=1"]
    assert memrl_bench(*args).returncode == 0
    record = tmp_path / "sweep" / "multirun.yaml"
    for damage in (os.mkfifo, lambda path: path.symlink_to(tmp_path / "elsewhere.yaml")):
        record.unlink()
        damage(record)
        again = memrl_bench(*args)  # the harness's timeout (300 s) would end a hang
        assert again.returncode == 2 and f"{record} is not a regular file" in again.stderr and "Traceback" not in again.stderr, again.stderr
        assert not (tmp_path / "elsewhere.yaml").exists()


def test_help_describes_the_harness_and_its_examples_compose():
    """--help has a description, the config groups and examples; each example composes (--cfg job)."""
    out = memrl_bench("--help")
    assert out.returncode == 0, out.stderr
    assert "powered by Hydra" not in out.stdout and "fair protocol" in out.stdout
    assert "method: " in out.stdout and "env: " in out.stdout
    examples = [line.split("#")[0].split() for line in out.stdout.splitlines() if line.strip().startswith("memrl-bench ")]
    examples = [words[1:] for words in examples if "<overrides>" not in words]
    assert len(examples) >= 5
    for args in examples:
        # --cfg does not combine with -m: a sweep is checked on its first value of each key
        args = [a.split(",")[0] for a in args if a != "-m"]
        composed_job = memrl_bench(*args, "--cfg", "job")
        assert composed_job.returncode == 0, f"{args}: {composed_job.stderr[-2000:]}"
