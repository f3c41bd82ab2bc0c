"""The report's tables: tidy numbers (CSV) and a formatted view (Markdown, HTML).

Rates are shown in percent as "mean ± half-width of the 95% t-interval over seeds";
one seed shows "(n=1)" and no interval. Every row carries its variant's labels
(synthetic, runtime_learning, finetuned_backbone).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from memrl_bench.core.markup import markdown_text
from memrl_bench.report.aggregate import BASELINE_METHOD, Aggregates, protocol_columns
from memrl_bench.report.load import LEARNING_PHASES, Results

INTERVAL_NOTE = "± is the half-width of the 95% Student-t interval over seeds; (n=1): a single seed, no interval."
RATE_NAMES = {
    "sr": "SR",
    "csr": "CSR",
    "forgetting_rate": "FR (lost / failed)",
    "forgetting_of_solved": "FR of solved (lost / solved before)",
}


@dataclass
class Table:
    name: str  # file stem
    title: str
    data: pd.DataFrame  # tidy numbers, written as CSV
    view: pd.DataFrame  # formatted strings, written as Markdown and HTML
    note: str = ""


def variant_order(results: Results) -> list[str]:
    """The baseline first, then by method, family, condition and parameter value (numbers as numbers)."""
    return sorted(results.places, key=lambda v: results.places[v].sort_key())


def variant_labels(runs: pd.DataFrame) -> dict[str, str]:
    """Each variant's labels: the union over its runs."""
    return {v: ", ".join(sorted({lab for labels in g["labels"] for lab in labels.split(", ") if lab})) for v, g in runs.groupby("variant")}


def synthetic_suffix(variants: list[str], labels: dict[str, str]) -> str:
    """What a section heading says when synthetic results are in it."""
    synthetic = [v for v in variants if "synthetic" in labels.get(v, "")]
    if not synthetic:
        return ""
    if len(synthetic) == len(variants):
        return " — synthetic (simulation, not LLM results)"
    return " — rows labelled synthetic are simulation, not LLM results"


