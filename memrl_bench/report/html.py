"""report.html: one self-contained page (inline CSS, figures as inline SVG, no scripts)."""

from __future__ import annotations

import html
import time

from memrl_bench.report.figures import Figure
from memrl_bench.report.load import Results, common_settings
from memrl_bench.report.tables import Table, synthetic_suffix, variant_labels

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f; margin: 0; background: #fafafa; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 8px; padding-top: 8px; border-top: 1px solid #ddd; }
h3 { font-size: 15px; margin: 20px 0 6px; }
.meta { color: #555; margin: 0 0 12px; }
.warn { background: #fff4e5; border-left: 4px solid #f0a020; padding: 8px 12px; margin: 12px 0; }
nav { margin: 8px 0 16px; }
nav a { margin-right: 14px; }
a { color: #0b5cad; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; margin: 4px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; vertical-align: top; }
th { background: #f0f0f3; white-space: normal; overflow-wrap: anywhere; min-width: 4em; max-width: 11em; vertical-align: bottom; }
td:first-child, th:first-child, td.text, th.text { text-align: left; }
tr:nth-child(even) td { background: #fafafc; }
.note { color: #555; font-size: 12.5px; margin: 2px 0 10px; max-width: 1100px; }
figure { margin: 12px 0 18px; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 13px; color: #333; margin-bottom: 4px; font-weight: 600; }
.skipped { color: #777; font-style: italic; }
details { margin: 8px 0; }
summary { cursor: pointer; font-weight: 600; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; background: #eee; font-size: 12px; margin-right: 3px; }
.badge.synthetic { background: #e8f0fe; color: #1a4fa0; }
.badge.runtime_learning, .badge.finetuned_backbone { background: #fde8e8; color: #a01a1a; }
.badge.incomplete { background: #fff4e5; color: #8a5300; }
.badge.complete { background: #e6f4ea; color: #1e6b32; }
"""

# Sections: id, title, the tables and figures in them, in order.
SECTIONS = (
    ("axes", "Along the study's axes", ("fig:axes",)),
    ("learning", "Success over epochs", ("fig:sr_csr", "sr_csr_train", "sr_csr_validation")),
    ("test", "Test success per split", ("fig:test_sr", "test_sr", "choice_letters")),
    ("forgetting", "Forgetting", ("fig:forgetting", "forgetting_train", "forgetting_validation")),
    ("cost", "Latency and cost", ("fig:latency", "latency", "usage")),
    ("memory", "Memory growth and use", ("memory", "fig:memory_growth", "fig:retrieval", "fig:q_utility")),
    ("poisoning", "Memory poisoning", ("poisoning",)),
    ("drift", "Drift", ("drift",)),
    ("gain_cost", "Gain against cost", ("fig:gain_cost", "gain_cost")),
    # "fig?:" a figure shown only when drawn: a folder has runs of some of these protocols, not all
    (
        "protocols",
        "Streaming, replay, repair and transfer",
        ("protocols", "fig?:streaming", "fig?:replay", "fig?:repair", "fig?:transfer", "transfer"),
    ),
)
LIST_COLUMNS = {"split hashes"}  # "a; b" cells shown one item per line
TEXT_COLUMNS = {"variant", "metric", "labels", "run", "status", "model", "embedder", "split hashes", "config hash", "git commit"}


def _badges(labels: str) -> str:
    return "".join(f'<span class="badge {html.escape(lab)}">{html.escape(lab)}</span>' for lab in labels.split(", ") if lab)


def table_html(table: Table) -> str:
    view = table.view
    head = "".join(f'<th class="{"text" if c in TEXT_COLUMNS else ""}">{html.escape(str(c))}</th>' for c in view.columns)
    rows = []
    for record in view.itertuples(index=False):
        cells = []
        for column, value in zip(view.columns, record):
            text = _badges(str(value)) if column in ("labels", "status") else html.escape(str(value))
            if column in LIST_COLUMNS:
                text = text.replace("; ", "<br>")
            cells.append(f'<td class="{"text" if column in TEXT_COLUMNS else ""}">{text}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<h3>{html.escape(table.title)} <small>(<a href="tables/{table.name}.csv">CSV</a>)</small></h3>'
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
        f'<p class="note">{html.escape(table.note)}</p>'
    )


def figure_html(figure: Figure) -> str:
    if figure.svg is None:
        return f'<p class="skipped">Figure skipped — {html.escape(figure.title)}: {html.escape(figure.note)}.</p>'
    return f'<figure id="fig-{html.escape(figure.name)}"><figcaption>{html.escape(figure.title)}</figcaption>{figure.svg}</figure>'


def _section_variants(tables: list[Table], results: Results) -> list[str]:
    named = [v for t in tables if "variant" in t.view for v in t.view["variant"]]
    return list(dict.fromkeys(named)) or list(results.runs["variant"].unique())


def section_headings(results: Results, tables: dict[str, Table]) -> dict[str, str]:
    """The synthetic suffix per section id and per table name (for tables.md too)."""
    labels = variant_labels(results.runs)
    out = {}
    for section_id, _, parts in SECTIONS:
        in_section = [tables[p] for p in parts if p in tables]
        suffix = synthetic_suffix(_section_variants(in_section, results), labels)
        out[section_id] = suffix
        out |= {t.name: suffix for t in in_section}
    return out


def _status_line(results: Results) -> str:
    runs = results.runs
    complete = int(runs["complete"].sum())
    parts = [f"{len(runs)} run folder{'s' if len(runs) != 1 else ''}", f"{complete} complete"]
    if complete < len(runs):
        parts.append(f"{len(runs) - complete} incomplete")
    if results.missing:
        parts.append(f"{len(results.missing)} missing")
    return ", ".join(parts)


def _warnings(results: Results) -> str:
    runs = results.runs
    notes = []
    incomplete = runs[~runs["complete"]]
    if len(incomplete):
        names = ", ".join(html.escape(r) for r in incomplete["run"])
        notes.append(
            f"Incomplete runs (no COMPLETE marker or no metrics.json): {names}. Their whole epochs count in the per-epoch and test tables; "
            "a partly played epoch is left out; end-of-run memory and usage tables use complete runs only."
        )
    if results.missing:
        notes.append(
            f"Missing runs (asked for by a sweep's multirun.yaml, no run folder): {', '.join(html.escape(m) for m in results.missing)}."
        )
    if results.skipped:
        notes.append("Run folders left out because they cannot be read: " + "; ".join(html.escape(s) for s in results.skipped) + ".")
    return "".join(f'<p class="warn">{n}</p>' for n in notes)


def shared_settings_line(results: Results) -> str:
    """What every run's command set alike (left out of the variant names), or that no setting is common."""
    shared = common_settings(results.runs)
    if not shared:
        return "No command-line setting is common to every run: each variant is named by what it sets."
    return f"Settings shared by every run (left out of the variant names): {', '.join(shared)}"


def _shared_settings(results: Results) -> str:
    return f'<p class="meta">{html.escape(shared_settings_line(results))}</p>'


def _runs_section(results: Results, tables: dict[str, Table]) -> str:
    missing = ""
    if results.missing:
        missing = "<h3>Missing runs</h3><ul>" + "".join(f"<li>{html.escape(m)}</li>" for m in results.missing) + "</ul>"
    return (
        '<section id="runs"><h2>Runs</h2>'
        f"<details><summary>Provenance of {_status_line(results)}: config hash, git commit, model, embedder, split hashes, labels, "
        "status</summary>"
        f"{table_html(tables['runs'])}{missing}</details></section>"
    )


def render(results: Results, tables: dict[str, Table], figures: dict[str, Figure], findings: str) -> str:
    headings = section_headings(results, tables)
    body = []
    nav = []
    for section_id, title, parts in SECTIONS:
        content = []
        for part in parts:
            if part.startswith("fig:"):
                content.append(figure_html(figures[part.removeprefix("fig:")]))
            elif part.startswith("fig?:"):
                if (figure := figures[part.removeprefix("fig?:")]).svg is not None:
                    content.append(figure_html(figure))
            elif part in tables:
                content.append(table_html(tables[part]))
        if content:
            body.append(f'<section id="{section_id}"><h2>{html.escape(title + headings[section_id])}</h2>{"".join(content)}</section>')
            nav.append(f'<a href="#{section_id}">{html.escape(title)}</a>')
    nav.append('<a href="#runs">Runs</a>')
    nav.append('<a href="episodes/index.html">Episodes (every run, every episode)</a>')  # memrl_bench/report/viewer.py
    if findings:
        nav.insert(0, '<a href="#findings">Findings</a>')
    if 'id="sensitivity"' in findings:  # memrl_bench.report.sensitivity: the phase diagrams follow the findings
        nav.insert(1, '<a href="#sensitivity">Lock-in region</a>')
    labels = sorted({lab for labels in results.runs["labels"] for lab in labels.split(", ") if lab})
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>memrl-bench report — {html.escape(results.root.name)}</title><style>{CSS}</style></head>
<body><main>
<h1>memrl-bench report</h1>
<p class="meta">{html.escape(str(results.root))} · {_status_line(results)} · labels: {_badges(", ".join(labels)) or "none"} · generated {time.strftime("%Y-%m-%d %H:%M")}</p>
{_shared_settings(results)}
{_warnings(results)}
<nav>{"".join(nav)}</nav>
{findings}
{"".join(body)}
{_runs_section(results, tables)}
<p class="note">Files beside this page: tables.md (every table in Markdown), tables/*.csv (the numbers), figures/*.svg.</p>
</main></body></html>
"""  # noqa: E501 (a program's or page's text, kept as written)
