"""The report's figures (matplotlib, SVG): colours that say what varies.

A colour per family (a method and its categorical settings: memrl selection=softmax), a
shade per value of the family's numeric parameter (epsilon, a temperature: lighter for
larger values), a line style per condition (outcome temperature, protocol, ...), and
the parameter at 0 (MemRL's greedy epsilon = 0) always marked: a black-edged diamond
and a thicker line (memrl_bench.report.axes places each variant). The first figure
draws each headline number along the study's axis: the parameter on the x axis, one
panel per condition.

Figures are SVG with real text, inlined in report.html; each variant's artists carry the
id "series-<n>", so a browser (tests/integration/test_report_render.py) can read what a figure shows.
Each figure function returns a `Figure`: its SVG, or none and a note saying why the data
for it is absent (e.g. no Q values for none/rag, no synthetic utilities on a real env).
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import to_hex, to_rgb  # noqa: E402

from memrl_bench.core.stats import Interval, side  # noqa: E402
from memrl_bench.report.aggregate import Aggregates, q_utility_pairs, retrieval_counts  # noqa: E402
from memrl_bench.report.load import LEARNING_PHASES, Results  # noqa: E402
from memrl_bench.report.tables import RATE_NAMES, variant_order  # noqa: E402

METHOD_COLOURS = {"none": "#7f7f7f", "rag": "#1f77b4", "memrl": "#d62728", "mem0": "#2ca02c", "memp": "#ff7f0e", "expel": "#9467bd"}
OTHER_COLOURS = ("#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173")
LINESTYLES = ("-", "--", ":", "-.")
LIGHTEST = 0.6  # the largest parameter value's shade: this much of the way from the family colour to white
FIGURE_VARIANTS = 24  # most variants one figure draws (those with the most runs); the tables keep all
MAX_WIDTH_IN = 16.0  # widest figure; bars get thinner beyond it
GRID_COLUMNS = 4  # panels per row of a per-variant figure
CURVE_POINTS = 400  # a Lorenz curve is drawn through at most this many of its points


@dataclass
class Figure:
    name: str
    title: str
    svg: str | None  # None: skipped, see note
    note: str = ""


def method_colours(methods) -> dict[str, str]:
    """Known methods keep their colour; others take the palette in sorted name order."""
    colours = {m: METHOD_COLOURS[m] for m in methods if m in METHOD_COLOURS}
    others = sorted(m for m in set(methods) if m not in METHOD_COLOURS)
    colours |= {m: OTHER_COLOURS[i % len(OTHER_COLOURS)] for i, m in enumerate(others)}
    return colours


def setting_order(value) -> tuple:
    """A sort key for a setting's values across runs: one written by another harness version may be missing (None, first)
    or text beside numbers."""
    return (value is not None, isinstance(value, str), 0 if value is None else value)


def shade(colour: str, lightness: float) -> str:
    """`colour` moved `lightness` (0..1) of the way to white."""
    return to_hex(tuple(c + (1.0 - c) * lightness for c in to_rgb(colour)))


class Styles:
    """How each variant is drawn (see the module docstring).

    `order` holds the variants the figures draw: all of them, or the FIGURE_VARIANTS with
    the most runs (a study folder holds a hundred variants, most of them single runs).
    """

    def __init__(self, results: Results):
        every = variant_order(results)
        runs_per_variant = results.runs["variant"].value_counts()
        drawn = set(sorted(every, key=lambda v: -runs_per_variant[v])[:FIGURE_VARIANTS])  # stable: ties keep the table order
        self.order = [v for v in every if v in drawn]
        self.left_out = len(every) - len(self.order)
        self.places = {v: results.places[v] for v in every}
        families = list(dict.fromkeys(p.family for p in self.places.values()))
        methods = list(dict.fromkeys(p.method for p in self.places.values()))
        base = method_colours(methods)
        extra = iter(c for c in OTHER_COLOURS if c not in base.values())
        self.family_colour: dict[str, str] = {}
        for family in families:  # a method's first family takes its colour, the others the palette
            method = next(p.method for p in self.places.values() if p.family == family)
            self.family_colour[family] = base[method] if base[method] not in self.family_colour.values() else next(extra, "#555555")
        values: dict[str, list[float]] = {}
        for p in self.places.values():
            if p.parameter is not None:
                values.setdefault(p.family, []).append(p.value)
        values = {f: sorted(set(v), key=setting_order) for f, v in values.items()}
        conditions = list(dict.fromkeys(p.condition_label for p in self.places.values()))
        self.colour: dict[str, str] = {}
        self.linestyle: dict[str, str] = {}
        for variant, p in self.places.items():
            ladder = values.get(p.family, [])
            lightness = LIGHTEST * ladder.index(p.value) / (len(ladder) - 1) if len(ladder) > 1 else 0.0
            self.colour[variant] = shade(self.family_colour[p.family], lightness)
            self.linestyle[variant] = LINESTYLES[conditions.index(p.condition_label) % len(LINESTYLES)]
        self.index = {v: i for i, v in enumerate(every)}

    def marked(self, variant: str) -> bool:
        return self.places[variant].marked

    def line(self, variant: str, marker: str | None = "o") -> dict:
        """Keyword arguments of ax.plot for a variant's line."""
        style = {
            "color": self.colour[variant],
            "linestyle": self.linestyle[variant],
            "label": variant,
            "gid": f"series-{self.index[variant]}",
            "linewidth": 1.5,
        }
        if self.marked(variant):
            return style | {"linewidth": 2.6, "marker": "D", "markersize": 6, "markeredgecolor": "black", "zorder": 3}
        return style | ({"marker": marker, "markersize": 3} if marker else {})