def fmt_number(x: float, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return f"{x:,.{digits}f}"


def _missing(x: float | None) -> bool:
    return x is None or bool(np.isnan(x))


def fmt_interval(mean: float | None, low: float | None, high: float | None, n: int, scale: float = 1.0, digits: int = 1) -> str:
    """ "mean ± half-width", "mean (n=1)", or "–" without data."""
    if not n or _missing(mean):
        return "–"
    if n < 2 or _missing(low):
        return f"{fmt_number(mean * scale, digits)} (n=1)"
    return f"{fmt_number(mean * scale, digits)} ± {fmt_number((high - low) / 2 * scale, digits)}"


def _cell(row: pd.Series, scale: float, digits: int) -> str:
    return fmt_interval(row["mean"], row["ci_low"], row["ci_high"], int(row["n"]), scale, digits)


def _seeds(runs: pd.DataFrame) -> dict[str, str]:
    """Seeds per variant, e.g. "3 (1 incomplete)"."""
    out = {}
    for variant, g in runs.groupby("variant"):
        incomplete = int((~g["complete"]).sum())
        out[variant] = f"{len(g)}" + (f" ({incomplete} incomplete)" if incomplete else "")
    return out


def _per_epoch_table(
    name: str, title: str, rates: pd.DataFrame, metrics: list[str], order: list[str], labels: dict[str, str], seeds: dict[str, str]
) -> Table:
    data = rates[rates["metric"].isin(metrics)].copy()
    rows = []
    for variant in order:
        for metric in metrics:
            cells = data[(data["variant"] == variant) & (data["metric"] == metric)]
            if cells.empty:
                continue
            row = {"variant": variant, "metric": RATE_NAMES[metric]}
            for _, c in cells.iterrows():
                row[f"epoch {int(c['epoch'])}"] = _cell(c, 100, 1)
            rows.append(row | {"runs": seeds[variant], "labels": labels[variant]})
    view = pd.DataFrame(rows)
    epoch_columns = sorted((c for c in view if c.startswith("epoch ")), key=lambda c: int(c.split()[1]))
    view = view[["variant", "metric", *epoch_columns, "runs", "labels"]].fillna("–") if rows else view
    data["labels"] = data["variant"].map(labels)
    return Table(name, title, data.reset_index(drop=True), view, "Percent. " + INTERVAL_NOTE)


def learning_tables(results: Results, agg: Aggregates) -> list[Table]:
    """SR/CSR and forgetting per epoch, for training and validation."""
    order, labels, seeds = variant_order(results), variant_labels(results.runs), _seeds(results.runs)
    tables = []
    for phase in LEARNING_PHASES:
        rates = agg.epoch_rates[agg.epoch_rates["phase_name"] == phase]
        if rates.empty:
            continue
        tables.append(_per_epoch_table(f"sr_csr_{phase}", f"SR and CSR per epoch ({phase})", rates, ["sr", "csr"], order, labels, seeds))
    for phase in LEARNING_PHASES:
        rates = agg.epoch_rates[(agg.epoch_rates["phase_name"] == phase) & agg.epoch_rates["metric"].str.startswith("forgetting")]
        if rates.empty:
            continue
        table = _per_epoch_table(
            f"forgetting_{phase}",
            f"Forgetting per epoch ({phase})",
            rates,
            ["forgetting_rate", "forgetting_of_solved"],
            order,
            labels,
            seeds,
        )
        table.note = (
            "Percent. FR (MemRL v2): tasks solved at e-1 and failed at e over all tasks failed at e; FR of solved: the same count over "
            "tasks solved at e-1. " + INTERVAL_NOTE
        )
        tables.append(table)
    return tables


def split_sr_table(results: Results, agg: Aggregates) -> Table | None:
    """Test SR per split, with the paired-bootstrap difference to the `none` baseline."""
    if agg.test_rates.empty:
        return None
    order, labels, seeds = variant_order(results), variant_labels(results.runs), _seeds(results.runs)
    diffs = agg.differences.set_index(["variant", "split"])
    methods = results.runs.drop_duplicates("variant").set_index("variant")["method"]
    rows = []
    for variant in order:
        row = {"variant": variant}
        for split in agg.test_splits:
            cell = agg.test_rates[(agg.test_rates["variant"] == variant) & (agg.test_rates["split"] == split)]
            row[f"{split} SR"] = _cell(cell.iloc[0], 100, 1) if len(cell) else "–"
            if not diffs.empty:
                row[f"{split} Δ vs none (pp)"] = _difference_cell(diffs, variant, split, methods[variant])
        rows.append(row | {"runs": seeds[variant], "labels": labels[variant]})
    data = agg.test_rates.merge(
        agg.differences.drop(columns=["note"]).rename(
            columns={"diff_mean": "diff_vs_baseline", "ci_low": "diff_ci_low", "ci_high": "diff_ci_high"}
        ),
        on=["variant", "split"],
        how="left",
    )
    data["labels"] = data["variant"].map(labels)
    note = (
        "SR in percent. "
        + INTERVAL_NOTE
        + " Δ vs none: percentage points, mean difference to the `none` baseline over tasks paired by task id and seed, "
        "with the 95% percentile interval of a paired bootstrap over tasks (10,000 resamples, fixed seed)."
    )
    return Table("test_sr", "Test SR per split", data, pd.DataFrame(rows), note)


def _difference_cell(diffs: pd.DataFrame, variant: str, split: str, method: str) -> str:
    if method == BASELINE_METHOD:
        return "baseline"
    if (variant, split) not in diffs.index:
        return "–"
    d = diffs.loc[(variant, split)]
    return d["note"] or _gain_cell(d["diff_mean"], d["ci_low"], d["ci_high"])


def latency_table(results: Results, agg: Aggregates) -> Table | None:
    if agg.latency.empty:
        return None
    order, labels = variant_order(results), variant_labels(results.runs)
    stages = list(dict.fromkeys(agg.latency["stage"]))
    rows = []
    for variant in order:
        row = {"variant": variant}
        for stage in stages:
            cell = agg.latency[(agg.latency["variant"] == variant) & (agg.latency["stage"] == stage)]
            row[f"{stage} p50 / p95"] = (
                f"{fmt_duration(cell['p50_s'].iloc[0])} / {fmt_duration(cell['p95_s'].iloc[0])}" if len(cell) else "–"
            )
        rows.append(row | {"labels": labels[variant]})
    data = agg.latency.assign(labels=agg.latency["variant"].map(labels))
    note = (
        "Per episode, over every episode of every seed. act leaves out episodes answered wholly from the LLM cache; learn is the batch's "
        "time shared over its episodes."
    )
    return Table("latency", "Latency per stage", data, pd.DataFrame(rows), note)


def fmt_duration(seconds: float) -> str:
    """Three significant digits in µs, ms or s."""
    for unit, scale in (("µs", 1e-6), ("ms", 1e-3)):
        value = float(f"{seconds / scale:.3g}")
        if value < 1000:
            return f"{value:g} {unit}"
    return f"{seconds:.3g} s"


def _end_view(agg: Aggregates, order: list[str], labels: dict[str, str], columns: dict[str, tuple[str, float, int]]) -> pd.DataFrame:
    rows = []
    for variant in order:
        cells = agg.end[agg.end["variant"] == variant].set_index("metric")
        if cells.empty:
            continue
        row = {"variant": variant}
        for metric, (title, scale, digits) in columns.items():
            row[title] = _cell(cells.loc[metric], scale, digits) if metric in cells.index else "–"
        rows.append(row | {"labels": labels[variant]})
    return pd.DataFrame(rows)


MEMORY_COLUMNS = {
    "memory_items": ("items", 1, 0),
    "memory_bytes": ("KB", 1 / 1000, 1),
    "memory_groups": ("groups", 1, 1),
    "injected_chars_last_epoch": ("chars injected / prompt (last train epoch)", 1, 0),
    "injected_chars_test": ("chars injected / prompt (test)", 1, 0),
    "never_retrieved_any_phase_share": ("never retrieved in any phase %", 100, 1),
    "retrieval_gini": ("retrieval Gini", 1, 2),
    "spearman_q_utility": ("Spearman(Q, true utility)", 1, 2),
}
USAGE_COLUMNS = {
    "act_calls": ("act: LLM calls / run", 1, 0),
    "act_prompt_tokens": ("act: prompt tokens / run", 1, 0),
    "act_completion_tokens": ("act: completion tokens / run", 1, 0),
    "memory_calls": ("memory: LLM calls / run", 1, 0),
    "memory_prompt_tokens": ("memory: prompt tokens / run", 1, 0),
    "memory_completion_tokens": ("memory: completion tokens / run", 1, 0),
    "memory_op_errors": ("memory op errors / run", 1, 0),
    "trimmed_tokens": ("act: history tokens trimmed to fit / run", 1, 0),
    "format_failures": ("act: format failures (not executed) / run", 1, 0),
    "truncated_actions": ("act: actions cut at max_tokens (not executed) / run", 1, 0),
    "fuzzy_matched_actions": ("act: fuzzy-matched actions / run", 1, 0),
    "context_refusals": ("episodes refused for context length / run", 1, 0),
    "env_limits": ("episodes ended by an env limit or worker crash / run", 1, 0),
    "tampered": ("episodes that tampered with their check (scored 0) / run", 1, 0),
    "cut_unanswered": ("answers cut at max_tokens before stating one / run", 1, 0),
    "episodes": ("episodes / run", 1, 0),
}


POISON_COLUMNS = {
    "poison_memories": ("adversarial memories fed", 1, 0),
    "poison_retrieval_share": ("share of later training injections that were poison %", 100, 1),
}


def end_table(
    results: Results, agg: Aggregates, name: str, title: str, columns: dict[str, tuple[str, float, int]], note: str
) -> Table | None:
    """One row per variant of end-of-run numbers: `columns` maps metric -> (title, scale, digits)."""
    if agg.end.empty:
        return None
    order, labels = variant_order(results), variant_labels(results.runs)
    data = agg.end[agg.end["metric"].isin(columns)].assign(labels=lambda d: d["variant"].map(labels))
    return Table(name, title, data, _end_view(agg, order, labels, columns), note + " " + INTERVAL_NOTE)


def usage_table(results: Results, agg: Aggregates, note: str) -> Table | None:
    """Tokens and calls per variant; with a writer apart from the acting model (memory_llm) in any run, a column naming it."""
    table = end_table(results, agg, "usage", "Tokens and LLM calls", USAGE_COLUMNS, note)
    runs = results.runs
    if table is None or "memory_model" not in runs or runs["memory_model"].isna().all():
        return table
    writers = runs.groupby("variant")["memory_model"].agg(lambda m: ", ".join(sorted({str(x) for x in m.dropna()})) or "the acting model")
    view = table.view.copy()
    view.insert(4, "memory: model", view["variant"].map(writers).fillna("the acting model"))
    return dataclasses.replace(table, view=view, note=table.note + " Memory model: the writer of memory calls (memory_llm), when set.")


def protocol_table(results: Results, agg: Aggregates) -> Table | None:
    """The streaming, replay, repair and transfer protocols' numbers (memrl_bench/protocols; README, Protocols)."""
    if not results.runs["protocol_metrics"].map(bool).any():
        return None
    note = (
        "Streaming, replay, repair and transfer protocols (memrl_bench/protocols/streaming.py, replay.py, repair.py and transfer.py define "
        "each number). Paired numbers need a twin run "
        "of the same seeds in the folder: the none run on the same stream or target, or the same repair config with "
        "protocol.corrupt_share=0."
    )
    return end_table(results, agg, "protocols", "Streaming, replay, repair and transfer", protocol_columns(results.runs), note)


def transfer_table(results: Results, agg: Aggregates) -> Table | None:
    """The transfer matrix in long form: per method, source env and target env, the transfer gain over none."""
    if agg.transfer.empty:
        return None
    view = pd.DataFrame(
        {
            "method": agg.transfer["arm"],
            "learned in (source)": agg.transfer["source"],
            "tested in (target)": agg.transfer["target"],
            "transfer gain over none pp": [fmt_interval(r.mean, r.ci_low, r.ci_high, int(r.n), 100, 1) for r in agg.transfer.itertuples()],
            "test SR with the source's memory %": [f"{100 * sr:.1f}" for sr in agg.transfer["transfer_sr"]],
        }
    )
    note = (
        "protocol=transfer (memrl_bench/protocols/transfer.py): each source run's final memory tested, frozen, on the target's first test "
        "split; the gain is "
        "that SR minus the none run's of the same command, over the replicate runs. A source tested on its own env repeats its held-out "
        "test (the diagonal). " + INTERVAL_NOTE
    )
    return Table("transfer", "Transfer matrix", agg.transfer, view, note)


def poison_table(results: Results, agg: Aggregates) -> Table | None:
    """The poisoning experiment: how much poison each variant was fed and how much it used.

    Its SR degradation and recovery are the SR-per-epoch rows and figure of the same variants.
    """
    if not (results.runs["poison_memories"] > 0).any():
        return None
    note = (
        "Adversarial memories fed to learn() at the start of protocol.poison_epoch (status poison in episodes.jsonl, never scored); "
        "compare each variant's SR per epoch above with its poison_share=0 twin."
    )
    return end_table(results, agg, "poisoning", "Memory poisoning", POISON_COLUMNS, note)


DRIFT_COLUMNS = {
    "drift_sr_dip": ("SR dip (window before - lowest after) %", 100, 1),
    "drift_tasks_until_recovery": ("tasks until recovery (runs that recovered)", 1, 0),
    "drift_sr_change": ("SR after the change - epoch before %", 100, 1),
    "drift_post_sr": ("training SR after the change %", 100, 1),
    "drift_stale_share": ("stale share of injections after the change % (synthetic)", 100, 1),
    "drift_last_stale_episode": ("last episode after the change injecting a stale memory", 1, 0),
}


def drift_table(results: Results, agg: Aggregates) -> Table | None:
    """The drift protocol's numbers (metrics.json's drift block, memrl_bench/protocols/drift.py), per variant."""
    if results.runs["drift_post_sr"].isna().all():
        return None
    note = (
        "The environment changes at the start of protocol.drift.epoch (memrl_bench/protocols/drift.py defines each number); tasks until "
        "recovery averages the runs that recovered (– when none did); stale: synthetic ground truth."
    )
    return end_table(results, agg, "drift", "Drift", DRIFT_COLUMNS, note)


RETRY_COLUMNS = {
    "retry_sr_at_1": ("SR@1: first attempt %", 100, 1),
    "retry_sr_at_k": ("SR@k: solved within retries + 1 attempts %", 100, 1),
    "retry_attempts_mean": ("attempts / task", 1, 2),
    "retry_tokens_mean": ("tokens of the retrying / task", 1, 0),
}


def retry_table(results: Results, agg: Aggregates) -> Table | None:
    """protocol.retries (memrl_bench/protocols/retry.py): SR@1 and SR@k apart, per variant."""
    if results.runs["retry_sr_at_k"].isna().all():
        return None
    note = (
        "Reflexion-style retry within a task (protocol.retries; memrl_bench/protocols/retry.py): a failed attempt is played again, up to "
        "retries more times, on the first test split retried (else validation, else training), last epoch. SR@1 is the run's SR "
        "everywhere else in this report; SR@k counts extra attempts and is comparable only with SR@k at the same k. Runs labelled "
        "retry_ground_truth_verdict_at_evaluation retried on the environment's own verdict at evaluation: a scoring leak. Tokens: the "
        "retries' acting and the verdict and reflection calls (the usage table counts the scheduled episodes only)."
    )
    return end_table(results, agg, "retries", "Retry within a task (SR@1 and SR@k)", RETRY_COLUMNS, note)


GAIN_COST_COLUMNS = {
    "injected_tokens_test": ("injected tokens / prompt (test, estimated)", 1, 0),
    "memory_calls_per_episode": ("memory calls / episode", 1, 2),
    "memory_tokens_per_episode": ("memory tokens / episode", 1, 0),
    "memory_items": ("memory items", 1, 0),
    "memory_bytes": ("memory KB", 1 / 1000, 1),
}


def _gain_cell(mean: float, low: float, high: float, digits: int = 1) -> str:
    """ "+mean [low, high]" in percentage points, or "–"."""
    if _missing(mean):
        return "–"
    return f"{100 * mean:+.{digits}f} [{100 * low:+.{digits}f}, {100 * high:+.{digits}f}]"


def gain_cost_table(results: Results, agg: Aggregates) -> Table | None:
    """Test SR gain over `none` beside injected tokens, memory-management calls and tokens, retrieval latency and memory size."""
    gains = agg.gain_cost.set_index("variant")
    if gains.empty:
        return None
    order, labels = variant_order(results), variant_labels(results.runs)
    baselines = set(gains["baseline"])
    costs = _end_view(agg, order, labels, GAIN_COST_COLUMNS).set_index("variant") if not agg.end.empty else pd.DataFrame()
    retrieve = agg.latency[agg.latency["stage"] == "retrieve"].set_index("variant")["p50_s"]
    rows = []
    for variant in (v for v in order if v in gains.index or v in baselines):
        row = {"variant": variant}
        if variant in gains.index:
            g = gains.loc[variant]
            row["test SR gain vs none (pp) [95% CI]"] = _gain_cell(g["gain_mean"], g["gain_low"], g["gain_high"])
        else:
            row["test SR gain vs none (pp) [95% CI]"] = "baseline"
        for title, _, _ in GAIN_COST_COLUMNS.values():
            row[title] = costs.loc[variant, title] if variant in costs.index else "–"
        row["retrieve p50"] = fmt_duration(retrieve[variant]) if variant in retrieve.index else "–"
        for ratio, title in (
            ("gain_per_1k_tokens", "gain per 1k injected tokens (pp)"),
            ("gain_per_call", "gain per memory call / episode (pp)"),
        ):
            row[title] = (
                _gain_cell(*(gains.loc[variant, f"{ratio}_{b}"] for b in ("mean", "low", "high")), digits=2)
                if variant in gains.index
                else "–"
            )
        rows.append(row | {"labels": labels[variant]})
    note = (
        "Gain: test SR minus its `none` baseline's, every test split pooled, paired bootstrap over tasks (pairs by seed and task), 95% "
        "interval in brackets. "
        "Injected tokens are estimated from the logged injected_chars as the harness counts tokens (memrl_bench.llm: bytes / 3, rounded "
        "up; one character taken as one byte), "
        "so they over-count a real tokenizer's. Memory calls and tokens: memory management (memory_usage), all phases, per episode played. "
        "Gain per 1k tokens and per call: the gain and its interval divided by the mean cost (– where the cost is 0); the costs' spread "
        "over seeds is in their own columns. " + INTERVAL_NOTE
    )
    return Table(
        "gain_cost", "Gain against cost", agg.gain_cost.assign(labels=agg.gain_cost["variant"].map(labels)), pd.DataFrame(rows), note
    )


def choice_table(results: Results) -> Table | None:
    """Multiple choice: each variant's answered letters beside its SR, and the scored slice's
    key letters with the SR of the best constant letter (chance is not 1/4 on an uneven slice)."""
    episodes = results.episodes[results.episodes["answer_key"].notna() & (results.episodes["phase"] != "poison")]
    if episodes.empty:
        return None
    letters = sorted(set(episodes["answer_key"]) | set(episodes["answer"].dropna()))
    labels = variant_labels(results.runs)
    variant_of = results.runs.set_index("run")["variant"]
    rows, references = [], {}
    for variant in variant_order(results):
        of_variant = episodes[episodes["run"].map(variant_of) == variant]
        scored = of_variant[of_variant["phase"] == "test"] if (of_variant["phase"] == "test").any() else of_variant
        if scored.empty:
            continue
        phase = "test" if (scored["phase"] == "test").all() else "train (runtime learning)"
        keys = scored.drop_duplicates("task_id").set_index("task_id")["answer_key"]
        slice_name = f"{phase}, {len(keys)} questions"
        if slice_name not in references:
            shares = keys.value_counts(normalize=True)
            best = shares.idxmax()
            references[slice_name] = {
                "variant": f"key letters ({slice_name})",
                "episodes": len(keys),
                "SR %": f"best constant letter {best}: {100 * shares[best]:.1f}",
            }
            references[slice_name].update({f"{letter} %": fmt_number(100 * shares.get(letter, 0.0)) for letter in letters})
        answered = scored["answer"].fillna("none").value_counts(normalize=True)
        row = {"variant": variant, "episodes": len(scored), "SR %": fmt_number(100 * scored["success"].mean())}
        row.update({f"{letter} %": fmt_number(100 * answered.get(letter, 0.0)) for letter in letters})
        row["no answer %"] = fmt_number(100 * answered.get("none", 0.0))
        if (scored["free_answer"].fillna("none") != scored["answer"].fillna("none")).any():  # only where a constrained answer differs
            row["SR of the free reading %"] = fmt_number(100 * (scored["free_answer"] == scored["answer_key"]).mean())
        rows.append(row)
    view = pd.DataFrame([*references.values(), *rows]).fillna("")
    note = (
        "Multiple choice. Key letters: how the scored questions' right letters are spread, and the SR a model answering one letter to "
        "every question would get "
        "(the chance reference; 25% only when the letters are even). Each variant: the letters it answered, over its scored episodes "
        "(test; train under runtime learning), pooled over seeds." + synthetic_suffix(list(labels), labels)
    )
    return Table("choice_letters", "Answer letters against the key (multiple choice)", view, view, note)


def runs_table(results: Results) -> Table:
    runs = results.runs
    view = pd.DataFrame(
        {
            "run": runs["run"],
            "status": runs["status"] + np.where(runs["has_complete_marker"] & ~runs["has_metrics"], " (no metrics.json)", ""),
            "variant": runs["variant"],
            "seed": runs["seed"],
            "task order seed": runs["task_order_seed"],
            "episodes": runs["episodes"],
            "config hash": runs["config_hash"].fillna("").str[:8],
            "git commit": runs["git_commit"].fillna("").str[:8],
            "model": runs["model"].fillna("–"),
            "embedder": runs["embedder"].fillna("–"),
            "labels": runs["labels"],
            "split hashes": runs["split_hashes"].map(lambda h: "; ".join(f"{s}: {v[:8]}" for s, v in sorted(h.items()))),
        }
    )
    data = runs.drop(columns=["config", "path"]).assign(
        split_hashes=runs["split_hashes"].map(lambda h: ";".join(f"{s}={v}" for s, v in sorted(h.items()))),
        split_sizes=runs["split_sizes"].map(lambda h: ";".join(f"{s}={v}" for s, v in sorted(h.items()))),
    )
    return Table("runs", "Runs", data, view, "Hashes shortened to 8 characters here; runs.csv has them whole.")


def all_tables(results: Results, agg: Aggregates) -> dict[str, Table]:
    memory_note = (
        "At the end of training (complete runs). Retrieval counts are over the episodes of every phase and the final snapshot's items, as "
        "in metrics.json."
    )
    usage_note = (
        "LLM usage summed over each run's episodes (all phases), then averaged over seeds: acting (act_usage) and memory management "
        "(memory_usage)."
    )
    tables = learning_tables(results, agg) + [
        split_sr_table(results, agg),
        choice_table(results),
        latency_table(results, agg),
        end_table(results, agg, "memory", "Memory at the end", MEMORY_COLUMNS, memory_note),
        usage_table(results, agg, usage_note),
        poison_table(results, agg),
        drift_table(results, agg),
        retry_table(results, agg),
        protocol_table(results, agg),
        transfer_table(results, agg),
        gain_cost_table(results, agg),
        runs_table(results),
    ]
    return {t.name: t for t in tables if t is not None}


def to_markdown(frame: pd.DataFrame) -> str:
    """A Markdown table; cells hold run, model and setting names as text (memrl_bench.core.markup)."""
    lines = ["| " + " | ".join(markdown_text(c) for c in frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(markdown_text(x) for x in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def write_tables(tables: dict[str, Table], out_dir: Path, headings: dict[str, str], preamble: str = "") -> Path:
    """tables/<name>.csv (numbers) and tables/<name>.md, plus all of them (after `preamble`) in tables.md."""
    folder = out_dir / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    combined = [preamble] if preamble else []
    for table in tables.values():
        table.data.to_csv(folder / f"{table.name}.csv", index=False)
        text = f"## {table.title}{headings.get(table.name, '')}\n\n{to_markdown(table.view)}\n\n{table.note}\n"
        (folder / f"{table.name}.md").write_text(text)
        combined.append(text)
    path = out_dir / "tables.md"
    path.write_text("\n".join(combined))
    return path
