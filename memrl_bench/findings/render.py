"""The findings as a Markdown or HTML section (the claims measured first, then one line per claim
not measured, naming the presets that would measure it), and the README's table of verdicts.

The model's name, the folder and the rows' arm names are the user's text: escaped in Markdown
by memrl_bench.core.markup and in HTML by html.escape.
"""

from __future__ import annotations

import html
from pathlib import Path

from memrl_bench.core.errors import resolved
from memrl_bench.core.markup import markdown_text
from memrl_bench.core.stats import NOT_MEASURED
from memrl_bench.findings.claim import Finding, Row

SECTION_TITLE = "Findings on the critique's claims"
INTERVALS = "Means with 95% t-intervals over task orders (n), or over tasks where a row says it is paired on the task"


def _how_to_measure(f: Finding) -> str:
    how = _presets_that_measure(f)
    other_study = not f.section.synthetic and f.section.study and f.section.study != f.study  # another real study's runs (LLB-DB's)
    return f"not measured by the runs of {f.section.study}; {how}" if other_study and not f.claim.needs_ground_truth else how


def _presets_that_measure(f: Finding) -> str:
    if f.claim.needs_ground_truth and not f.section.synthetic:
        return "needs the synthetic env's ground truth (which memories are harmful, their true utility, an oracle); an LLM env has none"
    if not f.presets:
        return f"not measured by the presets of {f.study}"
    presets = " and ".join(f.presets)
    commands = "; ".join(f"memrl-bench -m +experiment={p}" for p in f.presets)
    needs = (
        "needs a real model (no synthetic ground truth) and the runs"
        if f.claim.needs_real_model and f.section.synthetic
        else "needs the runs"
    )
    return (
        f"{needs} of the preset{'s' if len(f.presets) > 1 else ''} {presets} ({commands}; or all presets: memrl-bench "
        f"+experiment={f.study})"
    )


def _title_suffix(found: list[Finding]) -> str:
    """ " (synthetic)", or the model and env of a real-env section ("" with nothing found)."""
    if not found:
        return ""
    section = found[0].section
    return " (synthetic)" if section.synthetic else f" ({section.label.removeprefix('REAL MODEL ')})"


def _row_verdict(r: Row) -> str:
    return r.verdict or (f"interval {r.side}" if r.side is not None else "")


def _shown(folder: Path) -> Path:
    """A folder as the reader would type it: relative to the working directory when below it
    (a shipped study's findings name results/..., not the machine it was rendered on)."""
    folder = resolved(folder)
    return folder.relative_to(Path.cwd()) if folder.is_relative_to(Path.cwd()) else folder


def render_markdown(found: list[Finding], results_dir: Path) -> str:
    """The section as Markdown: the claims this folder measures first, then one line per claim it does not."""
    lines = [f"## {SECTION_TITLE}{markdown_text(_title_suffix(found))}", ""]
    if not found:
        return "\n".join(lines + [f"No complete runs under {markdown_text(results_dir)}."]) + "\n"
    measured = [f for f in found if f.verdict != NOT_MEASURED]
    lines += [
        f"All numbers: {markdown_text(found[0].section.label)}. {INTERVALS}; runs: "
        f"{markdown_text(_shown(results_dir))}. Each claim's verdict is that of the row marked (decides); other rows say where their "
        "interval lies.",
        "",
    ]
    cell = markdown_text
    for i, f in enumerate(measured, 1):
        lines += [
            f"### {i}. {f.claim.text}",
            "",
            f"**Verdict: {f.verdict}.** {f.claim.measurement}",
            "",
            "| measurement | value | verdict |",
            "|---|---|---|",
        ]
        lines += [f"| {cell(r.label)}{' (decides)' if r.primary else ''} | {cell(r.text)} | {_row_verdict(r)} |" for r in f.rows]
        lines.append("")
    unmeasured = [f for f in found if f.verdict == NOT_MEASURED]
    if unmeasured:
        lines += ["### Not measured by the runs in this folder", ""]
        lines += [f"- {f.claim.text} — {_how_to_measure(f)}." for f in unmeasured]
        lines.append("")
    return "\n".join(lines)


def render_html(found: list[Finding], results_dir: Path) -> str:
    """The section as HTML (the report embeds it once): the claims measured first, then one line per claim not measured."""
    esc = html.escape
    parts = [f'<section id="findings"><h2>{esc(SECTION_TITLE)}</h2>']
    if not found:
        return parts[0] + f"<p>No complete runs under {esc(str(results_dir))}.</p></section>"
    measured = [f for f in found if f.verdict != NOT_MEASURED]
    parts.append(
        f"<p><strong>{esc(found[0].section.label)}.</strong> {esc(INTERVALS)}. Each claim's verdict is that "
        "of the row marked <em>(decides)</em>; other rows say where their interval lies.</p>"
    )
    for i, f in enumerate(measured, 1):
        parts.append(
            f'<h3>{i}. {esc(f.claim.text)}</h3><p class="verdict {esc(f.verdict.replace(" ", "-"))}"><strong>Verdict: '
            f"{esc(f.verdict)}.</strong> {esc(f.claim.measurement)}</p>"
        )
        parts.append("<table><thead><tr><th>measurement</th><th>value</th><th>verdict</th></tr></thead><tbody>")
        for r in f.rows:
            label = esc(r.label) + (" <em>(decides)</em>" if r.primary else "")
            parts.append(f"<tr><td>{label}</td><td>{esc(r.text)}</td><td>{esc(_row_verdict(r))}</td></tr>")
        parts.append("</tbody></table>")
    unmeasured = [f for f in found if f.verdict == NOT_MEASURED]
    if unmeasured:
        parts.append('<h3 id="not-measured">Not measured by the runs in this folder</h3><ul>')
        parts += [f"<li>{esc(f.claim.text)} — {esc(_how_to_measure(f))}.</li>" for f in unmeasured]
        parts.append("</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def comparison_table(sections: list[tuple[str, list[Finding]]]) -> str:
    """One Markdown table of the claims' verdicts side by side, a column pair per section
    (title, findings): the deciding row's value and the verdict, or why it is not measured.
    The README's findings table is this table (scripts/readme_findings.py writes it); it
    compares the critique's claims (the drift claims have their own study)."""
    cell = lambda text: str(text).replace("|", "\\|")  # noqa: E731
    header = "| claim | " + " | ".join(f"{cell(title)} | verdict" for title, _ in sections) + " |"
    lines = [header, "|---|" + "---|---|" * len(sections)]
    by_id = [{f.id: f for f in found} for _, found in sections]
    order = [f for f in sections[0][1] if f.claim.study_kind == "critique"] if sections else []
    for listed in order:
        cells = []
        for found in by_id:
            f = found.get(listed.id)
            primary = f.primary if f else None
            if primary is None:
                why = (
                    "not run"
                    if f is None
                    else (
                        "needs ground truth (synthetic only)"
                        if f.claim.needs_ground_truth and not f.section.synthetic
                        else "not measured by these runs"
                    )
                )
                cells += [why, "–"]
            else:
                cells += [f"{cell(primary.label)}: {primary.text}", primary.verdict]
        lines.append(f"| {cell(listed.claim.text)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
