"""The report and the findings of a folder with bad runs in it: each bad run folder is one
warning and the rest is reported; the report folder is replaced whole or not at all.

Readers trust nothing: a run marked COMPLETE is checked as the runner checks it (its log
against its schedule, its metrics, its final snapshot against SHA256SUMS), and its whole
manifest against the digest written with it."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memrl_bench.report as report_module
from memrl_bench import findings as fd
from memrl_bench.core.runfolder import DIGEST, CorruptRunFolderError, RunFolder, exchange
from memrl_bench.report import ReportInputError, report
from memrl_bench.report.cli import main as report_main
from memrl_bench.report.figures import Figure
from memrl_bench.report.html import SECTIONS
from memrl_bench.report.load import load
from memrl_bench.runner.loop import run
from tests.helpers import alive, children_of, config


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Two good runs, and one bad run folder of each kind beside them."""
    root = tmp_path_factory.mktemp("results")
    for seed in (0, 1):
        run(config(protocol={"epochs": 2}, seed=seed, task_order_seed=seed), root / f"seed={seed}")
    good = root / "seed=0"
    bad = {}
    bad["refused"] = root / "refused-job"  # a manifest and nothing else
    bad["refused"].mkdir()
    shutil.copy(good / "manifest.json", bad["refused"])
    bad["no_log"] = shutil.copytree(good, root / "complete-without-log")
    (bad["no_log"] / "episodes.jsonl").unlink()
    bad["twice"] = shutil.copytree(good, root / "two-writers")
    (bad["twice"] / "episodes.jsonl").write_text((good / "episodes.jsonl").read_text() * 2)
    bad["edited"] = shutil.copytree(good, root / "edited-manifest")
    manifest = json.loads((bad["edited"] / "manifest.json").read_text())
    manifest["config"]["method"]["name"] = "rag"
    (bad["edited"] / "manifest.json").write_text(json.dumps(manifest))
    bad["garbled"] = shutil.copytree(good, root / "garbled-log")
    (bad["garbled"] / "episodes.jsonl").write_text("{oops\n" + (good / "episodes.jsonl").read_text())
    # damage that used to be read as whole
    torn = shutil.copytree(good, root / "torn-last-line")
    (torn / "episodes.jsonl").write_bytes((good / "episodes.jsonl").read_bytes()[:-20])
    missing = shutil.copytree(good, root / "missing-batch")
    lines = (good / "episodes.jsonl").read_text().splitlines(keepends=True)
    last_batch = [line for line in lines if _batch(line) == _batch(lines[-1])]
    (missing / "episodes.jsonl").write_text("".join(lines[: -len(last_batch)]))
    _edit_manifest(shutil.copytree(good, root / "edited-label"), lambda m: m.update(labels=[]))
    _edit_manifest(shutil.copytree(good, root / "edited-split-hash"), lambda m: m["split_hashes"].update(train="0" * 64))
    _edit_manifest(shutil.copytree(good, root / "unsealed-manifest"), lambda m: m.pop(DIGEST))
    memory = shutil.copytree(good, root / "edited-memory") / "memory" / "final" / "items.jsonl"
    items = [json.loads(line) for line in memory.read_text().splitlines()]
    items[0]["content"] = EDITED_MEMORY
    memory.write_text("".join(json.dumps(item) + "\n" for item in items))
    metrics = shutil.copytree(good, root / "edited-metrics") / "metrics.json"  # a value changed, the episode count kept
    edited = json.loads(metrics.read_text())
    edited["cumulative_success_rate"]["train"]["2"] = EDITED_SR
    metrics.write_text(json.dumps(edited, indent=1, sort_keys=True))
    (shutil.copytree(good, root / "unsealed-metrics") / "COMPLETE").write_text("complete\n")  # as runs wrote it before the digest
    forged = [json.loads(line) for line in lines[-10:]]  # retries no schedule counts, each a success
    forged = [{**r, "episode_id": r["episode_id"] + "-a1", "attempt": 1, "success": True, "reward": 1.0} for r in forged]
    appended = shutil.copytree(good, root / "appended-retries") / "episodes.jsonl"
    appended.write_text(appended.read_text() + "".join(json.dumps(r) + "\n" for r in forged))
    (shutil.copytree(good, root / "non-utf8-checksums") / "memory" / "final" / "SHA256SUMS").write_bytes(
        b"\xff\xfe" + (good / "memory" / "final" / "SHA256SUMS").read_bytes()
    )
    # another run's final snapshot, whole and checksummed, in place of the run's own (thirty-first round, 34b)
    swapped = shutil.copytree(good, root / "swapped-final") / "memory" / "final"
    shutil.rmtree(swapped)
    shutil.copytree(root / "seed=1" / "memory" / "final", swapped)
    # another run's manifest, whole in itself (its own config hash and digest), in place of the run's own (33rd round)
    shutil.copy(root / "seed=1" / "manifest.json", shutil.copytree(good, root / "swapped-manifest") / "manifest.json")
    # JSON that is no object (32nd round: a traceback in report, export and resume, and no report of any run)
    (shutil.copytree(good, root / "non-object-line") / "episodes.jsonl").write_text("[]\n" + "".join(lines))
    (shutil.copytree(good, root / "non-object-metrics") / "metrics.json").write_text("1")
    return root


