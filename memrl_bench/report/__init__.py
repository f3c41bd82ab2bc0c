"""The report of a results folder: tables (CSV, Markdown), figures (PNG) and report.html.

`report(results_dir, out_dir)` loads every run folder under `results_dir`, aggregates
over seeds, and writes everything to `out_dir` (default: results_dir/report/).
"""

from __future__ import annotations

from pathlib import Path

from memrl_bench.report.aggregate import aggregate
from memrl_bench.report.figures import all_figures
from memrl_bench.report.html import findings_html, render, section_headings
from memrl_bench.report.load import ReportInputError, common_settings, load
from memrl_bench.report.tables import all_tables, write_tables

__all__ = ["ReportInputError", "report"]


def report(results_dir: Path | str, out_dir: Path | str | None = None) -> Path:
    """Write the report of every run under `results_dir`; return the path of report.html."""
    results = load(Path(results_dir))
    out = Path(out_dir) if out_dir is not None else Path(results_dir) / "report"
    agg = aggregate(results)
    tables = all_tables(results, agg)
    figures = all_figures(results, agg)
    out.mkdir(parents=True, exist_ok=True)
    shared = common_settings(results.runs)
    preamble = f"# memrl-bench report: {results.root}\n\nSettings shared by every run (left out of the variant names): {', '.join(shared) or 'none'}\n"
    write_tables(tables, out, section_headings(results, tables), preamble)
    (out / "figures").mkdir(exist_ok=True)
    for figure in figures.values():
        if figure.png is not None:
            (out / "figures" / f"{figure.name}.png").write_bytes(figure.png)
    page = out / "report.html"
    page.write_text(render(results, tables, figures, findings_html(Path(results_dir))))
    return page