def _svg(fig, name: str) -> str:
    """The figure as SVG markup to inline in a page: text kept as text, ids unique to this figure, no date."""
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})  # a legend wider than the plots is kept whole
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _legend_below(fig, axes) -> None:
    handles, labels = [], []
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
    if handles:
        # As many columns as the longest label allows (~0.075 in a character at 10 pt), and the
        # figure grows by the legend's height, so that any number of variants fits below the plots.
        columns = max(1, min(4, len(labels), int(fig.get_figwidth() // (0.075 * max(map(len, labels)) + 0.6))))
        rows = -(-len(labels) // columns)
        legend_in, height = 0.2 + 0.22 * rows, fig.get_figheight()
        bottom_in, top_in = fig.subplotpars.bottom * height, (1 - fig.subplotpars.top) * height
        fig.set_figheight(height + legend_in)
        fig.subplots_adjust(bottom=(bottom_in + legend_in) / (height + legend_in), top=1 - top_in / (height + legend_in))
        fig.legend(handles, labels, loc="lower center", ncol=columns, frameon=False, bbox_to_anchor=(0.5, 0.0))


def _epoch_grid(rates: pd.DataFrame, metrics: list[str], styles: Styles, ylabel: str):
    phases = [p for p in LEARNING_PHASES if (rates["phase_name"] == p).any()]
    fig, axes = plt.subplots(len(phases), len(metrics), figsize=(5.2 * len(metrics), 3.3 * len(phases) + 0.6), squeeze=False)
    for row, phase in enumerate(phases):
        for col, metric in enumerate(metrics):
            ax = axes[row][col]
            for variant in styles.order:
                cells = rates[(rates["variant"] == variant) & (rates["phase_name"] == phase) & (rates["metric"] == metric)].sort_values(
                    "epoch"
                )
                if cells.empty:
                    continue
                ax.plot(cells["epoch"], 100 * cells["mean"], **styles.line(variant))
                banded = cells.dropna(subset=["ci_low"])  # rates live in [0, 100]: the band is drawn clipped to it
                ax.fill_between(
                    banded["epoch"],
                    (100 * banded["ci_low"]).clip(0, 100),
                    (100 * banded["ci_high"]).clip(0, 100),
                    color=styles.colour[variant],
                    alpha=0.12,
                    linewidth=0,
                )
            ax.set_title(f"{RATE_NAMES[metric]} — {phase}", fontsize=10)
            ax.set_xlabel("epoch")
            ax.set_ylabel(ylabel)
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    _legend_below(fig, axes)
    return fig


def _bars_per_condition(frame: pd.DataFrame, group_column: str, groups: list[str], bar: Callable, styles: Styles, ylabel: str):
    """Small multiples, one panel per condition: in each, a group of bars per value of
    `group_column` and a bar per variant; `bar(cells)` gives heights and whisker lengths below/above."""
    present = [v for v in styles.order if (frame["variant"] == v).any()]
    conditions = list(dict.fromkeys(styles.places[v].condition_label for v in present))
    most = max(sum(styles.places[v].condition_label == c for v in present) for c in conditions)
    width_in = min(MAX_WIDTH_IN, max(5.0, 1.1 * len(groups) * max(1, most / 3) * len(conditions)))
    fig, axes = plt.subplots(1, len(conditions), figsize=(width_in, 3.8), sharey=True, squeeze=False)
    for ax, condition in zip(axes[0], conditions):
        variants = [v for v in present if styles.places[v].condition_label == condition]
        width = 0.8 / len(variants)
        for i, variant in enumerate(variants):
            height, below, above = bar(frame[frame["variant"] == variant].set_index(group_column).reindex(groups))
            x = np.arange(len(groups)) + (i - (len(variants) - 1) / 2) * width
            edge = {"edgecolor": "black", "linewidth": 1.6} if styles.marked(variant) else {"edgecolor": "white", "linewidth": 0.5}
            ax.bar(
                x,
                height,
                width,
                color=styles.colour[variant],
                label=styles.places[variant].arm,
                gid=f"series-{styles.index[variant]}",
                **edge,
            )  # the panel names the condition
            ax.errorbar(x, height, yerr=[below, above], fmt="none", ecolor="black", capsize=2, linewidth=0.8)
        ax.set_xticks(np.arange(len(groups)), [g.replace("_", " ") for g in groups], fontsize=8)
        ax.set_title(condition or "all runs", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    fig.tight_layout()
    _legend_below(fig, axes)
    return fig, axes[0]


# ---- along the study's axes --------------------------------------------------------------


def _axis_numbers(results: Results, agg: Aggregates) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Headline metric -> variant -> (mean, ci low, ci high), in the units drawn; each
    metric lives in [0, scale] (a rate, a share, a Gini), so its interval is drawn clipped to it."""
    out: dict[str, dict[str, tuple[float, float, float]]] = {}

    def put(name: str, rows: pd.DataFrame, scale: float) -> None:
        if not rows.empty:
            out[name] = {
                r["variant"]: (scale * r["mean"], *np.clip([scale * r["ci_low"], scale * r["ci_high"]], 0, scale))
                for _, r in rows.iterrows()
            }

    if agg.test_splits:
        split = next((s for s in agg.test_splits if "in_distribution" in s), agg.test_splits[0])
        put(f"{split.replace('_', ' ')} SR (%)", agg.test_rates[agg.test_rates["split"] == split], 100)
    train = agg.epoch_rates[(agg.epoch_rates["phase_name"] == "train") & (agg.epoch_rates["metric"] == "sr")]
    put("training SR, last epoch (%)", train[train["epoch"] == train.groupby("variant")["epoch"].transform("max")], 100)
    put("retrieval Gini", agg.end[agg.end["metric"] == "retrieval_gini"], 1)
    put("memories never retrieved (%)", agg.end[agg.end["metric"] == "never_retrieved_any_phase_share"], 100)
    return out


def axes_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    """Each headline number against the swept setting: a line per family that sweeps it (one
    per selection rule when epsilon is swept under several), a flat line per other variant."""
    title = (
        "Along the study's axes: each headline number against the swept method setting (x), a line per family sweeping it, one panel per "
        "condition; flat lines are the condition's other variants"
    )
    swept = [(p.family, p.parameter) for p in styles.places.values() if p.parameter is not None]
    if not swept:
        return Figure("axes", title, None, "no method setting takes several numeric values within a family (e.g. method.epsilon=0,0.1)")
    family, parameter = max(dict.fromkeys(swept), key=lambda fp: (sum(p.family == fp[0] for p in styles.places.values()), fp[0]))
    families = list(dict.fromkeys(f for f, p in swept if p == parameter))
    sweep = [v for v in styles.order if styles.places[v].family in families]
    reach = {
        c: len({styles.places[v].value for v in sweep if styles.places[v].condition_label == c})
        for c in dict.fromkeys(styles.places[v].condition_label for v in sweep)
    }
    conditions = [c for c, n in reach.items() if n == max(reach.values())]  # where the sweep was run in full
    numbers = _axis_numbers(results, agg)
    if not numbers:
        return Figure("axes", title, None, "no headline number (test SR, training SR, retrieval Gini) was measured")
    name = parameter.removeprefix("method.")
    title = title.replace("the swept method setting", parameter)
    fig, axes = plt.subplots(
        len(numbers), len(conditions), figsize=(4.6 * len(conditions), 2.7 * len(numbers) + 0.4), squeeze=False, sharex=True
    )
    for col, condition in enumerate(conditions):
        here = [v for v in styles.order if styles.places[v].condition_label == condition]
        for row, (metric, by_variant) in enumerate(numbers.items()):
            ax = axes[row][col]
            xs: set[float] = set()
            for line_family in families:
                on_line = sorted(  # a run without the setting (another harness version's) has no place on its axis
                    (v for v in here if styles.places[v].family == line_family and v in by_variant and styles.places[v].value is not None),
                    key=lambda v: setting_order(styles.places[v].value),
                )
                points = [(styles.places[v].value, *by_variant[v], v) for v in on_line]
                if not points:
                    continue
                x, mean, *_ = zip(*points)
                xs |= set(x)
                ax.plot(
                    x, mean, color=styles.family_colour[line_family], linewidth=1.5, label="_line", gid=f"series-{styles.index[on_line[0]]}"
                )
                for xi, m, lo, hi, v in points:
                    ax.errorbar(
                        [xi], [m], yerr=np.nan_to_num([[m - lo], [hi - m]]), fmt="none", ecolor=styles.colour[v], capsize=2, linewidth=0.9
                    )
                    marker = (
                        {"marker": "D", "markersize": 8, "markeredgecolor": "black"}
                        if styles.marked(v)
                        else {"marker": "o", "markersize": 6, "markeredgecolor": styles.colour[v]}
                    )
                    ax.plot(
                        [xi],
                        [m],
                        linestyle="none",
                        color=styles.colour[v],
                        label=styles.places[v].arm,
                        gid=f"series-{styles.index[v]}",
                        zorder=3,
                        **marker,
                    )
            if 0.0 in xs:
                ax.axvline(0.0, color="black", linewidth=0.8, linestyle=":", label=f"_{name} = 0")
            for v in here:
                if styles.places[v].family not in families and v in by_variant:
                    ax.axhline(
                        by_variant[v][0],
                        color=styles.colour[v],
                        linestyle="--",
                        linewidth=1.3,
                        label=styles.places[v].arm,
                        gid=f"series-{styles.index[v]}",
                    )
            if row == 0:
                ax.set_title(condition or "all runs", fontsize=9)
            ax.set_ylabel(metric, fontsize=9)
            ax.grid(alpha=0.3)
            if row == len(numbers) - 1:
                ax.set_xlabel(f"{parameter}; ◆ = {name} 0")
            if xs:
                ax.set_xticks(sorted(xs), [f"{value:g}" for value in sorted(xs)])
    fig.tight_layout()
    _legend_below(fig, axes)
    return Figure("axes", title, _svg(fig, "axes"))


# ---- the figures ---------------------------------------------------------------------------


def sr_csr_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "SR and CSR per epoch (mean, 95% t-interval band over seeds)"
    rates = agg.epoch_rates[agg.epoch_rates["metric"].isin(["sr", "csr"])]
    if rates.empty:
        return Figure("sr_csr", title, None, "no training or validation episodes")
    return Figure("sr_csr", title, _svg(_epoch_grid(rates, ["sr", "csr"], styles, "% of tasks"), "sr_csr"))


def forgetting_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Forgetting per epoch (mean, 95% t-interval band over seeds)"
    rates = agg.epoch_rates[agg.epoch_rates["metric"].str.startswith("forgetting")]
    if rates.empty:
        return Figure("forgetting", title, None, "forgetting needs at least two epochs of a phase")
    return Figure("forgetting", title, _svg(_epoch_grid(rates, ["forgetting_rate", "forgetting_of_solved"], styles, "%"), "forgetting"))


def latency_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Latency per stage and episode, one panel per condition: bar p50, whisker up to p95"
    latency = agg.latency[agg.latency["p95_s"] > 0]
    if latency.empty:
        return Figure("latency", title, None, "no latencies recorded")
    stages = list(dict.fromkeys(latency["stage"]))

    def bar(cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p50, p95 = 1000 * cells["p50_s"].to_numpy(), 1000 * cells["p95_s"].to_numpy()
        return p50, np.zeros_like(p50), np.nan_to_num(p95 - p50)

    fig, axes = _bars_per_condition(latency, "stage", stages, bar, styles, "milliseconds")
    values = 1000 * latency[["p50_s", "p95_s"]].to_numpy().ravel()
    values = values[values > 0]
    if values.max() / values.min() > 50:
        for ax in axes:
            ax.set_yscale("log")
        title += " (log scale)"
    return Figure("latency", title, _svg(fig, "latency"))


def memory_growth_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Memory size against cumulative training episodes (mean over seeds)"
    train = results.episodes[results.episodes["phase"] == "train"].sort_values(["run", "epoch", "order_index", "sample_index"])
    if train.empty:
        return Figure("memory_growth", title, None, "no training episodes")
    train = train.assign(episodes_seen=train.groupby("run").cumcount() + 1)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for column, ax, scale, label in (("memory_items_after", axes[0], 1, "items"), ("memory_bytes_after", axes[1], 1 / 1000, "KB")):
        for i, variant in enumerate(styles.order):
            curve = train[train["variant"] == variant].groupby("episodes_seen")[column].mean()
            if len(curve):  # earlier lines wider, so equal curves stay visible
                style = styles.line(variant, marker=None)
                ax.plot(
                    curve.index,
                    curve.to_numpy() * scale,
                    **(
                        style
                        | {
                            "linewidth": style["linewidth"] + 1.5 * (len(styles.order) - 1 - i) / len(styles.order),
                            "markevery": [len(curve) - 1],
                        }
                    ),
                )
        ax.set_xlabel("training episodes played")
        ax.set_ylabel(f"memory {label}")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    _legend_below(fig, axes)
    return Figure("memory_growth", title, _svg(fig, "memory_growth"))


def retrieval_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = (
        "Retrieval concentration: Lorenz curve of per-memory retrieval counts (final memories, episodes of every phase, seeds pooled); "
        "Gini as in the memory table (mean over seeds)"
    )
    counts = retrieval_counts(results)
    used = counts.groupby("run")["retrievals"].transform("sum") > 0
    counts = counts[used].join(results.runs.set_index("run")["variant"], on="run")
    if counts.empty:
        return Figure(
            "retrieval",
            title,
            None,
            "no run has a final memory snapshot whose items were retrieved (e.g. only `none` runs, or no complete run)",
        )
    gini = agg.end[agg.end["metric"] == "retrieval_gini"].set_index("variant")["mean"]
    fig, ax = plt.subplots(figsize=(6.5, 5.0))
    ax.plot([0, 1], [0, 1], color="black", linewidth=0.8, linestyle=":", label="equal use")
    for variant in styles.order:
        c = np.sort(counts.loc[counts["variant"] == variant, "retrievals"].to_numpy())
        if len(c) == 0:
            continue
        x = np.arange(len(c) + 1) / len(c)
        y = np.concatenate([[0], np.cumsum(c) / c.sum()])
        keep = np.unique(np.linspace(0, len(x) - 1, min(len(x), CURVE_POINTS)).round().astype(int))  # a smooth curve: fewer points draw it
        label = f"{variant} (Gini {gini[variant]:.2f})" if variant in gini.index else variant
        ax.plot(x[keep], y[keep], **(styles.line(variant, marker=None) | {"label": label, "markevery": [len(keep) - 1]}))
    ax.set_xlabel("share of memories (least retrieved first)")
    ax.set_ylabel("share of retrievals")
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _legend_below(fig, ax)
    return Figure("retrieval", title, _svg(fig, "retrieval"))


def q_utility_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Learned Q against true utility of the memory (synthetic env, final snapshot, seeds pooled)"
    pairs = q_utility_pairs(results)
    if pairs.empty:
        return Figure(
            "q_utility",
            title,
            None,
            "needs final memories with a q_value (e.g. memrl; none and rag keep no Q) and a synthetic env's lesson_utility",
        )
    variants = [v for v in styles.order if (pairs["variant"] == v).any()]
    spearman = agg.end[agg.end["metric"] == "spearman_q_utility"].set_index("variant")["mean"]
    columns = min(len(variants), GRID_COLUMNS)
    rows = -(-len(variants) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.8 * columns, 4.0 * rows), squeeze=False)
    for ax in axes.ravel()[len(variants) :]:
        ax.set_visible(False)
    for ax, variant in zip(axes.ravel(), variants):
        p = pairs[pairs["variant"] == variant]
        rho = spearman.get(variant)
        ax.scatter(
            p["lesson_utility"],
            p["q_value"],
            s=6,
            alpha=0.35,
            color=styles.colour[variant],
            linewidths=0,
            gid=f"series-{styles.index[variant]}",
            rasterized=True,
        )  # thousands of points: an image inside the SVG
        name = "\n".join(textwrap.wrap(variant, 52))  # panels sit side by side: long variant names wrap
        ax.set_title(
            f"{name}\nSpearman ρ = {'n/a' if rho is None or rho != rho else f'{rho:.2f}'} (mean over seeds; n = {len(p)})", fontsize=9
        )
        ax.set_xlabel("true utility of the lesson (synthetic info.lesson_utility)")
        ax.set_ylabel("learned Q value")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return Figure("q_utility", title, _svg(fig, "q_utility"))


def split_sr_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Test SR per split, one panel per condition (mean; whiskers: 95% t-interval over seeds, none for a single seed)"
    rates = agg.test_rates
    if rates.empty:
        return Figure("test_sr", title, None, "no test phase (e.g. protocol.test_at_end=false or runtime_learning)")

    def bar(cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        half = np.nan_to_num(100 * ((cells["ci_high"] - cells["ci_low"]) / 2).to_numpy())
        return 100 * cells["mean"].to_numpy(), half, half

    fig, axes = _bars_per_condition(rates, "split", agg.test_splits, bar, styles, "SR (%)")
    axes[0].set_ylim(0, 100)
    return Figure("test_sr", title, _svg(fig, "test_sr"))


def gain_cost_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = (
        "Gain against cost: test SR gain over `none` (pp; whiskers: 95% paired-bootstrap interval) against injected tokens per prompt "
        "(test, estimated; whiskers: 95% t-interval over seeds)"
    )
    gains = agg.gain_cost.dropna(subset=["injected_tokens"]).set_index("variant")
    if gains.empty:
        return Figure("gain_cost", title, None, "needs a `none` variant and a memory method tested on the same tasks (complete runs)")
    tokens = agg.end[agg.end["metric"] == "injected_tokens_test"].set_index("variant")
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ax.axhline(0, color="black", linewidth=0.8, linestyle=":")
    ax.plot([0], [0], marker="s", color=METHOD_COLOURS["none"], linestyle="none", label="none (baseline)")
    for variant in (v for v in styles.order if v in gains.index):
        g = gains.loc[variant]
        x, y = g["injected_tokens"], 100 * g["gain_mean"]
        t = tokens.loc[variant] if variant in tokens.index else None
        xerr = [[x - t["ci_low"]], [t["ci_high"] - x]] if t is not None and not np.isnan(t["ci_low"]) else None
        style = {k: v for k, v in styles.line(variant).items() if k != "linestyle"}
        style["markersize"] = max(style.get("markersize", 0), 6)
        ax.errorbar(
            x, y, yerr=[[y - 100 * g["gain_low"]], [100 * g["gain_high"] - y]], xerr=xerr, fmt=style.pop("marker", "o"), capsize=3, **style
        )
    ax.set_xlabel("injected tokens per prompt (test; estimated from injected characters)")
    ax.set_ylabel("test SR gain over none (pp)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _legend_below(fig, ax)
    return Figure("gain_cost", title, _svg(fig, "gain_cost"))


# ---- the streaming, replay, repair and transfer protocols (memrl_bench/protocols) ----


def _protocol_runs(results: Results, section: str, styles: Styles) -> dict[str, list[dict]]:
    """Variant -> the metrics.json `section` of each of its complete runs that has one, in the figures' order."""
    runs = results.runs[results.runs["complete"]]
    out = {v: [m[section] for m in runs.loc[runs["variant"] == v, "protocol_metrics"] if section in m] for v in styles.order}
    return {v: sections for v, sections in out.items() if sections}


def _curves(ax, x, ys: list, variant: str, styles: Styles) -> None:
    """The mean over runs of curves sampled at x, and, over several runs, their range as a band;
    points where every run's value is undefined are left out."""
    y = 100 * np.array(ys, dtype=np.float64)  # None (undefined, e.g. nothing to forget) -> nan: a gap
    x, y = np.asarray(x)[np.isfinite(y).any(axis=0)], y[:, np.isfinite(y).any(axis=0)]
    ax.plot(x, np.nanmean(y, axis=0), **styles.line(variant, marker=None))
    if len(ys) > 1:
        ax.fill_between(x, np.nanmin(y, axis=0), np.nanmax(y, axis=0), color=styles.colour[variant], alpha=0.15, linewidth=0)


def _protocol_figure(name: str, title: str, data: dict, draw: Callable, xlabel: str, ylabel: str, styles: Styles, absent: str) -> Figure:
    if not data:
        return Figure(name, title, None, absent)
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    for variant, sections in data.items():
        draw(ax, variant, sections)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _legend_below(fig, np.array([ax]))
    return Figure(name, title, _svg(fig, name))


def streaming_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    def draw(ax, variant, sections):
        length = min(len(s["running_success"]) for s in sections)  # streams of one variant have one length unless max_tasks differs
        _curves(ax, np.arange(1, length + 1), [s["running_success"][:length] for s in sections], variant, styles)

    title = "Streaming: running success over the stream (mean over runs; band: their range)"
    return _protocol_figure(
        "streaming",
        title,
        _protocol_runs(results, "streaming", styles),
        draw,
        "tasks of the stream",
        "running SR %",
        styles,
        "no streaming run (protocol=streaming)",
    )


def replay_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    def draw(ax, variant, sections):
        points = [{int(k): p for k, p in s["points"].items()} for s in sections]  # JSON keys are text
        after = {k: p["after_tasks"] for ps in points for k, p in ps.items()}
        ks = sorted(after)
        _curves(ax, [after[k] for k in ks], [[ps.get(k, {}).get("forgotten") for k in ks] for ps in points], variant, styles)

    title = (
        "Replay: share of the re-tested tasks solved at first attempt that fail now, over the stream (mean over runs; band: their range)"
    )
    return _protocol_figure(
        "replay",
        title,
        _protocol_runs(results, "replay", styles),
        draw,
        "tasks learned",
        "forgotten %",
        styles,
        "no replay run (protocol=replay)",
    )


def repair_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    def draw(ax, variant, sections):
        curves = [{int(e): sr for e, sr in s["validation_success"].items()} for s in sections]  # JSON keys are text
        epochs = sorted({e for c in curves for e in c})
        _curves(ax, epochs, [[c.get(e) for e in epochs] for c in curves], variant, styles)
        ax.axvline(sections[0]["corrupt_epochs"] + 0.5, color="black", linewidth=0.8, linestyle=":")
        ax.xaxis.get_major_locator().set_params(integer=True)

    title = (
        "Repair: held-out (validation) SR after each epoch; the dotted line ends the corrupted phase (mean over runs; band: their range)"
    )
    return _protocol_figure(
        "repair",
        title,
        _protocol_runs(results, "repair", styles),
        draw,
        "epoch",
        "validation SR %",
        styles,
        "no repair run (protocol=repair)",
    )


MARKS = {1: " ▲", -1: " ▼", 0: ""}  # a heatmap cell whose 95% interval lies above / below 0 (memrl_bench.core.stats.side)


def annotated_heatmap(ax, means: np.ndarray, labels: list[list[str]], scale: float, origin: str = "upper") -> None:
    """Cells coloured by value on a scale symmetric around 0 (red above, blue below), each with
    its label ("not run" where it has none), white text on the deepest colours."""
    ax.imshow(means, cmap="RdBu_r", vmin=-scale, vmax=scale, origin=origin, aspect="auto")
    for i, row in enumerate(labels):
        for j, text in enumerate(row):
            dark = np.isfinite(means[i, j]) and abs(means[i, j]) > 0.6 * scale
            ax.text(j, i, text or "not run", ha="center", va="center", fontsize=7.5, color="white" if dark else "black")


def transfer_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    """The transfer matrix as heatmaps, a panel per method: rows the env the memory was learned
    in, columns the env it was tested in; each cell its gain over none with its interval."""
    title = (
        "Transfer matrix: test SR gain over none (pp) of a memory learned in one env (rows) and tested, frozen, in another (columns); ▲ / "
        "▼: the 95% interval lies above / below 0"
    )
    matrix = agg.transfer
    if matrix.empty:
        return Figure("transfer", title, None, "no transfer run with a none twin (protocol=transfer)")
    arms = list(dict.fromkeys(matrix["arm"]))
    sources, targets = sorted(set(matrix["source"])), sorted(set(matrix["target"]))
    scale = float(np.nanmax(np.abs(100 * matrix["mean"]))) or 1.0
    fig, axes = plt.subplots(
        1, len(arms), figsize=(max(4.5, 1.6 * len(targets) + 2.5) * len(arms), 1.0 * len(sources) + 2.0), squeeze=False
    )
    for ax, arm in zip(axes[0], arms):
        cells = matrix[matrix["arm"] == arm].set_index(["source", "target"])
        means = np.full((len(sources), len(targets)), np.nan)
        labels = [["" for _ in targets] for _ in sources]
        for i, source in enumerate(sources):
            for j, target in enumerate(targets):
                if (source, target) in cells.index:
                    c = cells.loc[(source, target)]
                    interval = Interval(
                        c["mean"],
                        None if np.isnan(c["ci_low"]) else c["ci_low"],
                        None if np.isnan(c["ci_high"]) else c["ci_high"],
                        int(c["n"]),
                    )
                    spread = f"\n[{100 * interval.low:+.1f}, {100 * interval.high:+.1f}]" if interval.low is not None else ""
                    means[i, j] = 100 * interval.mean
                    labels[i][j] = f"{means[i, j]:+.1f}{MARKS[side(interval) or 0]}{spread}"
        annotated_heatmap(ax, means, labels, scale)
        ax.set_xticks(range(len(targets)), [textwrap.fill(t, 18) for t in targets], fontsize=7.5)
        ax.set_yticks(range(len(sources)), [textwrap.fill(t, 22) for t in sources], fontsize=7.5)
        ax.set_xlabel("tested in (target)")
        ax.set_ylabel("learned in (source)")
        ax.set_title(arm, fontsize=10)
    fig.tight_layout()
    return Figure("transfer", title, _svg(fig, "transfer"))


FIGURES: dict[str, Callable[[Results, Aggregates, Styles], Figure]] = {
    "axes": axes_figure,
    "sr_csr": sr_csr_figure,
    "forgetting": forgetting_figure,
    "test_sr": split_sr_figure,
    "latency": latency_figure,
    "memory_growth": memory_growth_figure,
    "retrieval": retrieval_figure,
    "q_utility": q_utility_figure,
    "gain_cost": gain_cost_figure,
    "streaming": streaming_figure,
    "replay": replay_figure,
    "repair": repair_figure,
    "transfer": transfer_figure,
}


def all_figures(results: Results, agg: Aggregates) -> dict[str, Figure]:
    styles = Styles(results)
    figures = {name: make(results, agg, styles) for name, make in FIGURES.items()}
    if styles.left_out:
        for figure in figures.values():
            figure.title += (
                f" [the {len(styles.order)} variants with the most runs; {styles.left_out} more are in the tables, and a report of a "
                "sub-folder draws them]"
            )
    return figures