EDITED_MEMORY = "An edited memory that no episode wrote"
EDITED_SR = 0.987


def _batch(line: str) -> tuple:
    record = json.loads(line)
    return record["phase"], record["split"], record["epoch"], record["batch_index"]


def _edit_manifest(folder: Path, edit) -> None:
    """Edit manifest.json by hand, keeping its config (and so its config hash) and its format."""
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))


BAD = {
    "refused-job": "no episodes yet",
    "complete-without-log": "is marked COMPLETE but has no episodes.jsonl",
    "two-writers": "episode ids more than once",
    "edited-manifest": "config_hash does not match its config",
    "garbled-log": "line 1 is not valid JSON",
    "torn-last-line": "is marked COMPLETE, but the last line of episodes.jsonl is torn",
    "missing-batch": "is marked COMPLETE, but episodes.jsonl holds 156 episodes, its schedule 160",
    "edited-label": "its manifest_sha256 does not match its contents",
    "edited-split-hash": "its manifest_sha256 does not match its contents",
    "unsealed-manifest": "has no manifest_sha256",
    "edited-memory": "memory/final/items.jsonl does not match its checksum",
    "non-utf8-checksums": "memory/final/SHA256SUMS is not UTF-8 text",
    "edited-metrics": "its metrics.json does not match the metrics_sha256 its COMPLETE records",
    "unsealed-metrics": "its COMPLETE records no metrics_sha256",
    "appended-retries": "its episodes.jsonl does not match the episodes_sha256 its COMPLETE records",
    "swapped-final": "its memory/final/SHA256SUMS does not match the final_memory_sha256 its COMPLETE records",
    "swapped-manifest": "its manifest.json does not match the manifest_file_sha256 its COMPLETE records",
    "non-object-line": "line 1 is not valid JSON (a JSON value that is not an object)",
    "non-object-metrics": "metrics.json holds no JSON object",
}


def _left_out_once(results: Path, folder: str) -> None:
    """The report's loader leaves `folder` out with one line naming it and what failed, and reads the good runs."""
    loaded = load(results)
    assert sorted(loaded.runs["run"]) == ["seed=0", "seed=1"]
    lines = [line for line in loaded.skipped if f"/{folder}" in line]
    assert len(lines) == 1 and BAD[folder] in lines[0], loaded.skipped


def test_report_refuses_a_complete_run_with_a_torn_last_line(results):
    _left_out_once(results, "torn-last-line")


def test_report_refuses_a_complete_run_missing_a_batch(results):
    _left_out_once(results, "missing-batch")


def test_edited_manifest_label_is_refused(results):
    _left_out_once(results, "edited-label")


def test_edited_split_hash_is_refused(results):
    _left_out_once(results, "edited-split-hash")


def test_a_manifest_without_its_digest_is_refused_naming_the_migration(results):
    _left_out_once(results, "unsealed-manifest")
    assert "scripts/seal_run_folders.py" in next(line for line in load(results).skipped if "/unsealed-manifest" in line)


def test_edited_metrics_are_refused(results):
    assert json.loads((results / "edited-metrics" / "metrics.json").read_text())["cumulative_success_rate"]["train"]["2"] == EDITED_SR
    _left_out_once(results, "edited-metrics")


