"""memrl-bench-export and memrl_bench.load_episodes: every logged episode is a row, with the runs' settings as columns."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import memrl_bench
from memrl_bench.core.runfolder import batch_key
from memrl_bench.runner.loop import run
from tests.helpers import config

EPSILONS = (0.0, 0.2)
SEEDS = (0, 1)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    """A small epsilon sweep (as +experiment=critique_epsilon varies method.epsilon) with two seeds."""
    root = tmp_path_factory.mktemp("export")
    for epsilon in EPSILONS:
        for seed in SEEDS:
            cfg = config(
                method={"name": "memrl", "epsilon": epsilon},
                protocol={"epochs": 2, "batch_size": 8, "checkpoint_interval_s": 0},
                seed=seed,
                task_order_seed=seed,
            )
            run(cfg, root / "critique" / "epsilon" / f"method.epsilon={epsilon},seed={seed}")
    return root


def _logged(root: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(root.rglob("episodes.jsonl")) for line in path.read_text().splitlines()]


def test_every_logged_episode_is_one_row_with_the_varied_settings(study):
    episodes = memrl_bench.load_episodes(study)
    logged = _logged(study)
    assert len(episodes) == len(logged)
    assert sorted(episodes["episode_id"] + episodes["run"]) == sorted(
        e["episode_id"] + r for r in episodes["run"].unique() for e in _logged(study / r)
    )
    assert {"method", "env", "seed", "task_order_seed", "method.epsilon"} <= set(episodes.columns)
    assert sorted(episodes["method.epsilon"].unique()) == list(EPSILONS)
    assert "protocol.epochs" not in episodes.columns  # the same in every run: not a varied setting
    by_run = episodes.groupby("run")["success"].mean()
    for name, rate in by_run.items():
        assert rate == pytest.approx(sum(e["success"] for e in _logged(study / name)) / len(_logged(study / name)))


def test_retrievals_are_every_retrieved_memory(study):
    retrievals = memrl_bench.load_retrievals(study)
    logged = _logged(study)
    assert len(retrievals) == sum(len(e["retrieved"]) for e in logged) > 0
    first = next(e for e in logged if e["retrieved"])
    row = retrievals[(retrievals["episode_id"] == first["episode_id"]) & (retrievals["rank"] == 0)].iloc[0]
    assert row["similarity"] == pytest.approx(first["retrieved"][0]["similarity"])
    assert row["source_episode_id"] == first["retrieved"][0]["source_episode_id"]


def test_the_command_writes_parquet_and_csv_that_agree(study, tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "memrl_bench.core.export", str(study), "--out", str(out), "--retrievals"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(out / f) for f in ("episodes.parquet", "episodes.csv", "retrievals.parquet", "retrievals.csv")]
    parquet, csv = pd.read_parquet(out / "episodes.parquet"), pd.read_csv(out / "episodes.csv")
    assert len(parquet) == len(csv) == len(_logged(study))
    assert list(parquet.columns) == list(csv.columns)
    assert parquet["success"].sum() == csv["success"].sum()


@pytest.mark.parametrize("case", ["no_runs", "not_a_folder", "damaged_run"])
def test_bad_input_is_one_line_and_exit_2(study, tmp_path, case):
    target = tmp_path
    if case == "not_a_folder":
        target = tmp_path / "nowhere"
    elif case == "damaged_run":
        source = next(study.rglob("manifest.json")).parent
        target = tmp_path / "copy"
        (target / "run").mkdir(parents=True)
        for name in ("manifest.json", "episodes.jsonl"):
            (target / "run" / name).write_text((source / name).read_text())
        (target / "run" / "episodes.jsonl").write_text("{not json\n")
    done = subprocess.run([sys.executable, "-m", "memrl_bench.core.export", str(target)], capture_output=True, text=True)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert str(target) in done.stderr


@pytest.mark.parametrize("damage", ["missing_batch", "edited_label"])
def test_export_refuses_a_damaged_run(study, tmp_path, damage):
    """A run marked COMPLETE that lacks its last batch, or whose manifest was edited outside its
    config: the export stops with one line naming it, instead of writing a table without a word."""
    target = tmp_path / "copy"
    shutil.copytree(study, target)
    run_dir = next(target.rglob("manifest.json")).parent
    if damage == "missing_batch":
        lines = (run_dir / "episodes.jsonl").read_text().splitlines(keepends=True)
        keep = [line for line in lines if batch_key(json.loads(line)) != batch_key(json.loads(lines[-1]))]
        (run_dir / "episodes.jsonl").write_text("".join(keep))
        why = f"is marked COMPLETE, but episodes.jsonl holds {len(keep)} episodes, its schedule {len(lines)}"
    else:
        manifest = json.loads((run_dir / "manifest.json").read_text())
        manifest["labels"] = []
        (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
        why = "its manifest_sha256 does not match its contents"
    done = subprocess.run(
        [sys.executable, "-m", "memrl_bench.core.export", str(target), "--out", str(tmp_path / "out")], capture_output=True, text=True
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and str(run_dir) in done.stderr and why in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_a_setting_of_mixed_types_is_written_as_text(tmp_path):
    from memrl_bench.core.export import write_tables

    frame = pd.DataFrame({"run": ["a", "b", "c"], "env.data_dir": [None, "/data", 3]})
    write_tables({"mixed": frame}, tmp_path)
    assert pd.read_parquet(tmp_path / "mixed.parquet")["env.data_dir"].fillna("absent").tolist() == ["absent", "/data", "3"]


# The command, SIGKILLed by itself halfway through writing its last CSV (episodes.csv, or retrievals.csv with --retrievals).
KILLED_WHILE_WRITING_THE_CSV = """
import os, signal, sys
import pandas as pd
from memrl_bench.core.export import main
real = pd.DataFrame.to_csv
def killed_halfway(self, target, *args, **kwargs):
    if "--retrievals" in sys.argv and "rank" not in self.columns:  # episodes.csv: written whole
        return real(self, target, *args, **kwargs)
    text = real(self, None, *args, **kwargs).encode()
    if hasattr(target, "write"):
        target.write(text[: len(text) // 2])
        target.flush()
    else:
        with open(target, "wb") as f:
            f.write(text[: len(text) // 2])
    os.kill(os.getpid(), signal.SIGKILL)
pd.DataFrame.to_csv = killed_halfway
sys.argv[0] = "memrl-bench-export"
main()
"""


@pytest.mark.parametrize("retrievals", [False, True])
def test_killed_export_leaves_no_partial_file_and_no_mix_of_two_exports(study, tmp_path, retrievals):
    """SIGKILL halfway through a CSV: no table under a table's name is shorter than its export wrote it, and (with
    --retrievals, the last CSV written) no new table sits beside an old one (before 2026-12-06 each file was renamed as it
    was written: a kill left new episodes beside old retrievals in 6 of 16 tries)."""
    out, more = tmp_path / "out", ["--retrievals"] if retrievals else []
    names = [f"{table}.{kind}" for table in ["episodes", *(["retrievals"] if retrievals else [])] for kind in ("parquet", "csv")]

    def killed() -> None:
        done = subprocess.run(
            [sys.executable, "-c", KILLED_WHILE_WRITING_THE_CSV, str(study), "--out", str(out), *more], capture_output=True, text=True
        )
        assert done.returncode == -9, done.stderr

    killed()
    assert not any((out / name).exists() for name in names)  # no table before every table is written
    done = subprocess.run(
        [sys.executable, "-m", "memrl_bench.core.export", str(study), "--out", str(out), *more], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    whole = {name: (out / name).read_bytes() for name in names}
    killed()
    assert {name: (out / name).read_bytes() for name in names} == whole  # the previous export, untouched
    assert len(pd.read_csv(out / "episodes.csv")) == len(_logged(study))


@pytest.mark.parametrize("command", ["memrl_bench.core.export", "memrl_bench.report.cli"])
def test_ctrl_c_during_export_or_report_is_one_line_and_exit_130(tmp_path, monkeypatch, capsys, command):
    import importlib

    module = importlib.import_module(command)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "read_runs" if command.endswith("export") else "load_for_report", interrupted)
    with pytest.raises(SystemExit) as stop:
        module.main([str(tmp_path)])
    assert stop.value.code == 130 and capsys.readouterr().err.strip() in (
        "memrl-bench-export: interrupted",
        "memrl-bench-report: interrupted",
    )


def test_export_report_or_findings_into_a_run_folder_or_its_memory_are_refused(study, capsys, monkeypatch):
    """The sixth independent round: export's --out RUN/memory/final wrote the tables into the final snapshot, which every
    reader then refused as damaged; the 32nd: report's --out and findings' --html did the same. Refused before anything is
    written; the run reads whole after."""
    from memrl_bench.core.export import main as export
    from memrl_bench.core.records import read_run
    from memrl_bench.findings.__main__ import main as findings
    from memrl_bench.report.cli import main as report

    run = next(p.parent for p in sorted(study.rglob("manifest.json")))
    for command, out in ((export, run / "memory" / "final"), (export, run), (report, run / "memory" / "final" / "rep")):
        with pytest.raises(SystemExit) as stop:
            command([str(run), "--out", str(out)])
        assert stop.value.code == 2 and "inside its memory snapshots; choose another --out" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["findings", str(run), "--html", str(run / "memory" / "epoch_1" / "f.html")])
    with pytest.raises(SystemExit) as stop:
        findings()
    assert stop.value.code == 2 and "inside the memory snapshots of the run folder" in capsys.readouterr().err
    assert sorted(p.name for p in (run / "memory").rglob("*") if p.name in ("episodes.csv", "rep", "f.html")) == []
    assert read_run(run, require_complete=True).complete


def test_a_run_folder_named_in_bytes_that_are_not_utf8_is_one_line(study, tmp_path, capsys):
    """Round 16b: a run folder whose name holds bytes that are no UTF-8 ended the export in pyarrow's UnicodeEncodeError
    traceback (the report skips it with a line)."""
    from memrl_bench.core.export import main

    run = next(p.parent for p in sorted(study.rglob("manifest.json")))
    results = tmp_path / "results"
    shutil.copytree(run, os.fsdecode(bytes(results) + b"/run\xff"))
    with pytest.raises(SystemExit) as stop:
        main([str(results), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "run\\xff: its name is not UTF-8; rename it" in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_an_integer_past_64_bits_in_a_log_is_one_line(study, tmp_path, capsys):
    """The eighteenth probe round: `epoch` of 10**30 in a line of an incomplete run ended report and export in an
    OverflowError traceback. The line is unreadable, as malformed JSON is."""
    from memrl_bench.core.export import main

    run = tmp_path / "results" / "run"
    shutil.copytree(next(p.parent for p in sorted(study.rglob("manifest.json"))), run)
    for name in ("COMPLETE", "metrics.json"):
        (run / name).unlink()
    lines = (run / "episodes.jsonl").read_text().splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), "epoch": 10**30})
    (run / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as stop:
        main([str(run.parent), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "an integer past 64 bits" in err and err.count("\n") == 1, err


def test_a_lone_surrogate_in_a_log_is_one_line(study, tmp_path, capsys):
    """The nineteenth round: `"error": "bad \\udfff"` (legal JSON, no text) in an incomplete run's line ended the export in
    pyarrow's UnicodeEncodeError traceback."""
    from memrl_bench.core.export import main

    run = tmp_path / "results" / "run"
    shutil.copytree(next(p.parent for p in sorted(study.rglob("manifest.json"))), run)
    for name in ("COMPLETE", "metrics.json"):
        (run / name).unlink()
    lines = (run / "episodes.jsonl").read_text().splitlines()
    lines[0] = lines[0].replace('"error": null', '"error": "bad \\udfff"', 1)
    assert "\\udfff" in lines[0]
    (run / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as stop:
        main([str(run.parent), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "a lone surrogate escape" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("info", [{"trimmed_tokens": "many"}, {"format_failures": [1]}, {"answer_key": ["A"]}])
def test_a_count_of_another_type_in_an_incomplete_log_is_one_line(study, tmp_path, info):
    """The twentieth probe round: `info.trimmed_tokens` a string (or `answer_key` a list) in an incomplete run's line ended
    the report in a TypeError traceback. The line is unreadable, named with its field; and an incomplete run's metrics.json
    (a poison share as a string did the same) is not read."""
    from memrl_bench.core.records import read_run
    from memrl_bench.core.runfolder import CorruptRunFolderError

    run = tmp_path / "run"
    shutil.copytree(next(p.parent for p in sorted(study.rglob("manifest.json"))), run)
    (run / "COMPLETE").unlink()
    assert read_run(run).metrics is None  # a metrics.json left beside an incomplete log
    lines = (run / "episodes.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "info": {**first["info"], **info}})
    (run / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(CorruptRunFolderError, match=f"line 1: info: info.{next(iter(info))} must be"):
        read_run(run)
