"""Per-run numbers, and their aggregation over seeds.

Per-run rates use memrl_bench.core.metrics on the loaded episode rows, so the report and
metrics.json share one definition. Over seeds: the mean and a 95% t-interval (few
seeds: Student t, not a normal z; one seed: no interval). Between two methods on the
same tasks: a paired bootstrap over tasks.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from memrl_bench import protocols
from memrl_bench.core import metrics as metrics_lib
from memrl_bench.core.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap_mean, t_interval
from memrl_bench.llm import ESTIMATE_BYTES_PER_TOKEN
from memrl_bench.protocols import drift, retry
from memrl_bench.protocols.repair import against_clean
from memrl_bench.report.axes import BASELINE_METHOD, leaves
from memrl_bench.report.load import HARNESS_COUNTS, LEARNING_PHASES, RATE_COLUMNS, STAGES, USAGE_KEYS, Results

RUN_COLUMNS = ["run", "method", "variant", "seed", "labels", "complete"]  # identify a run in per-run tables


@dataclass(frozen=True)
class BootstrapDifference:
    """Mean of A - B over paired tasks and its 95% percentile interval."""

    mean: float
    low: float
    high: float
    tasks: int
    pairs: int


def paired_bootstrap(
    a: pd.DataFrame, b: pd.DataFrame, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> BootstrapDifference | None:
    """Paired bootstrap of success(A) - success(B).

    `a`, `b`: episode rows with seed, task_id, success. Episodes pair by (seed,
    task_id) (several samples of a task are averaged first); a task's difference is
    its mean over the paired seeds; tasks are resampled with replacement. None if no
    pair exists.
    """
    keys = ["seed", "task_id"]
    paired = a.groupby(keys)["success"].mean().to_frame("a").join(b.groupby(keys)["success"].mean().to_frame("b"), how="inner")
    if paired.empty:
        return None
    per_task = (paired["a"] - paired["b"]).groupby(level="task_id").mean().to_numpy()
    diff = bootstrap_mean(per_task, resamples, seed)
    return BootstrapDifference(diff.mean, diff.low, diff.high, diff.n, len(paired))


def whole_phases(results: Results) -> pd.DataFrame:
    """(run, phase_name, epoch) -> whether every task of the split was played.

    A partial epoch (an interrupted run) would score a subset of the tasks; it is
    kept out of the aggregates.
    """
    keys = ["run", "phase_name", "split", "epoch"]
    played = results.episodes.groupby(keys)["task_id"].nunique().rename("tasks").reset_index()
    if played.empty:
        return pd.DataFrame(columns=[*keys, "tasks", "whole"])
    sizes = {
        (run, split): size for run, by_split in results.runs.set_index("run")["split_sizes"].items() for split, size in by_split.items()
    }
    played["whole"] = [
        sizes.get((run, split)) in (None, tasks) for run, split, tasks in zip(played["run"], played["split"], played["tasks"])
    ]
    return played


def per_run_epoch(results: Results) -> pd.DataFrame:
    """One row per (run, phase, epoch): SR, CSR, both forgetting rates (as memrl_bench.core.metrics computes them),
    and whether it is whole."""
    whole = whole_phases(results)[["run", "phase_name", "epoch", "whole"]]
    table = results.rates.merge(whole, on=["run", "phase_name", "epoch"], how="left")
    return table.join(results.runs.set_index("run")[["method", "variant", "seed", "labels"]], on="run")


def over_seeds(per_run: pd.DataFrame, keys: list[str], values: list[str]) -> pd.DataFrame:
    """Long table: keys, metric, n, mean, ci_low, ci_high (95% t-interval over runs)."""
    rows = []
    for key, group in per_run.groupby(keys, sort=False):
        for metric in values:
            interval = t_interval(group[metric])
            if interval.n:
                rows.append(
                    {
                        **dict(zip(keys, key)),
                        "metric": metric,
                        "n": interval.n,
                        "mean": interval.mean,
                        "ci_low": _nan(interval.low),
                        "ci_high": _nan(interval.high),
                    }
                )
    return pd.DataFrame(rows, columns=[*keys, "metric", "n", "mean", "ci_low", "ci_high"])


def _nan(value: float | None) -> float:
    return np.nan if value is None else value


def epoch_rates(per_run: pd.DataFrame) -> pd.DataFrame:
    """SR, CSR and forgetting per variant, training/validation phase and epoch, over seeds."""
    scored = per_run[per_run["whole"].fillna(False).astype(bool) & per_run["phase_name"].isin(LEARNING_PHASES)]
    return over_seeds(scored, ["variant", "method", "phase_name", "epoch"], list(RATE_COLUMNS))


def tested_splits(results: Results) -> list[str]:
    return sorted(results.episodes.loc[results.episodes["phase"] == "test", "split"].unique())


def rates_on_test(per_run: pd.DataFrame, splits: list[str]) -> pd.DataFrame:
    """Test SR per variant and split over seeds (the last evaluated epoch of each run)."""
    tested = per_run[per_run["phase_name"].isin(splits) & per_run["whole"].fillna(False).astype(bool)]
    last = tested[tested["epoch"] == tested.groupby(["run", "phase_name"])["epoch"].transform("max")]
    return over_seeds(last.rename(columns={"phase_name": "split"}), ["variant", "method", "split"], ["sr"])


def _baseline_for(variant: str, runs: pd.DataFrame) -> str | None:
    """The `none` variant in the same condition, else the only `none` variant."""
    baselines = runs[runs["method"] == BASELINE_METHOD]
    if baselines.empty or variant in set(baselines["variant"]):
        return None
    condition = runs.loc[runs["variant"] == variant, "condition"].iloc[0]
    same = baselines[baselines["condition"] == condition]["variant"].unique()
    candidates = same if len(same) else baselines["variant"].unique()
    return str(candidates[0]) if len(candidates) == 1 else None


def _same_split(runs: pd.DataFrame, variants: tuple[str, str], split: str) -> bool:
    hashes = {h.get(split) for h in runs.loc[runs["variant"].isin(variants), "split_hashes"]}
    return len(hashes) == 1


def _last_test(episodes: pd.DataFrame) -> pd.DataFrame:
    """Test episodes of each run's last evaluated epoch, per split."""
    test = episodes[episodes["phase"] == "test"]
    return test[test["epoch"] == test.groupby(["run", "split"])["epoch"].transform("max")]