def test_json_that_is_no_object_is_refused_in_one_line(results):
    _left_out_once(results, "non-object-line")
    _left_out_once(results, "non-object-metrics")


def test_lines_appended_to_a_complete_log_are_refused(results):
    """Lines no schedule counts (retries of other ids, each a success) appended to a complete run's log."""
    _left_out_once(results, "appended-retries")


def test_a_complete_marker_without_the_metrics_digest_is_refused_naming_the_migration(results):
    _left_out_once(results, "unsealed-metrics")
    assert "scripts/seal_run_folders.py" in next(line for line in load(results).skipped if "/unsealed-metrics" in line)


def test_a_final_snapshot_swapped_for_another_runs_is_refused_and_rebuilt_as_the_line_says(results, tmp_path):
    """Another run's final snapshot passes its own checksums; the digest COMPLETE records of it does not."""
    _left_out_once(results, "swapped-final")
    folder = shutil.copytree(results / "swapped-final", tmp_path / "swapped-final")
    with pytest.raises(CorruptRunFolderError, match="delete the folder memory/ and the COMPLETE file") as refused:
        run(config(protocol={"epochs": 2}, seed=0, task_order_seed=0), folder)
    assert "seal_run_folders" not in str(refused.value)  # sealing would bless another run's memory
    shutil.rmtree(folder / "memory")
    (folder / "COMPLETE").unlink()
    run(config(protocol={"epochs": 2}, seed=0, task_order_seed=0), folder)
    own = results / "seed=0" / "memory" / "final" / "items.jsonl"
    assert (folder / "memory" / "final" / "items.jsonl").read_bytes() == own.read_bytes()
    assert own.read_bytes() != (results / "seed=1" / "memory" / "final" / "items.jsonl").read_bytes()
    assert not load(tmp_path).skipped  # read as whole again


def test_a_manifest_swapped_for_another_runs_is_refused(results):
    """Another run's manifest is whole in itself: report and export credited this run's log to the other run's config."""
    _left_out_once(results, "swapped-manifest")
    assert "put back the run's own manifest.json" in next(line for line in load(results).skipped if "/swapped-manifest" in line)


def test_non_utf8_sha256sums_is_one_line(results):
    _left_out_once(results, "non-utf8-checksums")
    with pytest.raises(
        CorruptRunFolderError, match=r"non-utf8-checksums/memory/final/SHA256SUMS is not UTF-8 text \(byte 0\)"
    ) as refused:  # and the runner: one line (an InputError), no traceback
        run(config(protocol={"epochs": 2}, seed=0, task_order_seed=0), results / "non-utf8-checksums")
    assert "\n" not in str(refused.value)


def test_viewer_shows_a_snapshot_failing_its_checksum_as_damaged(results, tmp_path):
    _left_out_once(results, "edited-memory")
    report(results, tmp_path / "report")
    index = (tmp_path / "report" / "episodes" / "index.html").read_text()
    assert re.search(
        r"Left out \(damaged or cannot be read\): [^<]*edited-memory/memory/final/items.jsonl does not match its checksum", index
    )
    for data in (tmp_path / "report" / "episodes" / "data").iterdir():  # the edited memory is shown nowhere as real
        packed = re.search(r'"([A-Za-z0-9+/=]+)"', data.read_text()).group(1)
        assert EDITED_MEMORY not in gzip.decompress(base64.b64decode(packed)).decode()


def test_bad_run_folders_are_skipped_with_one_warning_each_and_the_report_goes_on(results, tmp_path, capsys):
    report_main([str(results), "--out", str(tmp_path / "report")])
    out, err = capsys.readouterr()
    assert out.strip() == str(tmp_path / "report" / "report.html")
    warnings = err.splitlines()
    assert len(warnings) == len(BAD) and all(w.startswith("memrl-bench-report: warning: skipped ") for w in warnings)
    for folder, why in BAD.items():
        assert sum(folder in w and why in w for w in warnings) == 1, (folder, warnings)
    page = (tmp_path / "report" / "report.html").read_text()
    assert "2 run folders, 2 complete" in page and "left out because they cannot be read" in page and "two-writers" in page


