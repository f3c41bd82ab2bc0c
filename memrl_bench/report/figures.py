"""The report's figures (matplotlib, Agg): one fixed colour per method across all of them.

Each figure function returns a `Figure`: PNG bytes, or none and a note saying why the
data for it is absent (e.g. no Q values for none/rag, no synthetic utilities on a real env).
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

from memrl_bench import metrics as metrics_lib  # noqa: E402
from memrl_bench.report.aggregate import LEARNING_PHASES, Aggregates, q_utility_pairs, retrieval_counts  # noqa: E402
from memrl_bench.report.load import Results  # noqa: E402
from memrl_bench.report.tables import RATE_NAMES, variant_order  # noqa: E402

METHOD_COLOURS = {"none": "#7f7f7f", "rag": "#1f77b4", "memrl": "#d62728", "mem0": "#2ca02c", "memp": "#ff7f0e", "expel": "#9467bd"}
OTHER_COLOURS = ("#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173")
LINESTYLES = ("-", "--", ":", "-.")
DPI = 100
FIGURE_VARIANTS = 24  # most variants one figure draws (those with the most runs); the tables keep all
MAX_WIDTH_IN = 16.0  # widest figure; bars get thinner beyond it
GRID_COLUMNS = 4  # panels per row of a per-variant figure


@dataclass
class Figure:
    name: str
    title: str
    png: bytes | None  # None: skipped, see note
    note: str = ""


def method_colours(methods) -> dict[str, str]:
    """Known methods keep their colour; others take the palette in sorted name order."""
    colours = {m: METHOD_COLOURS[m] for m in methods if m in METHOD_COLOURS}
    others = sorted(m for m in set(methods) if m not in METHOD_COLOURS)
    colours |= {m: OTHER_COLOURS[i % len(OTHER_COLOURS)] for i, m in enumerate(others)}
    return colours


class Styles:
    """Colour by method; line style tells apart variants of one method.

    `order` holds the variants the figures draw: all of them, or the FIGURE_VARIANTS with
    the most runs (a study folder holds a hundred variants, most of them single runs).
    """

    def __init__(self, runs: pd.DataFrame):
        every = variant_order(runs)
        runs_per_variant = runs["variant"].value_counts()
        drawn = set(sorted(every, key=lambda v: -runs_per_variant[v])[:FIGURE_VARIANTS])  # stable: ties keep the table order
        self.order = [v for v in every if v in drawn]
        self.left_out = len(every) - len(self.order)
        method_of = runs.drop_duplicates("variant").set_index("variant")["method"]
        colours = method_colours(method_of.unique())
        self.colour: dict[str, str] = {}
        self.linestyle: dict[str, str] = {}
        seen: dict[str, int] = {}
        for variant in self.order:
            method = method_of[variant]
            self.colour[variant] = colours[method]
            self.linestyle[variant] = LINESTYLES[seen.get(method, 0) % len(LINESTYLES)]
            seen[method] = seen.get(method, 0) + 1

    def line(self, variant: str) -> dict:
        return {"color": self.colour[variant], "linestyle": self.linestyle[variant], "label": variant}


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")  # a legend wider than the plots is kept whole
    plt.close(fig)
    return buffer.getvalue()


def _legend_below(fig, axes) -> None:
    handles, labels = [], []
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        # As many columns as the longest label allows (~7.5 px a character at 10 pt), and the
        # figure grows by the legend's height, so that any number of variants fits below the plots.
        columns = max(1, min(4, len(labels), int(fig.get_figwidth() * DPI // (7.5 * max(map(len, labels)) + 60))))
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
                cells = rates[(rates["variant"] == variant) & (rates["phase_name"] == phase) & (rates["metric"] == metric)].sort_values("epoch")
                if cells.empty:
                    continue
                ax.plot(cells["epoch"], 100 * cells["mean"], marker="o", markersize=3, **styles.line(variant))
                banded = cells.dropna(subset=["ci_low"])  # rates live in [0, 100]: the band is drawn clipped to it
                ax.fill_between(banded["epoch"], (100 * banded["ci_low"]).clip(0, 100), (100 * banded["ci_high"]).clip(0, 100), color=styles.colour[variant], alpha=0.15, linewidth=0)
            ax.set_title(f"{RATE_NAMES[metric]} — {phase}", fontsize=10)
            ax.set_xlabel("epoch")
            ax.set_ylabel(ylabel)
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    _legend_below(fig, axes)
    return fig


def _grouped_bars(frame: pd.DataFrame, group_column: str, groups: list[str], bar: Callable, styles: Styles, ylabel: str):
    """One group of bars per value of `group_column`, one bar per variant; `bar(cells)` gives heights and whisker lengths below/above."""
    variants = [v for v in styles.order if (frame["variant"] == v).any()]
    width = 0.8 / len(variants)
    fig, ax = plt.subplots(figsize=(min(MAX_WIDTH_IN, max(6.0, 1.9 * len(groups) * max(1, len(variants) / 3))), 3.8))
    for i, variant in enumerate(variants):
        height, below, above = bar(frame[frame["variant"] == variant].set_index(group_column).reindex(groups))
        x = np.arange(len(groups)) + (i - (len(variants) - 1) / 2) * width
        ax.bar(x, height, width, color=styles.colour[variant], label=variant, hatch="//" if styles.linestyle[variant] != "-" else None, edgecolor="white")
        ax.errorbar(x, height, yerr=[below, above], fmt="none", ecolor="black", capsize=3, linewidth=1)
    ax.set_xticks(np.arange(len(groups)), groups)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    _legend_below(fig, ax)
    return fig, ax


def sr_csr_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "SR and CSR per epoch (mean, 95% t-interval band over seeds)"
    rates = agg.epoch_rates[agg.epoch_rates["metric"].isin(["sr", "csr"])]
    if rates.empty:
        return Figure("sr_csr", title, None, "no training or validation episodes")
    return Figure("sr_csr", title, _png(_epoch_grid(rates, ["sr", "csr"], styles, "% of tasks")))


def forgetting_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Forgetting per epoch (mean, 95% t-interval band over seeds)"
    rates = agg.epoch_rates[agg.epoch_rates["metric"].str.startswith("forgetting")]
    if rates.empty:
        return Figure("forgetting", title, None, "forgetting needs at least two epochs of a phase")
    return Figure("forgetting", title, _png(_epoch_grid(rates, ["forgetting_rate", "forgetting_of_solved"], styles, "%")))


def latency_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Latency per stage and episode: bar p50, whisker up to p95"
    latency = agg.latency[agg.latency["p95_s"] > 0]
    if latency.empty:
        return Figure("latency", title, None, "no latencies recorded")
    stages = list(dict.fromkeys(latency["stage"]))

    def bar(cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p50, p95 = 1000 * cells["p50_s"].to_numpy(), 1000 * cells["p95_s"].to_numpy()
        return p50, np.zeros_like(p50), np.nan_to_num(p95 - p50)

    fig, ax = _grouped_bars(latency, "stage", stages, bar, styles, "milliseconds")
    values = 1000 * latency[["p50_s", "p95_s"]].to_numpy().ravel()
    values = values[values > 0]
    if values.max() / values.min() > 50:
        ax.set_yscale("log")
        title += " (log scale)"
    return Figure("latency", title, _png(fig))


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
                ax.plot(curve.index, curve.to_numpy() * scale, linewidth=1.2 + 2.0 * (len(styles.order) - 1 - i) / len(styles.order), **styles.line(variant))
        ax.set_xlabel("training episodes played")
        ax.set_ylabel(f"memory {label}")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return Figure("memory_growth", title, _png(fig))


def retrieval_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Retrieval concentration: Lorenz curve of per-memory retrieval counts (final memories, episodes of every phase, seeds pooled)"
    counts = retrieval_counts(results)
    used = counts.groupby("run")["retrievals"].transform("sum") > 0
    counts = counts[used].join(results.runs.set_index("run")["variant"], on="run")
    if counts.empty:
        return Figure("retrieval", title, None, "no run has a final memory snapshot whose items were retrieved (e.g. only `none` runs, or no complete run)")
    fig, ax = plt.subplots(figsize=(5.5, 4.6))
    ax.plot([0, 1], [0, 1], color="black", linewidth=0.8, linestyle=":", label="equal use")
    for variant in styles.order:
        c = np.sort(counts.loc[counts["variant"] == variant, "retrievals"].to_numpy())
        if len(c) == 0:
            continue
        x = np.arange(len(c) + 1) / len(c)
        y = np.concatenate([[0], np.cumsum(c) / c.sum()])
        ax.plot(x, y, **(styles.line(variant) | {"label": f"{variant} (Gini {metrics_lib.gini(c):.2f})"}))
    ax.set_xlabel("share of memories (least retrieved first)")
    ax.set_ylabel("share of retrievals")
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False, loc="upper left")
    fig.tight_layout()
    return Figure("retrieval", title, _png(fig))


def q_utility_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Learned Q against true utility of the memory (synthetic env, final snapshot, seeds pooled)"
    pairs = q_utility_pairs(results)
    if pairs.empty:
        return Figure("q_utility", title, None, "needs final memories with a q_value (e.g. memrl; none and rag keep no Q) and a synthetic env's lesson_utility")
    variants = [v for v in styles.order if (pairs["variant"] == v).any()]
    columns = min(len(variants), GRID_COLUMNS)
    rows = -(-len(variants) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.8 * columns, 4.0 * rows), squeeze=False)
    for ax in axes.ravel()[len(variants) :]:
        ax.set_visible(False)
    for ax, variant in zip(axes.ravel(), variants):
        p = pairs[pairs["variant"] == variant]
        rho = metrics_lib.spearman(list(p["q_value"]), list(p["lesson_utility"]))
        ax.scatter(p["lesson_utility"], p["q_value"], s=6, alpha=0.35, color=styles.colour[variant], linewidths=0)
        name = "\n".join(textwrap.wrap(variant, 52))  # panels sit side by side: long variant names wrap
        ax.set_title(f"{name}\nSpearman ρ = {'n/a' if rho is None else f'{rho:.2f}'} (n = {len(p)})", fontsize=9)
        ax.set_xlabel("true utility of the lesson (synthetic info.lesson_utility)")
        ax.set_ylabel("learned Q value")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return Figure("q_utility", title, _png(fig))


def split_sr_figure(results: Results, agg: Aggregates, styles: Styles) -> Figure:
    title = "Test SR per split (mean; whiskers: 95% t-interval over seeds, none for a single seed)"
    rates = agg.test_rates
    if rates.empty:
        return Figure("test_sr", title, None, "no test phase (e.g. protocol.test_at_end=false or runtime_learning)")
    def bar(cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        half = 100 * ((cells["ci_high"] - cells["ci_low"]) / 2).to_numpy()
        return 100 * cells["mean"].to_numpy(), half, half

    fig, ax = _grouped_bars(rates, "split", agg.test_splits, bar, styles, "SR (%)")
    ax.set_ylim(0, 100)
    return Figure("test_sr", title, _png(fig))


FIGURES: dict[str, Callable[[Results, Aggregates, Styles], Figure]] = {
    "sr_csr": sr_csr_figure,
    "forgetting": forgetting_figure,
    "test_sr": split_sr_figure,
    "latency": latency_figure,
    "memory_growth": memory_growth_figure,
    "retrieval": retrieval_figure,
    "q_utility": q_utility_figure,
}


def all_figures(results: Results, agg: Aggregates) -> dict[str, Figure]:
    styles = Styles(results.runs)
    figures = {name: make(results, agg, styles) for name, make in FIGURES.items()}
    if styles.left_out:
        for figure in figures.values():
            figure.title += f" [the {len(styles.order)} variants with the most runs; {styles.left_out} more are in the tables, and a report of a sub-folder draws them]"
    return figures