def differences_vs_baseline(results: Results) -> pd.DataFrame:
    """Paired bootstrap of test SR, each variant minus its `none` baseline, per split."""
    runs = results.runs
    test = _last_test(results.episodes)
    rows = []
    for variant in runs["variant"].unique():
        baseline = _baseline_for(variant, runs)
        if baseline is None:
            continue
        for split in tested_splits(results):
            if not _same_split(runs, (variant, baseline), split):
                rows.append({"variant": variant, "baseline": baseline, "split": split, "note": "different task sets (split hashes differ)"})
                continue
            in_split = test[test["split"] == split]
            diff = paired_bootstrap(in_split[in_split["variant"] == variant], in_split[in_split["variant"] == baseline])
            if diff is not None:
                rows.append(
                    {
                        "variant": variant,
                        "baseline": baseline,
                        "split": split,
                        "diff_mean": diff.mean,
                        "ci_low": diff.low,
                        "ci_high": diff.high,
                        "tasks": diff.tasks,
                        "pairs": diff.pairs,
                        "note": "",
                    }
                )
    return pd.DataFrame(rows, columns=["variant", "baseline", "split", "diff_mean", "ci_low", "ci_high", "tasks", "pairs", "note"])


def latency_percentiles(results: Results) -> pd.DataFrame:
    """p50 / p95 seconds per variant and stage, over all its episodes (cache-hit-only episodes left out of act)."""
    episodes = results.episodes
    rows = []
    recorded = [c.removeprefix("latency_") for c in episodes if c.startswith("latency_")]
    stages = sorted(recorded, key=lambda s: (STAGES.index(s) if s in STAGES else len(STAGES), s))
    for variant, group in episodes.groupby("variant", sort=False):
        for stage in stages:
            seconds = group[f"latency_{stage}"]
            if stage == "act":
                seconds = seconds[~group["act_all_cached"]]
            seconds = seconds.dropna()
            if len(seconds):
                rows.append(
                    {
                        "variant": variant,
                        "method": group["method"].iloc[0],
                        "stage": stage,
                        "n": len(seconds),
                        "p50_s": float(seconds.quantile(0.5)),
                        "p95_s": float(seconds.quantile(0.95)),
                    }
                )
    return pd.DataFrame(rows, columns=["variant", "method", "stage", "n", "p50_s", "p95_s"])


