"""Where greedy lock-in appears: the critique's lock-in claims over the synthetic world's parameters.

SYNTHETIC: every number here is a simulation with known ground truth, not an LLM result.

The sensitivity study (conf/experiment/critique_sensitivity.yaml) runs the same arms on many
synthetic worlds, two world parameters (PARAMETERS) varied at a time around a centre. Each world
is a cell. Per cell and per measure (MEASURES), memrl ε=0 minus memrl ε=0.1, paired on the task
order (method seeds averaged per order first, as in memrl_bench.findings), with its 95%
t-interval over task orders; and each arm's own level (the companion table).

A cell counts as **lock-in** when the interval of the harmful share of last-epoch injections,
ε=0 minus ε=0.1, lies wholly above 0: greedy retrieval still injects more harmful memories at
the end of training than exploration does. It counts as the opposite when the interval lies
wholly below 0, and as inconclusive otherwise. `lock_in_sentence` says in one sentence where
the lock-in cells are.

The centre is each parameter's most common value over the cells (every grid passes through
it); a phase diagram is a pair of parameters with the cells where every other parameter is at
the centre, drawn when at least one cell moves both.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from memrl_bench.core.stats import Interval, side
from memrl_bench.findings import Run, Study, arm_label, is_greedy_epsilon_zero, paired, summary

# The world parameters the study varies (dotted config keys) and what each one is.
PARAMETERS = {
    "env.harmful_early_share": "share of epoch-1 lessons that are harmful",
    "env.harmful_quality": "logit effect of a harmful lesson (effect size)",
    "env.outcome_temperature": "outcome noise (0: one outcome per task and injected set)",
    "env.reward_flip_share": "reward noise: share of training episodes learned with the success flipped",
    "env.tasks.train": "training tasks, spread evenly over the types",
    "protocol.epochs": "training epochs",
}
# Per-run measures (memrl_bench.findings), each compared as ε=0 minus ε=0.1.
MEASURES = {
    "harmful_retrieval_share": "harmful share of last-epoch injections",
    "good_never_retrieved": "share of top-quartile memories never injected",
    "regret_last_epoch": "last-epoch regret against the oracle",
    "test_sr": "held-out test SR",
}
LOCK_IN_MEASURE = "harmful_retrieval_share"
REFERENCE_EPSILON = 0.1
TITLE = "Where ε = 0 locks in harmful memories"


def _value(config: dict, key: str) -> Any:
    for part in key.split("."):
        config = config.get(part, {}) if isinstance(config, dict) else {}
    return None if config == {} else config


@dataclass
class Cell:
    """One world of the grid: its parameter values, ε=0 - ε=0.1 per measure, each arm's levels."""

    values: dict[str, Any]
    difference: dict[str, Interval]
    levels: dict[str, dict[str, Interval]] = field(default_factory=dict)  # arm label -> measure -> interval

    @property
    def lock_in(self) -> int:
        """+1 lock-in (ε=0's harmful share above ε=0.1's), -1 below, 0 inconclusive."""
        return side(self.difference[LOCK_IN_MEASURE]) or 0


@dataclass
class Diagram:
    """Two parameters and the cells that vary only them."""

    x: str
    y: str
    xs: list
    ys: list
    cells: dict[tuple, Cell]  # (x value, y value) -> cell


@dataclass
class PhaseDiagrams:
    centre: dict[str, Any]
    cells: list[Cell]  # every cell, also those of no diagram (a parameter moved alone)
    diagrams: list[Diagram]


def cell_of(runs: list[Run], values: dict[str, Any]) -> Cell | None:
    """The cell of one world's runs; None without both memrl ε=0 and ε=0.1 held-out runs."""
    arms = Study(runs).arms("held_out", runs[0].temperature)  # a cell has one outcome temperature
    greedy = next((a for a in arms.values() if is_greedy_epsilon_zero(a[0].method)), None)
    reference = next(
        (a for a in arms.values() if arm_label(a[0].method) == arm_label({"name": "memrl", "epsilon": REFERENCE_EPSILON})), None
    )
    if greedy is None or reference is None:
        return None
    levels = {a[0].arm: {m: summary(a, m) for m in MEASURES} for a in arms.values()}
    return Cell(values, {m: paired(greedy, reference, m) for m in MEASURES}, levels)