def test_a_run_with_no_played_episode_or_a_resealed_snapshot_with_a_word_for_a_q_value_leaves_the_report_whole(results, tmp_path, capsys):
    """Round 25b: a poison run stopped after its poison batch (its log holds poison lines only) ended the report of every
    run in numpy's TypeError; a final snapshot whose q_value is a word, its checksum written again, in a ValueError."""
    root = tmp_path / "results"
    good = shutil.copytree(results / "seed=0", root / "good")
    poisoned = shutil.copytree(results / "seed=1", root / "poison-only")
    (poisoned / "COMPLETE").unlink()  # stopped: read as a prefix
    lines = [json.loads(line) for line in (poisoned / "episodes.jsonl").read_text().splitlines()]
    (poisoned / "episodes.jsonl").write_text("".join(json.dumps({**r, "status": "poison"}) + "\n" for r in lines))
    final = shutil.copytree(good, root / "worded-q-value") / "memory" / "final"
    snapshot = final / "items.jsonl"
    items = [json.loads(line) for line in snapshot.read_text().splitlines()]
    items[0]["fields"]["q_value"] = "high"
    snapshot.write_text("".join(json.dumps(item) + "\n" for item in items))
    named, digest = str(snapshot.relative_to(final)), hashlib.sha256(snapshot.read_bytes()).hexdigest()
    sums = (final / "SHA256SUMS").read_text().splitlines()
    (final / "SHA256SUMS").write_text("".join((digest + line[64:] if line.split()[1] == named else line) + "\n" for line in sums))
    RunFolder(final.parent.parent).mark_complete()  # and COMPLETE's digest of the snapshot written again
    report_main([str(root), "--out", str(tmp_path / "report")])
    _, err = capsys.readouterr()
    assert "worded-q-value: the final memory's item" in err and "q_value that is not a number" in err, err
    assert "poison-only" in (tmp_path / "report" / "report.html").read_text()


def test_the_findings_skip_bad_run_folders_with_one_warning_each(results):
    warnings: list[str] = []
    found = fd.findings(results, warn=warnings.append)
    assert found and len(warnings) == len(BAD)
    for folder, why in BAD.items():
        expected = (
            "incomplete (no COMPLETE)" if folder == "refused-job" else why.replace("is marked COMPLETE but has", "marked COMPLETE but has")
        )
        assert sum(folder in w and expected in w for w in warnings) == 1, (folder, warnings)