def _last_training_epoch(episodes: pd.DataFrame) -> pd.DataFrame:
    train = episodes[episodes["phase"] == "train"]
    return train[train["epoch"] == train.groupby("run")["epoch"].transform("max")]


def per_run_end(results: Results) -> pd.DataFrame:
    """Per run: memory size after the last training batch, injected characters, LLM usage, retrieval spread."""
    episodes = results.episodes
    train = episodes[episodes["phase"] == "train"].sort_values(["run", "epoch", "order_index"])
    end = train.groupby("run")[["memory_items_after", "memory_bytes_after", "memory_groups_after"]].last()
    end.columns = ["memory_items", "memory_bytes", "memory_groups"]
    end["injected_chars_last_epoch"] = _last_training_epoch(episodes).groupby("run")["injected_chars"].mean()
    end["injected_chars_test"] = episodes[episodes["phase"] == "test"].groupby("run")["injected_chars"].mean()
    # The harness's token estimate (memrl_bench.llm: bytes / 3, rounded up) per prompt; characters stand in for bytes.
    end["injected_tokens_test"] = (
        (-(-episodes.loc[episodes["phase"] == "test", "injected_chars"] // ESTIMATE_BYTES_PER_TOKEN)).groupby(episodes["run"]).mean()
    )
    usage_columns = [f"{purpose}_{key}" for purpose in ("act", "memory") for key in USAGE_KEYS]
    usage = episodes.groupby("run")[usage_columns + ["memory_op_errors", *HARNESS_COUNTS]].sum()
    usage["episodes"] = episodes.groupby("run").size()
    usage["memory_calls_per_episode"] = usage["memory_calls"] / usage["episodes"]
    usage["memory_tokens_per_episode"] = (usage["memory_prompt_tokens"] + usage["memory_completion_tokens"]) / usage["episodes"]
    table = usage.join(end, how="left").join(retrieval_spread(results), how="left").join(q_utility_spearman(results), how="left")
    run_numbers = [
        "poison_memories",
        "poison_retrieval_share",
        *(f"drift_{key}" for key in drift.REPORTED),
        *(f"retry_{key}" for key in retry.REPORTED),
    ]
    table = table.join(results.runs.set_index("run")[run_numbers].astype("float64"), how="left")
    table = table.join(protocol_numbers(results.runs), how="left")
    return table.join(results.runs.set_index("run")[RUN_COLUMNS[1:]]).reset_index()


def protocol_columns(runs: pd.DataFrame) -> dict[str, tuple[str, float, int]]:
    """The protocols table's columns (Protocol.report_columns) of the protocols of these runs, by protocol name."""
    classes = {protocols.name_of(p): protocols.named(p) for p in (c.get("protocol") or {} for c in runs["config"])}
    return {k: v for _, cls in sorted(classes.items()) for k, v in cls.report_columns.items()}


def _twin_key(run, drop: tuple[str, ...]) -> str:
    """A run's settings without the keys in `drop` (dotted prefixes), with its seeds: equal for the runs it is paired with."""
    kept = {k: v for k, v in leaves(run.config).items() if not k.startswith(drop)}
    return repr((sorted(kept.items()), run.seed, run.task_order_seed))


def protocol_numbers(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run of a protocol with report columns (memrl_bench/protocols): its own numbers
    (Protocol.report_numbers), and those paired with a twin run of the folder of the same seeds.

    stream_gain_over_none: the stream's SR minus that of the `none` run on the same stream
    (every setting but the method's equal): forward transfer within the env, each task
    scored with the memory of every earlier task against no memory (AgentMemoryBench's
    forward transfer gain, with the whole prefix as the memory). error_robustness and
    net_recovery: repair.against_clean with the run's clean twin (the same settings with
    protocol.corrupt_share 0). transfer_sr: the SR on the run's first test split with the
    source's memory; transfer_gain: it minus that of the `none` run of the same command
    (AgentMemoryBench's transfer gain, P_transfer - P_baseline with the zero-shot agent).
    """
    rows: dict[str, dict[str, float | None]] = {}
    stream_sr: dict[str, float] = {}
    transfer_sr: dict[str, float] = {}
    clean: dict[str, dict] = {}
    for run in runs.itertuples():
        m = run.protocol_metrics
        if not m:
            continue
        row = rows.setdefault(run.run, {}) | protocols.named(run.config.get("protocol") or {}).report_numbers(m)
        rows[run.run] = row
        if (s := m.get("streaming")) and run.method == BASELINE_METHOD:
            stream_sr[_twin_key(run, ("method",))] = s["success_rate"]
        if m.get("transfer") and run.method == BASELINE_METHOD:
            transfer_sr[_twin_key(run, ("method",))] = row["transfer_sr"]
        if r := m.get("repair"):
            if not (run.config.get("protocol") or {}).get("corrupt_share"):
                clean[_twin_key(run, ("protocol.corrupt_share",))] = r
    for run in runs.itertuples():
        m = run.protocol_metrics
        if "streaming" in m and run.method != BASELINE_METHOD and (none := stream_sr.get(_twin_key(run, ("method",)))) is not None:
            rows[run.run]["stream_gain_over_none"] = m["streaming"]["success_rate"] - none
        if (
            "repair" in m
            and (run.config.get("protocol") or {}).get("corrupt_share")
            and (twin := clean.get(_twin_key(run, ("protocol.corrupt_share",))))
        ):
            rows[run.run] |= against_clean(m["repair"], twin)
        if "transfer" in m and run.method != BASELINE_METHOD and (none := transfer_sr.get(_twin_key(run, ("method",)))) is not None:
            rows[run.run]["transfer_gain"] = rows[run.run]["transfer_sr"] - none
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(protocol_columns(runs))).astype("float64")


TRANSFER_COLUMNS = ["arm", "source", "target", "n", "mean", "ci_low", "ci_high", "transfer_sr"]


def env_labels(configs: list[dict]) -> list[str]:
    """A short name of each env config, among these: its name, and the settings in which it
    differs from the configs of the same env."""
    flat = [leaves(c) for c in configs]
    varied: dict[str, list[str]] = {}
    for name in {str(c.get("name")) for c in configs}:
        same = [f for c, f in zip(configs, flat) if str(c.get("name")) == name]
        varied[name] = sorted(k for k in set().union(*same) if k not in ("name", "roles") and len({repr(f.get(k)) for f in same}) > 1)

    def shown(config: dict, dotted: str) -> str:  # as written (leaves' values are canonical: 0 -> 0.0)
        for part in dotted.split("."):
            config = config.get(part) if isinstance(config, dict) else None
        return json.dumps(config) if isinstance(config, (list, dict)) else str(config)

    return [" ".join([str(c.get("name")), *(f"{k}={shown(c, k)}" for k in varied[str(c.get("name"))])]) for c in configs]


def transfer_matrix(results: Results, numbers: pd.DataFrame) -> pd.DataFrame:
    """The transfer matrix: per method arm, source env and target env, the transfer gain over
    `none` (`numbers`: protocol_numbers' columns by run) as a mean with a 95% t-interval over
    the replicate runs, and the mean transfer SR. Envs are named by what tells them apart here (env_labels)."""
    runs = results.runs[results.runs["complete"]]
    runs = runs[
        [
            bool(m.get("transfer")) and r in numbers.index and not np.isnan(numbers.loc[r, "transfer_gain"])
            for r, m in zip(runs["run"], runs["protocol_metrics"])
        ]
    ]
    if runs.empty:
        return pd.DataFrame(columns=TRANSFER_COLUMNS)
    sources = [m["transfer"]["source_env"] or {} for m in runs["protocol_metrics"]]
    targets = [c["env"] for c in runs["config"]]
    labels = env_labels(sources + targets)
    frame = pd.DataFrame(
        {
            "arm": [results.places[v].arm for v in runs["variant"]],
            "source": labels[: len(runs)],
            "target": labels[len(runs) :],
            "gain": numbers.loc[runs["run"], "transfer_gain"].to_numpy(),
            "transfer_sr": numbers.loc[runs["run"], "transfer_sr"].to_numpy(),
        }
    )
    rows = []
    for (arm, source, target), cell in frame.groupby(["arm", "source", "target"], sort=True):
        interval = t_interval(cell["gain"])
        rows.append(
            {
                "arm": arm,
                "source": source,
                "target": target,
                "n": interval.n,
                "mean": interval.mean,
                "ci_low": _nan(interval.low),
                "ci_high": _nan(interval.high),
                "transfer_sr": float(cell["transfer_sr"].mean()),
            }
        )
    return pd.DataFrame(rows, columns=TRANSFER_COLUMNS)


GAIN_COLUMNS = [
    "variant",
    "method",
    "baseline",
    "gain_mean",
    "gain_low",
    "gain_high",
    "tasks",
    "pairs",
    "injected_tokens",
    "memory_calls_per_episode",
]
COSTS = {"injected_tokens": "injected_tokens_test", "memory_calls_per_episode": "memory_calls_per_episode"}  # column -> per_run_end metric
RATIOS = {
    "gain_per_1k_tokens": ("injected_tokens", 1000.0),
    "gain_per_call": ("memory_calls_per_episode", 1.0),
}  # ratio -> (cost it divides by, cost unit)


def gain_and_cost(results: Results, end: pd.DataFrame) -> pd.DataFrame:
    """Per variant with a `none` baseline: test SR gain over it beside what the memory costs.

    Gain: paired bootstrap (as differences_vs_baseline) over the tasks of every test split
    the two variants share (same split hash), pooled. Costs: their means over seeds in `end`
    (over_seeds of per_run_end). Gain per 1k injected tokens and per memory-management call
    per episode: the gain and its interval divided by the mean cost (the cost's own spread
    over seeds is shown beside it); none when the cost is 0. Empty without a `none` variant.
    """
    runs = results.runs
    test = _last_test(results.episodes)
    test = test.assign(task_id=test["split"] + "/" + test["task_id"])
    cost = end.pivot_table(index="variant", columns="metric", values="mean", aggfunc="first") if not end.empty else pd.DataFrame()
    rows = []
    for variant in runs["variant"].unique():
        baseline = _baseline_for(variant, runs)
        if baseline is None:
            continue
        shared = [s for s in tested_splits(results) if _same_split(runs, (variant, baseline), s)]
        pooled = test[test["split"].isin(shared)]
        diff = paired_bootstrap(pooled[pooled["variant"] == variant], pooled[pooled["variant"] == baseline])
        if diff is None:
            continue
        row = {"variant": variant, "method": runs.loc[runs["variant"] == variant, "method"].iloc[0], "baseline": baseline}
        row |= {"gain_mean": diff.mean, "gain_low": diff.low, "gain_high": diff.high, "tasks": diff.tasks, "pairs": diff.pairs}
        for column, metric in COSTS.items():
            row[column] = float(cost.loc[variant, metric]) if variant in cost.index and metric in cost.columns else np.nan
        for ratio, (column, unit) in RATIOS.items():
            per = row[column] / unit
            for bound in ("mean", "low", "high"):
                row[f"{ratio}_{bound}"] = row[f"gain_{bound}"] / per if per > 0 else np.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=GAIN_COLUMNS + [f"{r}_{b}" for r in RATIOS for b in ("mean", "low", "high")])


def retrieval_counts(results: Results) -> pd.DataFrame:
    """Per final memory item: how often episodes of any phase injected it (as metrics.json counts)."""
    episodes = results.episodes
    used = Counter((run, item) for run, ids in zip(episodes["run"], episodes["retrieved_ids"]) for item in ids)
    items = results.items.copy()
    items["retrievals"] = [used.get((run, item), 0) for run, item in zip(items["run"], items["item_id"])]
    return items


def retrieval_spread(results: Results) -> pd.DataFrame:
    """Per run with a final snapshot: share of memories never retrieved in any phase, retrieval Gini (NaN for a run
    that injects a document rather than its items: metrics_lib.spread_of_counts)."""
    injections = results.episodes.groupby("run")["retrieved_ids"].apply(lambda ids: int(sum(map(len, ids))))
    rows = {}
    for run, counts in retrieval_counts(results).groupby("run")["retrievals"]:
        spread = metrics_lib.spread_of_counts(counts.astype(int), int(injections.get(run, 0)))
        rows[run] = {k: np.nan if v is None else v for k, v in spread.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["never_retrieved", "gini"])
    return frame.rename(columns={"never_retrieved": "never_retrieved_any_phase_share", "gini": "retrieval_gini"})


def q_utility_pairs(results: Results) -> pd.DataFrame:
    """Synthetic env: each final memory's learned Q beside its source episode's true utility."""
    utility = results.episodes.dropna(subset=["lesson_utility"])[["run", "episode_id", "lesson_utility"]]
    items = results.items.dropna(subset=["q_value"])
    pairs = items.merge(utility, left_on=["run", "source_episode_id"], right_on=["run", "episode_id"])
    return pairs.join(results.runs.set_index("run")[["method", "variant", "seed"]], on="run")


def q_utility_spearman(results: Results) -> pd.DataFrame:
    """Spearman(Q, true utility) per run (as metrics.json's synthetic.spearman_q_true_utility)."""
    pairs = q_utility_pairs(results)
    rows = [
        {"run": run, "spearman_q_utility": metrics_lib.spearman(list(g["q_value"]), list(g["lesson_utility"]))}
        for run, g in pairs.groupby("run")
    ]
    return pd.DataFrame(rows, columns=["run", "spearman_q_utility"]).set_index("run")


@dataclass
class Aggregates:
    """Everything the tables and figures show, computed once."""

    per_run_epoch: pd.DataFrame
    epoch_rates: pd.DataFrame
    test_splits: list[str]
    test_rates: pd.DataFrame
    differences: pd.DataFrame
    latency: pd.DataFrame
    per_run_end: pd.DataFrame
    end: pd.DataFrame  # per_run_end's numbers over seeds (complete runs only)
    gain_cost: pd.DataFrame  # test SR gain over `none` beside the memory's cost, per variant
    transfer: pd.DataFrame  # the transfer matrix (transfer_matrix)


def aggregate(results: Results) -> Aggregates:
    per_run = per_run_epoch(results)
    splits = tested_splits(results)
    end = per_run_end(results)
    end_over_seeds = over_seeds(end[end["complete"]], ["variant", "method"], [c for c in end if c not in RUN_COLUMNS])
    return Aggregates(
        per_run_epoch=per_run,
        epoch_rates=epoch_rates(per_run),
        test_splits=splits,
        test_rates=rates_on_test(per_run, splits),
        differences=differences_vs_baseline(results),
        latency=latency_percentiles(results),
        per_run_end=end,
        end=end_over_seeds,
        gain_cost=gain_and_cost(results, end_over_seeds),
        transfer=transfer_matrix(results, end.set_index("run")),  # per_run_end holds protocol_numbers' columns
    )