def phase_diagrams(runs: list[Run]) -> PhaseDiagrams | None:
    """The grid of the synthetic held-out runs (findings.load_runs); None when no two parameters vary together."""
    worlds: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        if "synthetic" in r.labels and all(_value(r.config, k) is not None for k in PARAMETERS):  # runs older than a parameter are left out
            worlds[r.world_key].append(r)
    return grid_of([c for c in (cell_of(w, {k: _value(w[0].config, k) for k in PARAMETERS}) for w in worlds.values()) if c is not None])


def at_centre(runs: list[Run], grid: PhaseDiagrams) -> list[Run]:
    """The runs of the centre's world at every outcome temperature: the critique's findings
    (memrl_bench.findings, which compares outcome temperatures itself) of a sensitivity folder."""
    fixed = [k for k in PARAMETERS if k != "env.outcome_temperature"]
    return [r for r in runs if all(_value(r.config, k) == grid.centre[k] for k in fixed)]


def grid_of(cells: list[Cell]) -> PhaseDiagrams | None:
    """The centre and the phase diagrams of these cells (module doc); None without a diagram."""
    if not cells:
        return None
    centre = {k: Counter(c.values[k] for c in cells).most_common(1)[0][0] for k in PARAMETERS}
    diagrams = []
    for x, y in combinations(PARAMETERS, 2):
        others = [k for k in PARAMETERS if k not in (x, y)]
        chosen = {(c.values[x], c.values[y]): c for c in cells if all(c.values[k] == centre[k] for k in others)}
        if any(vx != centre[x] and vy != centre[y] for vx, vy in chosen):
            diagrams.append(Diagram(x, y, sorted({vx for vx, _ in chosen}), sorted({vy for _, vy in chosen}), chosen))
    if not diagrams:
        return None
    moved = lambda c: [k for k in PARAMETERS if c.values[k] != centre[k]]  # noqa: E731
    cells = sorted(
        cells, key=lambda c: (len(moved(c)), [list(PARAMETERS).index(k) for k in moved(c)], [c.values[k] for k in moved(c)])
    )  # the centre, then by what moved
    return PhaseDiagrams(centre, cells, diagrams)


def _values_text(key: str, chosen: list, levels: list) -> str:
    """How a set of a parameter's levels reads: '' for all of them, 'k ≥ v' for an upper tail, ..."""
    chosen = sorted(chosen)
    if chosen == levels:
        return ""
    if len(chosen) == 1:
        return f"{key} = {chosen[0]:g}"
    if chosen == levels[-len(chosen) :]:
        return f"{key} ≥ {chosen[0]:g}"
    if chosen == levels[: len(chosen)]:
        return f"{key} ≤ {chosen[-1]:g}"
    return f"{key} ∈ {{{', '.join(f'{v:g}' for v in chosen)}}}"


def _region(d: Diagram) -> str | None:
    """The lock-in cells of one diagram in words; None without any."""
    locked = [xy for xy, c in d.cells.items() if c.lock_in > 0]
    if not locked:
        return None
    xs, ys = sorted({x for x, _ in locked}), sorted({y for _, y in locked})
    if len(locked) == len(xs) * len(ys):  # a rectangle of levels
        conditions = [t for t in (_values_text(d.x, xs, d.xs), _values_text(d.y, ys, d.ys)) if t]
        return " and ".join(conditions) or f"at every tested {d.x} and {d.y}"
    return " or ".join(f"{d.x} = {x:g} and {d.y} = {y:g}" for x, y in sorted(locked))