def test_the_report_folder_is_replaced_whole_or_not_at_all(results, tmp_path, monkeypatch):
    names = [p.split(":", 1)[1] for _, _, parts in SECTIONS for p in parts if p.startswith(("fig:", "fig?:"))]
    skipped = {name: Figure(name, name, None, "not drawn here") for name in names}
    monkeypatch.setattr(report_module, "all_figures", lambda *args: skipped)  # figures are slow and beside the point
    out = tmp_path / "report"
    report(results, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real_write_tables = report_module.write_tables

    def killed_after_the_tables(*args, **kwargs):
        real_write_tables(*args, **kwargs)
        raise KeyboardInterrupt("killed after tables.md, before report.html")

    monkeypatch.setattr(report_module, "write_tables", killed_after_the_tables)
    with pytest.raises(KeyboardInterrupt):
        report(results, out)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # the old report, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no temporary folder left


def test_a_report_killed_while_it_swaps_the_folder_leaves_a_whole_report(results, tmp_path, monkeypatch):
    """A kill at the swap itself: report/ is the new report, whole (before, the swap was two
    renames, and a kill between them left no report/ at all)."""
    names = [p.split(":", 1)[1] for _, _, parts in SECTIONS for p in parts if p.startswith(("fig:", "fig?:"))]
    monkeypatch.setattr(report_module, "all_figures", lambda *args: {name: Figure(name, name, None, "not drawn here") for name in names})
    out = tmp_path / "report"
    report(results, out)
    (out / "report.html").write_text("the previous report\n")

    def killed_after(step):
        def call(*args):
            step(*args)
            raise KeyboardInterrupt(f"killed after {step.__name__}")

        return call

    monkeypatch.setattr(report_module.os, "replace", killed_after(os.replace))  # the swap's first rename, where there is no exchange
    monkeypatch.setattr(report_module, "exchange", killed_after(exchange))
    with pytest.raises(KeyboardInterrupt):
        report(results, out)
    assert "the previous report" not in (out / "report.html").read_text() and (out / "episodes" / "compare.html").exists()


def test_an_out_folder_holding_other_files_is_refused(results, tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    with pytest.raises(ReportInputError, match="holds files a report does not write \\(notes.txt\\); choose another --out"):
        report(results, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killed_report_leaves_no_pool_worker(results, tmp_path):
    """memrl-bench-report SIGKILLed while the findings' process pool reads the run folders (14 of
    them: the pool is used above 8), twice: no worker is alive 3 s later. Before, 7 of 20 such
    kills left forked workers blocked on the pool's queue for good."""
    assert len(list(results.rglob("manifest.json"))) > 8
    survivors = []
    for _ in range(2):
        report_process = subprocess.Popen(
            [sys.executable, "-m", "memrl_bench.report", str(results), "--out", str(tmp_path / "report")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        workers: list[int] = []
        while report_process.poll() is None and not workers:
            workers = children_of(report_process.pid)
            time.sleep(0.002)
        report_process.kill()
        report_process.wait()
        assert workers, "the report ended before its pool started"
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and any(alive(w) for w in workers):
            time.sleep(0.05)
        survivors += [w for w in workers if alive(w)]
    for pid in survivors:  # the test's own leftovers, if it fails
        os.kill(pid, signal.SIGKILL)
    assert survivors == []


def resealed(folder: Path, edit) -> Path:
    """`folder`'s manifest with `edit` applied to its config, its hash and digest written again (as another harness version
    would have written them)."""
    from memrl_bench.core.config import config_hash
    from memrl_bench.core.runfolder import sealed

    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest["config"])
    manifest["config_hash"] = config_hash(manifest["config"])
    (folder / "manifest.json").write_text(json.dumps(sealed({k: v for k, v in manifest.items() if k != DIGEST}), indent=2))
    if (folder / "COMPLETE").exists():
        RunFolder(folder).mark_complete()  # and its COMPLETE, which holds the manifest's digest
    return folder


def test_runs_of_another_harness_version_beside_this_ones_leave_the_report_whole(results, tmp_path, capsys):
    """Round 28b: runs whose method has a setting the run beside lacks (written by an older or a newer harness) ended the
    report of every run in a TypeError (the figures sorted None with numbers); a protocol this version does not know
    ended it in UnknownNameError, where the findings leave such a run out."""
    root = tmp_path / "results"
    shutil.copytree(results / "seed=0", root / "now")
    resealed(shutil.copytree(results / "seed=1", root / "older"), lambda config: config["method"].update(alpha=0.3))
    resealed(shutil.copytree(results / "seed=1", root / "newer"), lambda config: config["method"].update(future_setting=0.5))
    resealed(shutil.copytree(results / "seed=1", root / "unknown-protocol"), lambda config: config["protocol"].update(name="future"))
    report_main([str(root), "--out", str(tmp_path / "report")])
    _, err = capsys.readouterr()
    assert "unknown-protocol" in err and "future" in err, err
    page = (tmp_path / "report" / "report.html").read_text()
    assert "older" in page and "newer" in page


def test_a_manifest_whose_config_nests_past_the_limit_leaves_its_run_out_with_one_line(results, tmp_path, capsys):
    """51b: a list nested 500 deep in a manifest's config, its hash and digest made again, ended the report in a
    RecursionError traceback (its canonical form recurses twice per level); a run's own config is refused past 64."""
    root = tmp_path / "results"
    shutil.copytree(results / "seed=0", root / "now")
    deep: object = 1
    for _ in range(500):
        deep = [deep]
    resealed(shutil.copytree(results / "seed=1", root / "deep"), lambda config: config["method"].update(extra=deep))
    report_main([str(root), "--out", str(tmp_path / "report")])
    _, err = capsys.readouterr()
    assert "Traceback" not in err and f"{root / 'deep' / 'manifest.json'}" in err and "method: nested more than 64 deep" in err, err
    assert "method: nested more than 64 deep" in (tmp_path / "report" / "report.html").read_text()  # the page says it left it out
