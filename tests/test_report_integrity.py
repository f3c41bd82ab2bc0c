"""The report and the findings of a folder with bad runs in it: each bad run folder is one
warning and the rest is reported; the report folder is replaced whole or not at all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import memrl_bench.report as report_module
from memrl_bench import findings as fd
from memrl_bench.report import ReportInputError, report
from memrl_bench.report.cli import main as report_main
from memrl_bench.report.figures import Figure
from memrl_bench.report.html import SECTIONS
from memrl_bench.runner import run
from tests.helpers import config


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
    return root


BAD = {
    "refused-job": "no episodes yet",
    "complete-without-log": "is marked COMPLETE but has no episodes.jsonl",
    "two-writers": "episode ids more than once",
    "edited-manifest": "config_hash does not match its config",
    "garbled-log": "line 1 is not valid JSON",
}


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


def test_the_findings_skip_bad_run_folders_with_one_warning_each(results):
    warnings: list[str] = []
    found = fd.findings(results, warn=warnings.append)
    assert found and len(warnings) == len(BAD)
    for folder, why in BAD.items():
        expected = "incomplete (no COMPLETE)" if folder == "refused-job" else why.replace("is marked COMPLETE but has", "marked COMPLETE but has")
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


def test_an_out_folder_holding_other_files_is_refused(results, tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    with pytest.raises(ReportInputError, match="holds files a report does not write \\(notes.txt\\); choose another --out"):
        report(results, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