def lock_in_sentence(grid: PhaseDiagrams) -> str:
    """One sentence saying where ε = 0 locks in harmful memories on this grid (module doc: the rule)."""
    cells = grid.cells
    n_locked, n_fewer = sum(c.lock_in > 0 for c in cells), sum(c.lock_in < 0 for c in cells)
    counts = (
        f"{n_locked} of {len(cells)} cells lock in, {n_fewer} show ε = 0 injecting fewer harmful memories than ε = {REFERENCE_EPSILON:g}, "
        f"{len(cells) - n_locked - n_fewer} are inconclusive"
    )
    centre = ", ".join(f"{k} = {v:g}" for k, v in grid.centre.items())
    in_diagrams = {id(c) for d in grid.diagrams for c in d.cells.values()}
    regions = [r for r in (_region(d) for d in grid.diagrams) if r]
    regions += [_setting(c, grid.centre) for c in grid.cells if c.lock_in > 0 and id(c) not in in_diagrams]  # cells of no diagram
    if not regions:
        return f"ε = 0 locks in harmful memories nowhere on this grid (centre {centre}): {counts}."
    return (
        f"ε = 0 locks in harmful memories when {'; or when '.join(regions)} (the other parameters at the centre, {centre}); elsewhere not "
        f"({counts})."
    )


# ---- rendering ----------------------------------------------------------------------------


def _setting(cell: Cell, centre: dict[str, Any]) -> str:
    moved = [f"{k} = {v:g}" for k, v in cell.values.items() if v != centre[k]]
    return ", ".join(moved) or "centre"


def _verdict_word(cell: Cell) -> str:
    return {1: "lock-in", -1: "fewer with ε = 0", 0: "inconclusive"}[cell.lock_in]


def table_rows(grid: PhaseDiagrams) -> tuple[list[str], list[list[str]]]:
    """The companion table: per cell, ε=0 - ε=0.1 of every measure with its interval, and the verdict."""
    header = ["cell (vs the centre)", *(f"{name}, ε=0 - ε={REFERENCE_EPSILON:g}" for name in MEASURES.values()), "harmful memories"]
    rows = [[_setting(c, grid.centre), *(c.difference[m].text() for m in MEASURES), _verdict_word(c)] for c in grid.cells]
    return header, rows


def level_rows(grid: PhaseDiagrams, measure: str = LOCK_IN_MEASURE) -> tuple[list[str], list[list[str]]]:
    """Each arm's mean of one measure per cell (their intervals are in the report's tables);
    arms without it (none injects nothing) are left out."""
    arms = list(dict.fromkeys(arm for c in grid.cells for arm, levels in c.levels.items() if levels[measure].mean is not None))
    header = ["cell (vs the centre)", *arms]
    rows = [
        [
            _setting(c, grid.centre),
            *(f"{c.levels[a][measure].mean:.3f}" if a in c.levels and c.levels[a][measure].mean is not None else "" for a in arms),
        ]
        for c in grid.cells
    ]
    return header, rows


def render_markdown(grid: PhaseDiagrams) -> str:
    lines = [f"## {TITLE} (synthetic sensitivity)", "", "SYNTHETIC (simulation, not LLM results).", "", f"**{lock_in_sentence(grid)}**", ""]
    lines += [
        "A cell locks in when the 95% t-interval over task orders of the harmful share of last-epoch injections, ε=0 minus ε=0.1, lies "
        "above 0.",
        "",
    ]
    for title, (header, rows) in (
        ("Every cell", table_rows(grid)),
        (f"Each arm's {MEASURES[LOCK_IN_MEASURE]} (mean over task orders)", level_rows(grid)),
    ):
        lines += [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


def _table_html(header: list[str], rows: list[list[str]]) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(grid: PhaseDiagrams, figures: list[str] = ()) -> str:
    """The section as HTML; `figures`: SVG markup of the phase diagrams (memrl_bench.report.phase_diagrams)."""
    esc = html.escape
    parts = [
        f'<section id="sensitivity"><h2>{esc(TITLE)}</h2>',
        "<p><strong>SYNTHETIC (simulation, not LLM results).</strong></p>",
        f"<p><strong>{esc(lock_in_sentence(grid))}</strong></p>",
    ]
    parts.append(
        "<p>A cell locks in when the 95% t-interval over task orders of the harmful share of last-epoch injections, ε=0 minus "
        f"ε={REFERENCE_EPSILON:g}, lies above 0 (marked ▲ in the diagrams; ▼ below 0).</p>"
    )
    parts += [f'<div class="figure">{svg}</div>' for svg in figures]
    parts += [
        _table_html(*table_rows(grid)),
        f"<h3>Each arm's {esc(MEASURES[LOCK_IN_MEASURE])}</h3>",
        _table_html(*level_rows(grid)),
        "</section>",
    ]
    return "\n".join(parts)
