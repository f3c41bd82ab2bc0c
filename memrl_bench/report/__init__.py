"""The report of a results folder: tables (CSV, Markdown), figures (PNG) and report.html.

`report(results_dir, out_dir)` loads every run folder under `results_dir` (load_for_report:
one read per run serves the tables and the episode viewer), aggregates over seeds, and
writes everything to `out_dir` (default: results_dir/report/). The folder is written
whole or not at all: into a temporary folder beside it, then exchanged with the old one in
one step, so a killed report never leaves new tables beside an old page, nor no report.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from memrl_bench.core.markup import markdown_text
from memrl_bench.core.runfolder import damaged_by_writing, exchange
from memrl_bench.findings import findings, load_runs
from memrl_bench.findings import render_html as render_findings
from memrl_bench.report import sensitivity
from memrl_bench.report.aggregate import aggregate
from memrl_bench.report.figures import all_figures
from memrl_bench.report.html import render, section_headings, shared_settings_line
from memrl_bench.report.load import ReportInputError, Results, load
from memrl_bench.report.phase_diagrams import figures as phase_figures
from memrl_bench.report.tables import all_tables, write_tables
from memrl_bench.report.viewer import run_page, write_viewer

__all__ = ["ReportInputError", "load_for_report", "report", "write_report"]


# What a report folder holds; --out refuses a folder with anything else in it.
REPORT_FILES = frozenset({"report.html", "tables.md", "tables", "figures", "episodes"})


def report(results_dir: Path | str, out_dir: Path | str | None = None) -> Path:
    """Write the report of every run under `results_dir`; return the path of report.html."""
    return write_report(load_for_report(results_dir), out_dir)


def load_for_report(results_dir: Path | str) -> Results:
    """Every run under `results_dir`, with each run's viewer data made while its records are read (the viewer then reads no run folder)."""
    return load(Path(results_dir), keep=run_page)


def write_report(results: Results, out_dir: Path | str | None = None) -> Path:
    """Write the report of loaded results (to results_dir/report by default); the path of report.html."""
    out = Path(out_dir) if out_dir is not None else results.root / "report"
    foreign = sorted(p.name for p in out.iterdir() if p.name not in REPORT_FILES) if out.is_dir() else []
    if out.exists() and (not out.is_dir() or foreign):
        raise ReportInputError(
            f"{out} holds files a report does not write ({', '.join(foreign[:3]) or 'it is a file'}); choose another --out"
        )
    if (run := damaged_by_writing(out)) is not None:
        raise ReportInputError(f"{out} is the run folder {run} or inside its memory snapshots; choose another --out")
    above = next((p for p in out.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise ReportInputError(f"{out}: {above} is a file, not a folder; choose another --out")
    agg = aggregate(results)
    tables = all_tables(results, agg)
    figures = all_figures(results, agg)
    runs = load_runs(results.root, warn=None)  # the report names unreadable runs itself
    grid = sensitivity.phase_diagrams(runs)
    found = findings(results.root, runs=sensitivity.at_centre(runs, grid) if grid else runs)
    section = render_findings(found, results.root) if found else ""
    if grid is not None:
        section += sensitivity.render_html(grid, phase_figures(grid))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        preamble = f"# memrl-bench report: {markdown_text(results.root)}\n\n{markdown_text(shared_settings_line(results))}\n"
        write_tables(tables, tmp, section_headings(results, tables), preamble)
        (tmp / "figures").mkdir()
        for figure in figures.values():
            if figure.svg is not None:
                (tmp / "figures" / f"{figure.name}.svg").write_text(figure.svg)
        (tmp / "report.html").write_text(render(results, tables, figures, section))
        write_viewer(results, tmp / "episodes")
        _replace_folder(out, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out / "report.html"


def _replace_folder(target: Path, new: Path) -> None:
    """Put the folder `new` in the place of `target`, the old one removed after: one exchange of
    the two where the system has it (a kill never leaves no report), else two renames."""
    if target.exists() and exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)  # now the old report
        return
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)
