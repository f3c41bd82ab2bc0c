"""The sensitivity study's phase diagrams (memrl_bench.report.sensitivity) as heatmaps, SVG.

One figure per pair of world parameters, one panel per measure: each cell coloured by
ε=0 minus ε=0.1 (red: ε=0 higher, blue: lower; the scale symmetric around 0 per panel) and
labelled with its mean and 95% interval; ▲ / ▼ mark an interval wholly above / below 0.
"""

from __future__ import annotations

import numpy as np

from memrl_bench.core.stats import side
from memrl_bench.report.figures import MARKS, _svg, annotated_heatmap, plt
from memrl_bench.report.sensitivity import MEASURES, REFERENCE_EPSILON, Diagram, PhaseDiagrams


def heatmap_data(d: Diagram, measure: str) -> tuple[np.ndarray, list[list[str]]]:
    """(means: rows the y levels, columns the x levels; NaN where no cell) and each cell's label."""
    means = np.full((len(d.ys), len(d.xs)), np.nan)
    labels = [["" for _ in d.xs] for _ in d.ys]
    for (x, y), cell in d.cells.items():
        interval = cell.difference[measure]
        if interval.mean is None:
            continue
        i, j = d.ys.index(y), d.xs.index(x)
        means[i, j] = interval.mean
        spread = f"\n[{interval.low:.2f}, {interval.high:.2f}]" if interval.low is not None else ""
        labels[i][j] = f"{interval.mean:+.3f}{MARKS[side(interval) or 0]}{spread}"
    return means, labels


def diagram_svg(d: Diagram) -> str:
    fig, axes = plt.subplots(1, len(MEASURES), figsize=(4.2 * len(MEASURES), 3.6), squeeze=False)
    for ax, (measure, name) in zip(axes[0], MEASURES.items()):
        means, labels = heatmap_data(d, measure)
        scale = float(np.nanmax(np.abs(means))) if np.isfinite(means).any() else 1.0
        annotated_heatmap(ax, means, labels, scale or 1.0, origin="lower")
        ax.set_xticks(range(len(d.xs)), [f"{v:g}" for v in d.xs])
        ax.set_yticks(range(len(d.ys)), [f"{v:g}" for v in d.ys])
        ax.set_xlabel(d.x)
        ax.set_ylabel(d.y)
        ax.set_title(f"{name}\nε=0 − ε={REFERENCE_EPSILON:g}", fontsize=9)
    fig.suptitle(f"SYNTHETIC: {d.y} × {d.x}, the other parameters at the centre", fontsize=10)
    fig.tight_layout()
    return _svg(fig, f"phase-{d.x}-{d.y}")


def figures(grid: PhaseDiagrams) -> list[str]:
    return [diagram_svg(d) for d in grid.diagrams]
