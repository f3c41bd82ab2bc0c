"""Findings on the critique's claims, generated from the run folders of a study.

The critique this harness was built to test (ARCHITECTURE.md, "The question"): with epsilon = 0 and
temperature 0 MemRL's retrieval is greedy and deterministic, so epoch 1 builds the
memory bank, later epochs only refine what it chose, good early memories are amplified
and bad ones locked in, and most memories are never tested; and evaluations learn from
the tasks they score and compare against weak baselines.

Each finding states one claim, the measurement that tests it, the numbers with 95%
t-intervals and the verdict the interval supports: "supported" when it excludes the
null in the claimed direction, "not supported" when it excludes it in the other
direction, "inconclusive at this sample size" otherwise. The replicate is the task
order (task_order_seed): runs of one arm with several method seeds are averaged per
task order first, and arms are compared paired on the task order. On the synthetic
environment every number is a simulation with known ground truth, not an LLM result,
and is labelled so.

On an LLM env (the real-model study, `+experiment=critique_real`) the same claims are
computed from the same measures where they need no ground truth, labelled with the model
and the env; those that need to know which memories are harmful, their true utility or an
oracle say so instead of a verdict. One claim is measured twice: whether memory beats no
memory on held-out tasks, paired on the task order and on the test task (with the number of
test tasks a ±0.10 interval needs at the spread measured).

Three claims come from the drift study (`+experiment=drift_study`: protocol=drift, the
runs of kind "drift", which the other claims leave out): stale memories are kept, MemRL
adapts to drift faster than rag / mem0, and prompt-based memory gives more gain per
injected token than MemRL (memrl_bench/protocols/drift.py defines the drift measures).

`findings(results_dir)` reads every complete run folder below `results_dir` with the
typed run reader (memrl_bench.records: manifest, episodes, metrics, final memory) and
its statistics are memrl_bench.stats, as the report's are. A folder that is incomplete
or cannot be read is left out with one warning line naming it.
"""

from __future__ import annotations

import html
import json
import multiprocessing
import os
import sys
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from memrl_bench import interrupts, metrics, registry
from memrl_bench.config import NOT_RESULTS, KeyRole, canonical, keys_with, without
from memrl_bench.envs.base import Env
from memrl_bench.llm import ESTIMATE_BYTES_PER_TOKEN
from memrl_bench.markup import markdown_text
from memrl_bench.protocols import drift
from memrl_bench.protocols.drift import DriftSettings
from memrl_bench.records import EpisodeRecord, ManifestRecord, RunRecords, read_run
from memrl_bench.runfolder import MANIFEST, CorruptRunFolderError
from memrl_bench.stats import NOT_MEASURED, Interval, n_for_half_width, side, t_interval, variance_ratio, verdict

SECTION_TITLE = "Findings on the critique's claims"

# ---- one run ----------------------------------------------------------------------------


def _key(value: Any) -> str:
    return json.dumps(canonical(value), sort_keys=True, default=str)


def arm_label(method: dict) -> str:
    """A short name of a method configuration: MemRL by its selection rule, others by name."""
    if method.get("name") != "memrl":
        return str(method.get("name"))
    selection = method.get("selection", "greedy")
    if selection == "greedy":
        return f"memrl ε={method.get('epsilon', 0.0):g}"
    if selection == "softmax":
        return f"memrl softmax T={method.get('softmax_temperature', 1.0):g}"
    if selection == "ucb":
        return f"memrl UCB c={method.get('ucb_c', 1.0):g}"
    return "memrl Thompson"


def is_greedy_epsilon_zero(method: dict) -> bool:
    return method.get("name") == "memrl" and method.get("selection", "greedy") == "greedy" and not method.get("epsilon", 0.0)


def _arm_rank(method: dict) -> int:
    return 0 if is_greedy_epsilon_zero(method) else 1 if method.get("name") == "memrl" else 2


_SELECTION_PARAMETER = {"greedy": "epsilon", "softmax": "softmax_temperature", "ucb": "ucb_c"}


def _arm_order(method: dict) -> tuple:
    """MemRL with epsilon = 0 first, then the other MemRLs (greedy, then by selection rule,
    each by its parameter's value, numbers as numbers), then the other methods by name."""
    selection = method.get("selection", "greedy")
    value = method.get(_SELECTION_PARAMETER.get(selection, ""))
    return (_arm_rank(method), str(method.get("name")), selection != "greedy", str(selection), float(value or 0.0))


@lru_cache(maxsize=16)
def _env(env_json: str) -> Any:
    from memrl_bench import registry

    cfg = json.loads(env_json)
    return registry.get("env", cfg["name"])({k: v for k, v in cfg.items() if k not in ("name", "roles")}, seed=int(cfg.get("seed", 0) or 0))


def _mean_p(records: list[EpisodeRecord], phase: str) -> float | None:
    """Mean P(success) the env reported (synthetic: the expected SR, free of outcome draws)."""
    chosen = [r for r in records if r.phase_name == phase and "p_success" in r.info]
    if not chosen:
        return None
    last = max(r.epoch for r in chosen)
    return float(np.mean([r.info["p_success"] for r in chosen if r.epoch == last]))


def _outcomes(records: list[EpisodeRecord], phase: str | None) -> dict[str, float]:
    """Task id -> its success in the last epoch of `phase`, averaged over its samples."""
    chosen = [r for r in records if r.phase_name == phase and r.played]
    if not chosen:
        return {}
    last = max(r.epoch for r in chosen)
    by_task: dict[str, list[float]] = defaultdict(list)
    for r in chosen:
        if r.epoch == last:
            by_task[r.task_id].append(float(r.success))
    return {task: float(np.mean(v)) for task, v in sorted(by_task.items())}


def _last(by_epoch: dict[int, float] | None) -> float | None:
    """The value of the last epoch."""
    return by_epoch[max(by_epoch)] if by_epoch else None


@dataclass
class Run:
    """What the findings need of one run folder; the episode log itself is not kept."""

    path: Path
    config: dict
    labels: list[str]
    measures: dict[str, float | None] = field(default_factory=dict)
    train_choices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # episode id -> injected item ids
    test_sources: dict[str, frozenset[str]] = field(default_factory=dict)  # test task -> injected source tasks
    test_outcomes: dict[str, float] = field(default_factory=dict)  # test task -> its success in the last test epoch (mean over samples)
    top_sources: frozenset[str] = frozenset()  # source tasks of the top-decile memories by value

    @property
    def method(self) -> dict:
        return self.config["method"]

    @property
    def arm(self) -> str:
        return arm_label(self.method)

    @property
    def arm_key(self) -> str:
        return _key(self.method)

    @property
    def protocol(self) -> dict:
        return self.config.get("protocol", {})

    @property
    def order_seed(self) -> int:
        return int(self.config.get("task_order_seed", self.config.get("seed", 0)))

    @property
    def method_seed(self) -> int:
        return int(self.config.get("seed", 0))

    @property
    def temperature(self) -> float:
        return float(self.config["env"].get("outcome_temperature", 0.0) or 0.0)

    @property
    def kind(self) -> str:
        """What its protocol calls it (Protocol.kind): held_out, held_out@k (k evaluation samples), order (per-epoch
        orders), runtime_learning, streaming, replay, repair, poison, drift, transfer, or a plugin's; an unknown protocol is an error."""
        return registry.get("protocol", self.protocol.get("name", "held_out")).kind(self.protocol)

    @property
    def world_key(self) -> str:
        """The environment and everything else but the method, the evaluation kind and the replicate."""
        return _key(without(self.config, keys_with(KeyRole.ARM, KeyRole.EVALUATION, KeyRole.REPLICATE, *NOT_RESULTS)))

    @property
    def identity(self) -> str:
        """The whole config but where the run was written: equal identities are the same run."""
        return _key(without(self.config, keys_with(*NOT_RESULTS)))

    @property
    def varied_epoch(self) -> tuple[int, int] | None:
        """(epoch, its order seed) for a run whose order differs from its task_order_seed in one epoch only."""
        seeds = self.protocol.get("epoch_order_seeds") or []
        varied = [(i + 1, s) for i, s in enumerate(seeds) if s != self.order_seed]
        return varied[0] if len(varied) == 1 else None


def load_run(path: Path) -> Run:
    """Read one complete run folder (memrl_bench.records) and compute its measures."""
    records = read_run(path, require_complete=True)
    run = Run(path, records.manifest.config, list(records.manifest.labels))
    run.measures = _measures(run, records)
    run.train_choices = {r.episode_id: tuple(u.item_id for u in r.retrieved) for r in metrics.played_train(records.episodes)}
    test = test_split(records.manifest)
    run.test_sources = metrics.retrieved_sources(records.episodes, test)
    run.test_outcomes = _outcomes(records.episodes, test)
    run.top_sources = metrics.top_memory_sources(records.episodes, records.items, max(1, len(records.items) // 10))
    return run


def _load_or_why(path: Path) -> Run | str:
    """The run, or why it cannot be read."""
    try:
        return load_run(path)
    except (CorruptRunFolderError, OSError) as err:
        return str(err)
    except (KeyError, TypeError, ValueError) as err:  # a run of tasks its env no longer lists, a hand-made folder
        return f"{path}: its measures cannot be computed ({type(err).__name__}: {err})"


Warn = Callable[[str], None]


def warn_on_stderr(line: str) -> None:
    print(f"memrl-bench: warning: {line}", file=sys.stderr)


def test_split(manifest: ManifestRecord) -> str | None:
    """The split a claim's "test SR" is measured on: the first that plays the test role in the
    run (synthetic: test_in_distribution; an env whose roles were reassigned: whichever split
    plays test); a manifest without its env's roles: the harness's default roles'."""
    test = (manifest.env.roles if manifest.env and manifest.env.roles else Env.default_roles).get("test")
    listed = [test] if isinstance(test, str) else list(test or [])
    return listed[0] if listed else None


def _measures(run: Run, read: RunRecords) -> dict[str, float | None]:
    records, items, stored = read.episodes, read.items, read.metrics
    assert stored is not None  # read complete
    sr = stored.success_rate
    test = test_split(read.manifest)
    out: dict[str, float | None] = {
        "final_sr": _last(sr.get("train")),
        "csr": _last(metrics.cumulative_success_rates(records, "train")),
        "test_sr": _last(sr.get(test)),
        "test_expected_sr": _mean_p(records, test),
        "final_expected_sr": _mean_p(records, "train"),
    }
    for name, value in stored.pass_at_k.items():
        if name.startswith(f"{test}@"):
            out["test_pass_at_k"] = value
    # A memory is tested when a training episode injects it (only then does its Q change), so
    # the claim counts training injections, not the any-phase share of metrics.json.
    spread = metrics.injection_spread(records, items, ("train",))
    out["never_retrieved"], out["gini"] = spread["never_retrieved"], spread["gini"]
    lock = metrics.epoch1_lock_in(records, items)
    out["lock_in"], out["lock_in_bank"] = lock["share"], lock["bank_share"]
    out["lock_in_excess"] = lock["share"] - lock["bank_share"] if lock["share"] is not None else None
    if run.kind == "drift":
        out |= _drift_measures(records, DriftSettings(**run.protocol["drift"]))
    if "synthetic" in run.labels:
        good = metrics.good_memories_never_retrieved(records, items)
        harmful = metrics.harmful_in_last_epoch(records, items)
        out["good_never_retrieved"], out["good_injection_share"] = good["never_retrieved"], good["injection_share"]
        out["harmful_retrieval_share"], out["harmful_retrieved_share"], out["harmful_bank_share"] = harmful["retrieval_share"], harmful["retrieved_share"], harmful["bank_share"]
        out["early_amplification"] = metrics.early_amplification(records, items)
        out["spearman_q_utility"] = (stored.synthetic or {}).get("spearman_q_true_utility")
        k = int(run.method.get("k_select") or run.method.get("top_k") or 3)
        regret = metrics.oracle_regret(records, _env(json.dumps(run.config["env"], sort_keys=True)), k)
        out["regret_mean"], out["regret_last_epoch"] = regret["mean"], _last(regret["by_epoch"])
    return out


def _drift_measures(records: list[EpisodeRecord], setting: DriftSettings) -> dict[str, float | None]:
    """The drift block's numbers (memrl_bench.drift) and the injected tokens per test prompt (as the report's gain against cost counts them)."""
    block = drift.metrics(records, setting)
    by_window = block.get("stale_share_by_window") or [None]
    test = [r for r in records if r.phase == "test"]
    recovery = block["tasks_until_recovery"]
    return {
        "drift_dip": block["sr_dip"],
        "drift_recovery": recovery,
        "drift_never_recovered": float(recovery is None) if block["sr_dip"] is not None else None,
        "drift_post_sr": block["post_sr"],
        "drift_sr_change": block["sr_change"],
        "drift_post_expected_sr": block["post_expected_sr"],
        "drift_stale_share": block.get("stale_share"),
        "drift_stale_last_window": by_window[-1],
        "drift_last_stale_episode": block.get("last_stale_episode"),
        "injected_tokens_test": float(np.mean([-(-r.injected_chars // ESTIMATE_BYTES_PER_TOKEN) for r in test])) if test else None,
    }


def load_runs(results_dir: Path, workers: int | None = None, warn: Warn | None = warn_on_stderr) -> list[Run]:
    """Every complete run below results_dir, once per config (presets may repeat a run).

    Folders are read by `workers` processes (default: one per CPU, at most 4). Each
    folder left out (incomplete, unreadable) is one call of `warn`.
    """
    folders = [m.parent for m in sorted(Path(results_dir).rglob(MANIFEST))]
    workers = workers or min(4, os.cpu_count() or 1)
    if workers > 1 and len(folders) > 8:
        # forked by this thread, which waits for them here: killed with it (a SIGKILLed report left them hung)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=interrupts.die_with_parent, initargs=(os.getpid(),)) as pool:
            loaded = list(pool.map(_load_or_why, folders, chunksize=8))
    else:
        loaded = [_load_or_why(f) for f in folders]
    left_out = [f"skipped {why}" for why in loaded if isinstance(why, str)]
    for line in left_out if warn is not None else ():
        warn(line)
    runs: dict[str, Run] = {}
    for run in loaded:
        if isinstance(run, Run):
            runs.setdefault(run.identity, run)
    return list(runs.values())


# ---- selecting and comparing runs -------------------------------------------------------


@dataclass
class Study:
    """The runs of one world, by evaluation kind, outcome temperature and arm."""

    runs: list[Run]

    def arms(self, kind: str, temperature: float) -> dict[str, list[Run]]:
        """Arm key -> its runs, in the order of _arm_order."""
        out: dict[str, list[Run]] = defaultdict(list)
        for r in self.runs:
            if r.kind == kind and r.temperature == temperature:
                out[r.arm_key].append(r)
        return dict(sorted(out.items(), key=lambda kv: _arm_order(kv[1][0].method)))

    def temperatures(self) -> list[float]:
        return sorted({r.temperature for r in self.runs})


def per_order(runs: list[Run], measure: str) -> dict[int, float]:
    """Task order -> the measure averaged over the method seeds run on it."""
    by: dict[int, list[float]] = defaultdict(list)
    for r in runs:
        if r.measures.get(measure) is not None:
            by[r.order_seed].append(r.measures[measure])
    return {o: float(np.mean(v)) for o, v in sorted(by.items())}


def summary(runs: list[Run], measure: str) -> Interval:
    return t_interval(per_order(runs, measure).values())


def paired(a: list[Run], b: list[Run], measure: str) -> Interval:
    """a - b, paired on the task order."""
    x, y = per_order(a, measure), per_order(b, measure)
    return t_interval(x[o] - y[o] for o in x if o in y)


def task_differences(a: list[Run], b: list[Run]) -> list[float]:
    """a - b in held-out test success per test task, each arm's success on the task averaged
    over its runs (task orders, method seeds): the pairs of a comparison on new tasks."""

    def per_task(runs: list[Run]) -> dict[str, float]:
        by: dict[str, list[float]] = defaultdict(list)
        for r in runs:
            for task, success in r.test_outcomes.items():
                by[task].append(success)
        return {task: float(np.mean(v)) for task, v in by.items()}

    x, y = per_task(a), per_task(b)
    return [x[task] - y[task] for task in sorted(x) if task in y]


def by_method_seed(runs: list[Run], measure: str) -> list[list[float]]:
    """Per method seed, the measure across task orders (in order-seed order)."""
    groups: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for r in runs:
        if r.measures.get(measure) is not None:
            groups[r.method_seed].append((r.order_seed, r.measures[measure]))
    return [[v for _, v in sorted(g)] for _, g in sorted(groups.items())]


def order_spread(runs: list[Run], measure: str) -> dict[str, float | None]:
    """Spread of a measure across task orders with the method seed fixed: the std and the
    range per method seed, averaged over method seeds."""
    groups = [g for g in by_method_seed(runs, measure) if len(g) > 1]
    if not groups:
        return {"std": None, "range": None, "orders": 0}
    return {"std": float(np.mean([np.std(g, ddof=1) for g in groups])), "range": float(np.mean([max(g) - min(g) for g in groups])), "orders": max(len(g) for g in groups)}


def retrieval_agreement(runs: list[Run]) -> dict[int, float]:
    """Per task order: the share of training episodes whose injected memories are the same
    in every method seed's run (episodes matched by id)."""
    out = {}
    by_order: dict[int, list[Run]] = defaultdict(list)
    for r in runs:
        by_order[r.order_seed].append(r)
    for order, group in sorted(by_order.items()):
        if len(group) < 2:
            continue
        ids = set.intersection(*(set(r.train_choices) for r in group))
        same = sum(len({r.train_choices[i] for r in group}) == 1 for i in ids)
        out[order] = same / len(ids) if ids else float("nan")
    return out


def retrieval_overlap(runs: list[Run]) -> dict[int, float]:
    """Per task order: mean Jaccard, against every other task order with the same method
    seed, of the memories injected for the same test task (tasks given no memory in
    either run are left out). Memories are compared by their source task
    (source_task_id), because item ids name episodes, and episode ids change with the order."""
    out: dict[int, list[float]] = defaultdict(list)
    for a in runs:
        for b in runs:
            if a.method_seed == b.method_seed and a.order_seed != b.order_seed:
                tasks = sorted(t for t in set(a.test_sources) & set(b.test_sources) if a.test_sources[t] or b.test_sources[t])  # sorted: a float sum in a fixed order
                if tasks:
                    out[a.order_seed].append(float(np.mean([metrics.jaccard(a.test_sources[t], b.test_sources[t]) for t in tasks])))
    return {o: float(np.mean(v)) for o, v in sorted(out.items())}


def order_counterfactual(runs: list[Run]) -> dict[str, dict[int, dict[int, float]]]:
    """Divergence from the reference run when only one epoch's task order changes.

    Runs are kind "order" (protocol.epoch_order_seeds differs from task_order_seed in one
    epoch) plus their reference (the same config without epoch_order_seeds). Returns
    measure -> varied epoch -> that epoch's order seed -> divergence, for
    test_expected_sr (|difference|), final_sr (|difference|), bank (1 - Jaccard of the
    source tasks of the top-decile memories by Q, or by injections without Q) and
    retrieval (1 - mean Jaccard of the source tasks injected per test task).
    """
    reference = {(r.world_key, r.arm_key, r.order_seed, r.method_seed): r for r in runs if not r.protocol.get("epoch_order_seeds")}
    out: dict[str, dict[int, dict[int, float]]] = {m: defaultdict(dict) for m in ("test_expected_sr", "final_sr", "bank", "retrieval")}
    for r in runs:
        ref = reference.get((r.world_key, r.arm_key, r.order_seed, r.method_seed))
        if r.varied_epoch is None or ref is None:
            continue
        epoch, seed = r.varied_epoch
        for m in ("test_expected_sr", "final_sr"):
            if r.measures.get(m) is not None and ref.measures.get(m) is not None:
                out[m][epoch][seed] = abs(r.measures[m] - ref.measures[m])
        out["bank"][epoch][seed] = 1 - metrics.jaccard(r.top_sources, ref.top_sources)
        tasks = sorted(set(r.test_sources) & set(ref.test_sources))  # a float sum in a fixed order, whatever the hash seed
        if tasks:
            out["retrieval"][epoch][seed] = 1 - float(np.mean([metrics.jaccard(r.test_sources[t], ref.test_sources[t]) for t in tasks]))
    return {m: dict(v) for m, v in out.items()}


# ---- the findings -------------------------------------------------------------------------


# The presets (memrl_bench/conf/experiment/) whose runs a claim needs; `+experiment=critique_study` runs them all.
MEASURED_BY = {
    "determinism": ("critique",),
    "epoch1_lock_in": ("critique",),
    "epoch1_counterfactual": ("critique_order",),
    "never_tested": ("critique",),
    "good_amplified": ("critique",),
    "bad_locked_in": ("critique", "critique_epsilon"),
    "regret": ("critique", "critique_epsilon"),
    "order_dependence": ("critique", "critique_epsilon"),
    "memory_helps": ("critique",),
    "runtime_learning": ("critique", "critique_fairness"),
    "weak_baselines": ("critique_fairness", "critique_passk"),
    "drift_stale_kept": ("drift_methods",),
    "drift_adaptation": ("drift_methods",),
    "drift_gain_per_token": ("drift_methods", "drift_simplemem"),
}
# The real-model study's presets (critique_real*.yaml) per claim it can measure; the claims that need
# the synthetic env's ground truth (which memories are harmful, true utilities, an oracle) are not here.
REAL_MEASURED_BY = {
    "epoch1_lock_in": ("critique_real_methods",),
    "never_tested": ("critique_real_methods",),
    "order_dependence": ("critique_real_methods", "critique_real_explore", "critique_real_bandit"),
    "memory_helps": ("critique_real_methods",),
    "runtime_learning": ("critique_real_methods", "critique_real_runtime"),
    "weak_baselines": ("critique_real_runtime",),
}
GROUND_TRUTH_CLAIMS = ("good_amplified", "bad_locked_in", "regret")
PROMPT_MEMORY = ("mem0", "expel", "memp", "simplemem")  # methods that write their memory as prompt text (the critique's "prompt-based memory")
_SIDES = {1: "above", -1: "below", 0: "spans"}


def _row(label: str, interval: Interval, direction: int | None = None, null: float = 0.0, primary: bool = False) -> dict | None:
    """One line of a finding's table; None (left out) when nothing was measured.

    One rule for every verdict (memrl_bench.stats.verdict): the row that decides the claim
    carries it, and the claim's headline is that row's; the other rows with a direction
    say only where their interval lies against the null ("above 0.5"), so that no row
    reads as a second verdict on the claim.
    """
    if interval.mean is None:
        return None
    row = {"label": label, "mean": interval.mean, "low": interval.low, "high": interval.high, "n": interval.n, "text": interval.text()}
    if primary:
        row["primary"] = True
        row["verdict"] = verdict(interval, direction or 1, null)
    elif direction is not None and side(interval, null) is not None:
        row["side"] = f"{_SIDES[side(interval, null)]} {null:g}"
    return row


def _finding(key: str, claim: str, measurement: str, rows: list[dict | None]) -> dict:
    kept = [r for r in rows if r is not None]
    primary = next((r for r in kept if r.get("primary")), None)
    study = "drift_study" if key.startswith("drift") else "critique_study"
    return {"id": key, "claim": claim, "measurement": measurement, "rows": kept, "verdict": primary["verdict"] if primary else NOT_MEASURED, "presets": MEASURED_BY[key], "study": study}


def _temp(t: float) -> str:
    return f"outcome T={t:g}"


def _exploration(arms: dict[str, list[Run]]) -> list[list[Run]]:
    """Arms of MemRL that explore (epsilon > 0, softmax, UCB, Thompson), in a stable order."""
    return [runs for runs in arms.values() if _arm_rank(runs[0].method) == 1]


def _reference_explorer(explorers: list[list[Run]]) -> list[Run]:
    """The exploration arm each claim is decided against: epsilon = 0.1 when run, else the first."""
    return next((runs for runs in explorers if runs[0].method.get("selection", "greedy") == "greedy" and runs[0].method.get("epsilon") == 0.1), explorers[0] if explorers else [])


def findings(results_dir: Path, warn: Warn | None = warn_on_stderr, runs: list[Run] | None = None) -> list[dict]:
    """The findings on the critique's claims from the runs below results_dir (see the module
    doc); `runs`: those runs when the caller has loaded them already (load_runs)."""
    if not Path(results_dir).is_dir():
        raise FileNotFoundError(f"findings: results folder {results_dir} does not exist")
    if runs is None:
        runs = load_runs(Path(results_dir), warn=warn)
    if not runs:
        return []
    worlds: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        if r.kind != "transfer":  # a transfer run tests another run's memory: the report's transfer matrix shows it
            worlds[_key({**json.loads(r.world_key), "env": without(r.config["env"], ("outcome_temperature",))})].append(r)
    if not worlds:
        return []
    study = Study(max(worlds.values(), key=len))  # one world per section; the largest
    label = "SYNTHETIC (simulation, not LLM results)" if all("synthetic" in r.labels for r in study.runs) else _real_label(study.runs[0].config)
    out = [
        _determinism(study),
        _lock_in(study),
        _counterfactual(study),
        _never_tested(study),
        _amplified(study),
        _harmful(study),
        _regret(study),
        _order_spread(study),
        _memory_helps(study),
        _runtime_learning(study),
        _weak_baselines(study),
        *_drift_findings(runs),
    ]
    for f in out:
        f["label"] = label
        if not label.startswith("SYNTHETIC") and not f["id"].startswith("drift"):
            f["presets"], f["study"] = REAL_MEASURED_BY.get(f["id"], ()), "critique_real"
            for r in f["rows"]:  # an LLM env has no outcome temperature (the model's is in the label's config)
                r["label"] = r["label"].replace(f", {_temp(0.0)}", "").replace(f" {_temp(0.0)}", "")
    return out


def _real_label(config: dict) -> str:
    """What a real-env section's numbers are: the model and the env (with the subjects or game it was restricted to)."""
    env, llm = config["env"], config.get("llm") or {}
    setting = env.get("subjects") or env.get("game") or env.get("task_types")
    which = f" ({', '.join(setting) if isinstance(setting, list) else setting})" if setting else ""
    return f"REAL MODEL {llm.get('model') or llm.get('name')} on env {env.get('name')}{which}"


def _drift_findings(runs: list[Run]) -> list[dict]:
    """The drift study's three claims, on its largest world of drift runs."""
    worlds: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        if r.kind == "drift":
            worlds[r.world_key].append(r)
    study = Study(max(worlds.values(), key=len) if worlds else [])
    return [_stale_kept(study), _drift_adaptation(study), _gain_per_token(study)]


def _stale_kept(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        for runs in study.arms("drift", t).values():
            if runs[0].measures.get("drift_stale_share") is None:
                continue
            primary = t == 0 and is_greedy_epsilon_zero(runs[0].method)
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: stale share of injections, last window after the change", summary(runs, "drift_stale_last_window"), +1, primary=primary))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: stale share of injections, all training after the change", summary(runs, "drift_stale_share")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: last training episode after the change that injected a stale memory", summary(runs, "drift_last_stale_episode")))
    return _finding(
        "drift_stale_kept",
        "Stale memories are kept: after the environment changes, memories that became wrong keep being injected.",
        "Stale (synthetic ground truth): written before the change about a task type whose lessons flipped, and helpful before it. Per method, the stale share of the memories injected in the last window of training episodes after the change, and over all of them; with the position (0 = the first episode after the change) of the last episode that injected one. Verdict for memrl ε=0 at outcome temperature 0: supported if its last-window share lies above 0.",
        rows,
    )


def _drift_adaptation(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        arms = study.arms("drift", t)
        for runs in arms.values():
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: SR after the change (training)", summary(runs, "drift_post_sr")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: SR after the change - SR of the epoch before it", summary(runs, "drift_sr_change")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: expected SR after the change (mean P(success))", summary(runs, "drift_post_expected_sr")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: SR dip (window before - lowest window after)", summary(runs, "drift_dip")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: tasks until recovery (runs that recovered)", summary(runs, "drift_recovery")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: share of runs never recovered", summary(runs, "drift_never_recovered")))
        greedy = next((runs for runs in arms.values() if is_greedy_epsilon_zero(runs[0].method)), None)
        for name in ("rag", "mem0"):
            other = next((runs for runs in arms.values() if runs[0].method.get("name") == name), None)
            if greedy and other:
                rows.append(_row(f"memrl ε=0 - {name}, {_temp(t)}: SR after the change - SR of the epoch before it", paired(greedy, other, "drift_sr_change"), +1, primary=t == 0 and name == "rag"))
                rows.append(_row(f"memrl ε=0 - {name}, {_temp(t)}: SR after the change", paired(greedy, other, "drift_post_sr"), +1))
                rows.append(_row(f"memrl ε=0 - {name}, {_temp(t)}: expected SR after the change", paired(greedy, other, "drift_post_expected_sr"), +1))
                rows.append(_row(f"memrl ε=0 - {name}, {_temp(t)}: tasks until recovery", paired(greedy, other, "drift_recovery"), -1))
    return _finding(
        "drift_adaptation",
        "MemRL adapts to drift faster than rag / mem0.",
        "Training SR over every episode after the change minus the SR of the training epoch before it (what the change cost, net of each method's level), with the SR after the change, its expected value, the SR dip and the tasks until the SR is back within protocol.drift.tolerance of the window before the change (memrl_bench/protocols/drift.py); memrl ε=0 minus rag and minus mem0 (where run), paired on the task order. Verdict on memrl ε=0 - rag of the SR change, outcome temperature 0.",
        rows,
    )


def _gain_per_1k_tokens(runs: list[Run], none: list[Run]) -> dict[int, float]:
    """Task order -> (test SR - none's test SR) per 1k injected tokens per test prompt, as the report's gain against cost divides them."""
    sr, base, tokens = per_order(runs, "test_sr"), per_order(none, "test_sr"), per_order(runs, "injected_tokens_test")
    return {o: (sr[o] - base[o]) / (tokens[o] / 1000) for o in sr if o in base and tokens.get(o)}


def _gain_per_token(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        arms = study.arms("drift", t)
        none = next((runs for runs in arms.values() if runs[0].method.get("name") == "none"), None)
        greedy = next((runs for runs in arms.values() if is_greedy_epsilon_zero(runs[0].method)), None)
        if not none:
            continue
        ratios = {}
        for arm, runs in arms.items():
            if runs is none:
                continue
            ratios[arm] = _gain_per_1k_tokens(runs, none)
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: test SR gain over none", paired(runs, none, "test_sr")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: injected tokens per test prompt", summary(runs, "injected_tokens_test")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: test SR gain over none per 1k injected tokens", t_interval(ratios[arm].values())))
        prompt_based = [(arm, runs) for arm, runs in arms.items() if greedy and runs[0].method.get("name") in PROMPT_MEMORY]
        for i, (arm, runs) in enumerate(prompt_based):  # the first (by name) decides
            mine, memrl = ratios[arm], ratios[_key(greedy[0].method)]
            rows.append(_row(f"{runs[0].arm} - memrl ε=0, {_temp(t)}: gain per 1k injected tokens", t_interval(mine[o] - memrl[o] for o in mine if o in memrl), +1, primary=t == 0 and i == 0))
    return _finding(
        "drift_gain_per_token",
        "Prompt-based memory gives more gain per token than MemRL.",
        "Per task order, the held-out test SR gain over none divided by the injected tokens per test prompt (UTF-8 bytes / 3, as the report's gain against cost), in thousands; each prompt-based method (mem0, expel, memp, simplemem) minus memrl ε=0, paired on the task order. On the synthetic world a memory's text is a stand-in (its effect is the simulation's), so tokens measure how much each method injects, not what a model reads. Verdict at outcome temperature 0.",
        rows,
    )


def _greedy_minus_explorers(greedy: list[Run], explorers: list[list[Run]], t: float, measure: str, name: str) -> list[dict | None]:
    """memrl ε=0 minus each exploring arm, paired on the task order; ε=0.1 at T=0 decides."""
    reference = _reference_explorer(explorers)
    return [_row(f"memrl ε=0 - {runs[0].arm}, {_temp(t)}: {name}", paired(greedy, runs, measure), +1, primary=t == 0 and runs is reference) for runs in explorers]


def _greedy_and_explorers(study: Study, kind: str, t: float) -> tuple[list[Run], list[list[Run]]]:
    arms = study.arms(kind, t)
    greedy = next((runs for runs in arms.values() if is_greedy_epsilon_zero(runs[0].method)), [])
    return greedy, _exploration(arms)


def _determinism(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        agreement = retrieval_agreement(greedy)
        rows.append(_row(f"memrl ε=0, {_temp(t)}: share identical", t_interval(agreement.values()), +1, null=1 - 1e-9, primary=t == 0))
        for runs in explorers:
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: share identical", t_interval(retrieval_agreement(runs).values())))
    return _finding(
        "determinism",
        "With ε = 0 and temperature 0, MemRL's retrieval is greedy and deterministic.",
        "Share of training episodes whose injected memories are identical in every method seed's run of the same task order (1 = the method seed changes nothing); per task order, then the t-interval over task orders. Verdict: supported if the interval lies at 1.",
        rows,
    )


def _lock_in(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        rows.append(_row(f"memrl ε=0, {_temp(t)}: epoch-1 share of injections in epochs ≥ 2", summary(greedy, "lock_in")))
        rows.append(_row(f"memrl ε=0, {_temp(t)}: epoch-1 share of the bank at those moments", summary(greedy, "lock_in_bank")))
        rows.append(_row(f"memrl ε=0, {_temp(t)}: excess (injection share - bank share)", summary(greedy, "lock_in_excess"), +1, primary=t == 0))
        for runs in explorers + [r for r in study.arms("held_out", t).values() if _arm_rank(r[0].method) == 2]:
            if runs[0].measures.get("lock_in") is not None:
                rows.append(_row(f"{runs[0].arm}, {_temp(t)}: excess", summary(runs, "lock_in_excess"), +1))
    return _finding(
        "epoch1_lock_in",
        "Epoch 1 builds the memory bank; later epochs only refine what epoch 1 chose.",
        "Of the memories injected in training epochs ≥ 2, the share written in epoch 1, against the share epoch-1 memories had of the bank at the same moments (what a retriever blind to a memory's age would inject). Verdict on the excess for memrl ε=0 at outcome temperature 0.",
        rows,
    )


def _counterfactual(study: Study) -> dict:
    rows = []
    names = {"bank": "bank divergence (1 - Jaccard of top-decile memories' source tasks)", "test_expected_sr": "absolute Δ expected test SR", "final_sr": "absolute Δ final training SR", "retrieval": "test retrieval divergence (1 - Jaccard of source tasks)"}
    for t in study.temperatures():
        arms: dict[str, list[Run]] = defaultdict(list)
        for r in study.runs:
            if r.temperature == t and r.kind in ("order", "held_out"):
                arms[r.arm_key].append(r)
        for runs in arms.values():
            divergence = order_counterfactual(runs)
            if not divergence["bank"].get(1):
                continue
            arm = runs[0].arm
            for measure, name in names.items():
                by_epoch = divergence[measure]
                first = by_epoch.get(1, {})
                rows.append(_row(f"{arm}, {_temp(t)}: {name}, epoch 1 varied", t_interval(first.values())))
                for epoch in sorted(e for e in by_epoch if e > 1):
                    later = by_epoch[epoch]
                    diff = t_interval(first[s] - later[s] for s in first if s in later)
                    rows.append(_row(f"{arm}, {_temp(t)}: {name}, epoch {epoch} varied", t_interval(later.values())))
                    is_primary = measure == "bank" and t == 0 and is_greedy_epsilon_zero(runs[0].method) and epoch == 2
                    rows.append(_row(f"{arm}, {_temp(t)}: {name}, epoch 1 - epoch {epoch}", diff, +1, primary=is_primary))
    return _finding(
        "epoch1_counterfactual",
        "The task order of epoch 1 has a disproportionate influence on where learning ends up.",
        "Runs that differ from a reference run only in epoch 1's task order (protocol.epoch_order_seeds = [s]) against runs that differ only in a later epoch's order ([0, s], [0, 0, s]), for the same seeds s: divergence from the reference of the final memory bank, of test retrieval and of SR; paired on s. Verdict on the bank divergence, epoch 1 - epoch 2, memrl ε=0 at outcome temperature 0.",
        rows,
    )


def _never_tested(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        for runs in study.arms("held_out", t).values():
            if runs[0].measures.get("never_retrieved") is not None:
                primary = t == 0 and is_greedy_epsilon_zero(runs[0].method)
                rows.append(_row(f"{runs[0].arm}, {_temp(t)}: never injected", summary(runs, "never_retrieved"), +1, null=0.5, primary=primary))
                rows.append(_row(f"{runs[0].arm}, {_temp(t)}: Gini of injection counts", summary(runs, "gini")))
    return _finding(
        "never_tested",
        "Most memories are never tested.",
        "Share of the final memories never injected in training (a memory's Q changes only when it is injected), against one half. Verdict for memrl ε=0 at outcome temperature 0.",
        rows,
    )


def _amplified(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        for runs in study.arms("held_out", t).values():
            if runs[0].measures.get("early_amplification") is None:
                continue
            primary = t == 0 and is_greedy_epsilon_zero(runs[0].method)
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: Spearman(true utility, reuse in epochs ≥ 2) of epoch-1 memories", summary(runs, "early_amplification"), +1, primary=primary))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: top-quartile-utility memories never injected", summary(runs, "good_never_retrieved")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: their share of injections (0.25 = no preference)", summary(runs, "good_injection_share")))
            if runs[0].measures.get("spearman_q_utility") is not None:
                rows.append(_row(f"{runs[0].arm}, {_temp(t)}: Spearman(final Q, true utility)", summary(runs, "spearman_q_utility")))
    return _finding(
        "good_amplified",
        "Good early memories are amplified.",
        "Over the memories written in epoch 1, the Spearman correlation of their true utility (synthetic ground truth) with how often epochs ≥ 2 inject them; with the share of the most useful memories (top quartile) never injected. Verdict for memrl ε=0 at outcome temperature 0.",
        rows,
    )


def _harmful(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        if not greedy or greedy[0].measures.get("harmful_retrieval_share") is None:
            continue
        rows.append(_row(f"memrl ε=0, {_temp(t)}: harmful share of last-epoch injections", summary(greedy, "harmful_retrieval_share")))
        rows.append(_row(f"memrl ε=0, {_temp(t)}: harmful share of the bank before the last epoch", summary(greedy, "harmful_bank_share")))
        rows.append(_row(f"memrl ε=0, {_temp(t)}: share of harmful memories injected in the last epoch", summary(greedy, "harmful_retrieved_share")))
        others = [runs for runs in study.arms("held_out", t).values() if _arm_rank(runs[0].method) == 2]
        rows += [_row(f"{runs[0].arm}, {_temp(t)}: harmful share of last-epoch injections", summary(runs, "harmful_retrieval_share")) for runs in explorers + others]
        rows += _greedy_minus_explorers(greedy, explorers, t, "harmful_retrieval_share", "harmful share of last-epoch injections")
    return _finding(
        "bad_locked_in",
        "Bad early memories are locked in by ε = 0 (greedy) retrieval.",
        "Harmful memories (synthetic ground truth; env.harmful_early_share makes half of epoch 1's lessons harmful) as a share of the memories injected in the last training epoch: memrl ε=0 minus each exploring variant, paired on the task order. Verdict on ε=0 - ε=0.1 at outcome temperature 0.",
        rows,
    )


def _regret(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        if not greedy or greedy[0].measures.get("regret_mean") is None:
            continue
        for runs in study.arms("held_out", t).values():
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: regret per episode, all epochs", summary(runs, "regret_mean")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: regret per episode, last epoch", summary(runs, "regret_last_epoch")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: held-out test SR", summary(runs, "test_sr")))
            rows.append(_row(f"{runs[0].arm}, {_temp(t)}: expected held-out test SR (mean P(success))", summary(runs, "test_expected_sr")))
        rows += _greedy_minus_explorers(greedy, explorers, t, "regret_last_epoch", "last-epoch regret")
    return _finding(
        "regret",
        "Greedy retrieval leaves value that exploration would find (the cost of the lock-in).",
        "Regret per training episode against an oracle that knows every memory's true effect and injects the k best of the memories stored before the episode's batch: P(success | oracle's set) - P(success | injected set); with each arm's held-out test SR. Verdict on last-epoch regret, ε=0 - ε=0.1, outcome temperature 0.",
        rows,
    )


def _order_spread(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        greedy, explorers = _greedy_and_explorers(study, "held_out", t)
        reference = _reference_explorer(explorers)
        for runs in study.arms("held_out", t).values():
            for measure, name in (("test_expected_sr", "expected test SR"), ("test_sr", "test SR"), ("final_sr", "final training SR")):
                spread = order_spread(runs, measure)
                if spread["std"] is not None:
                    rows.append({"label": f"{runs[0].arm}, {_temp(t)}: {name} across task orders: std / range", "text": f"{spread['std']:.3f} / {spread['range']:.3f} ({spread['orders']} orders)", "mean": spread["std"]})
            overlap = retrieval_overlap(runs)
            if overlap:
                rows.append(_row(f"{runs[0].arm}, {_temp(t)}: Jaccard of test retrievals across task orders", t_interval(overlap.values())))
        # An LLM env has no P(success) to take the expectation of: its test SR is the measure there.
        measure, name = ("test_expected_sr", "expected test SR") if any(r.measures.get("test_expected_sr") is not None for r in greedy) else ("test_sr", "test SR")
        for runs in explorers:
            ratio = variance_ratio(by_method_seed(greedy, measure), by_method_seed(runs, measure))
            rows.append(_row(f"variance of {name} across orders, memrl ε=0 / {runs[0].arm}, {_temp(t)} (F-interval)", ratio, +1, null=1.0, primary=t == 0 and runs is reference))
    return _finding(
        "order_dependence",
        "Where greedy MemRL ends up depends more on the task order than with exploration.",
        "Spread across task orders (method seed fixed) of the expected test SR (mean P(success) on the in-distribution test split: the memory's effect without outcome noise), of test SR and of final training SR; the overlap of test retrievals across orders; and the ratio of across-order variances (of the expected test SR; of the test SR in an env without P(success)), ε=0 over each exploring variant, with its F-interval. Verdict on ε=0 / ε=0.1 at outcome temperature 0.",
        rows,
    )


def _memory_helps(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        held = study.arms("held_out", t)
        none = next((runs for runs in held.values() if runs[0].method.get("name") == "none"), None)
        for runs in held.values() if none else ():
            if runs is none:
                continue
            name, differences = runs[0].arm, task_differences(runs, none)
            rows.append(_row(f"{name} - none, {_temp(t)}: held-out test SR, paired on the task order", paired(runs, none, "test_sr"), +1))
            rows.append(_row(f"{name} - none, {_temp(t)}: held-out test success, paired on the test task", t_interval(differences), +1, primary=t == 0 and is_greedy_epsilon_zero(runs[0].method)))
            needed = n_for_half_width(differences, 0.10)
            if needed is not None:
                rows.append({"label": f"{name} - none, {_temp(t)}: test tasks a ±0.10 paired-by-task interval needs at this spread", "text": f"{needed} (here {len(differences)})", "mean": float(needed)})
    return _finding(
        "memory_helps",
        "A memory method solves more held-out tasks than the same agent without memory.",
        "Held-out test success of each memory method minus none's: paired on the task order (the replicate of every other claim), and paired on the test task (each task's success averaged over the task orders: the comparison on a new task of this distribution, with as many pairs as test tasks), with the number of test tasks a ±0.10 interval would need at the spread measured. Verdict for memrl ε=0, paired on the test task, at outcome temperature 0.",
        rows,
    )


def _runtime_learning(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        held = study.arms("held_out", t)
        learned = study.arms("runtime_learning", t)
        gaps: dict[str, dict[int, float]] = {}
        for arm, runs in learned.items():
            if arm not in held:
                continue
            name = runs[0].arm
            rl, ho = per_order(runs, "final_sr"), per_order(held[arm], "test_sr")
            gaps[arm] = {o: rl[o] - ho[o] for o in rl if o in ho}
            rows.append(_row(f"{name}, {_temp(t)}: runtime-learning SR (last epoch, the learned tasks)", t_interval(rl.values())))
            rows.append(_row(f"{name}, {_temp(t)}: runtime-learning CSR", summary(runs, "csr")))
            rows.append(_row(f"{name}, {_temp(t)}: held-out test SR", t_interval(ho.values())))
            rows.append(_row(f"{name}, {_temp(t)}: gap (runtime-learning SR - held-out test SR)", t_interval(gaps[arm].values())))
        baseline = next((g for arm, g in gaps.items() if learned[arm][0].method.get("name") == "none"), None)
        for arm, gap in gaps.items():
            method = learned[arm][0].method
            if baseline is not None and method.get("name") != "none":
                diff = t_interval(gap[o] - baseline[o] for o in gap if o in baseline)
                rows.append(_row(f"{learned[arm][0].arm} gap - none gap, {_temp(t)}", diff, +1, primary=t == 0 and is_greedy_epsilon_zero(method)))
    return _finding(
        "runtime_learning",
        "Evaluations that learn from the tasks they score (runtime learning) overstate what a memory method does on new tasks.",
        "Per method, the last-epoch SR on the training tasks under protocol=runtime_learning against the test SR on held-out tasks of the same distribution under the fair protocol, paired on the task order; the gap of each memory method minus the no-memory gap (which is only the difference between the task sets). Verdict for memrl ε=0 at outcome temperature 0.",
        rows,
    )


def _weak_baselines(study: Study) -> dict:
    rows = []
    for t in study.temperatures():
        learned = study.arms("runtime_learning", t)
        none = next((runs for runs in learned.values() if runs[0].method.get("name") == "none"), None)
        greedy = next((runs for runs in learned.values() if is_greedy_epsilon_zero(runs[0].method)), None)
        if none and greedy:
            epochs = none[0].protocol.get("epochs")
            rows.append(_row(f"none, {_temp(t)}: SR per attempt (pass@1)", summary(none, "final_sr")))
            rows.append(_row(f"none, {_temp(t)}: pass@{epochs} (CSR over {epochs} epochs without memory)", summary(none, "csr")))
            rows.append(_row(f"memrl ε=0, {_temp(t)}: CSR over {epochs} epochs", summary(greedy, "csr")))
            rows.append(_row(f"none pass@{epochs} - memrl ε=0 CSR, {_temp(t)}", paired(none, greedy, "csr"), +1, primary=t == max(study.temperatures())))
        held = study.arms("held_out", t)
        for runs in held.values():
            if runs[0].method.get("name") == "rag":
                greedy_held = next((g for g in held.values() if is_greedy_epsilon_zero(g[0].method)), [])
                rows.append(_row(f"memrl ε=0 - rag, {_temp(t)}: held-out test SR", paired(greedy_held, runs, "test_sr")))
                rows.append(_row(f"memrl ε=0 - rag, {_temp(t)}: expected test SR", paired(greedy_held, runs, "test_expected_sr")))
    for kind in sorted({r.kind for r in study.runs if r.kind.startswith("held_out@")}):
        k = kind.split("@")[1]
        for t in study.temperatures():
            for runs in study.arms(kind, t).values():
                rows.append(_row(f"{runs[0].arm}, {_temp(t)}: test pass@{k}", summary(runs, "test_pass_at_k")))
            none = next((runs for runs in study.arms(kind, t).values() if runs[0].method.get("name") == "none"), None)
            greedy = next((runs for runs in study.arms("runtime_learning", t).values() if is_greedy_epsilon_zero(runs[0].method)), None)
            if none and greedy:
                x, y = per_order(none, "test_pass_at_k"), per_order(greedy, "csr")
                rows.append(_row(f"none test pass@{k} - memrl ε=0 runtime-learning CSR, {_temp(t)}", t_interval(x[o] - y[o] for o in x if o in y)))
    return _finding(
        "weak_baselines",
        "A no-memory agent scored once is a weak baseline: given as many attempts as MemRL has epochs, it matches MemRL's cumulative success rate.",
        "Under runtime learning, the no-memory agent's pass@E (its CSR over E epochs, E independent attempts when the outcome is sampled, T > 0) minus MemRL ε=0's CSR over the same E epochs, paired on the task order; with the held-out comparison against RAG and the test pass@k of each method. Verdict at the sampled outcome temperature (at T = 0 a no-memory agent repeats itself, so its pass@E is its pass@1).",
        rows,
    )


# ---- rendering ------------------------------------------------------------------------------


def _how_to_measure(f: dict) -> str:
    if f["id"] in GROUND_TRUTH_CLAIMS and not f["label"].startswith("SYNTHETIC"):
        return "needs the synthetic env's ground truth (which memories are harmful, their true utility, an oracle); an LLM env has none"
    if not f["presets"]:
        return f"not measured by the presets of {f['study']}"
    presets = " and ".join(f["presets"])
    commands = "; ".join(f"memrl-bench -m +experiment={p}" for p in f["presets"])
    return f"needs the runs of the preset{'s' if len(f['presets']) > 1 else ''} {presets} ({commands}; or all presets: memrl-bench +experiment={f['study']})"


def _title_suffix(found: list[dict]) -> str:
    """" (synthetic)", or the model and env of a real-env section ("" with nothing found)."""
    if not found:
        return ""
    return " (synthetic)" if found[0]["label"].startswith("SYNTHETIC") else f" ({found[0]['label'].removeprefix('REAL MODEL ')})"


def _row_verdict(r: dict) -> str:
    return r.get("verdict") or (f"interval {r['side']}" if "side" in r else "")


def _shown(folder: Path) -> Path:
    """A folder as the reader would type it: relative to the working directory when below it
    (a shipped study's findings name results/..., not the machine it was rendered on)."""
    folder = Path(folder).resolve()
    return folder.relative_to(Path.cwd()) if folder.is_relative_to(Path.cwd()) else folder


def render_markdown(found: list[dict], results_dir: Path) -> str:
    """The section as Markdown: the claims this folder measures first, then one line per claim it does not."""
    # the model's name, the folder and the rows' arm names are the user's text (memrl_bench.markup)
    lines = [f"## {SECTION_TITLE}{markdown_text(_title_suffix(found))}", ""]
    if not found:
        return "\n".join(lines + [f"No complete runs under {markdown_text(results_dir)}."]) + "\n"
    measured = [f for f in found if f["verdict"] != NOT_MEASURED]
    lines += [f"All numbers: {markdown_text(found[0]['label'])}. Means with 95% t-intervals over task orders (n); runs: {markdown_text(_shown(results_dir))}. Each claim's verdict is that of the row marked (decides); other rows say where their interval lies.", ""]
    cell = markdown_text
    for i, f in enumerate(measured, 1):
        lines += [f"### {i}. {f['claim']}", "", f"**Verdict: {f['verdict']}.** {f['measurement']}", "", "| measurement | value | verdict |", "|---|---|---|"]
        lines += [f"| {cell(r['label'])}{' (decides)' if r.get('primary') else ''} | {cell(r['text'])} | {_row_verdict(r)} |" for r in f["rows"]]
        lines.append("")
    unmeasured = [f for f in found if f["verdict"] == NOT_MEASURED]
    if unmeasured:
        lines += ["### Not measured by the runs in this folder", ""]
        lines += [f"- {f['claim']} — {_how_to_measure(f)}." for f in unmeasured]
        lines.append("")
    return "\n".join(lines)


def render_html(found: list[dict], results_dir: Path) -> str:
    """The section as HTML (the report embeds it once): the claims measured first, then one line per claim not measured."""
    esc = html.escape
    parts = [f'<section id="findings"><h2>{esc(SECTION_TITLE)}</h2>']
    if not found:
        return parts[0] + f"<p>No complete runs under {esc(str(results_dir))}.</p></section>"
    measured = [f for f in found if f["verdict"] != NOT_MEASURED]
    parts.append(f"<p><strong>{esc(found[0]['label'])}.</strong> Means with 95% t-intervals over task orders (n). Each claim's verdict is that of the row marked <em>(decides)</em>; other rows say where their interval lies.</p>")
    for i, f in enumerate(measured, 1):
        parts.append(f'<h3>{i}. {esc(f["claim"])}</h3><p class="verdict {esc(f["verdict"].replace(" ", "-"))}"><strong>Verdict: {esc(f["verdict"])}.</strong> {esc(f["measurement"])}</p>')
        parts.append("<table><thead><tr><th>measurement</th><th>value</th><th>verdict</th></tr></thead><tbody>")
        for r in f["rows"]:
            label = esc(r["label"]) + (" <em>(decides)</em>" if r.get("primary") else "")
            parts.append(f"<tr><td>{label}</td><td>{esc(r['text'])}</td><td>{esc(_row_verdict(r))}</td></tr>")
        parts.append("</tbody></table>")
    unmeasured = [f for f in found if f["verdict"] == NOT_MEASURED]
    if unmeasured:
        parts.append('<h3 id="not-measured">Not measured by the runs in this folder</h3><ul>')
        parts += [f"<li>{esc(f['claim'])} — {esc(_how_to_measure(f))}.</li>" for f in unmeasured]
        parts.append("</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def main() -> None:
    """`python -m memrl_bench.findings RESULTS_DIR [--html FILE]`: print the section as markdown."""
    import argparse

    parser = argparse.ArgumentParser(description="Findings on the critique's claims, from the run folders below RESULTS_DIR.")
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--html", type=Path, help="also write the HTML section here")
    args = parser.parse_args()
    try:
        found = findings(args.results_dir)
    except FileNotFoundError as err:
        print(f"memrl-bench: error: {err}", file=sys.stderr)
        sys.exit(2)
    print(render_markdown(found, args.results_dir))
    if args.html:
        args.html.write_text(render_html(found, args.results_dir))


if __name__ == "__main__":
    main()


def comparison_table(sections: list[tuple[str, list[dict]]]) -> str:
    """One Markdown table of the claims' verdicts side by side, a column pair per section
    (title, findings): the deciding row's value and the verdict, or why it is not measured.
    The README's findings table is this table (scripts/readme_findings.py writes it)."""
    cell = lambda text: str(text).replace("|", "\\|")  # noqa: E731
    header = "| claim | " + " | ".join(f"{cell(title)} | verdict" for title, _ in sections) + " |"
    lines = [header, "|---|" + "---|---|" * len(sections)]
    by_id = [{f["id"]: f for f in found} for _, found in sections]
    order = [f for f in sections[0][1] if not f["id"].startswith("drift")] if sections else []
    for claim in order:
        cells = []
        for found in by_id:
            f = found.get(claim["id"])
            primary = next((r for r in f["rows"] if r.get("primary")), None) if f else None
            if primary is None:
                why = "not run" if f is None else ("needs ground truth (synthetic only)" if f["id"] in GROUND_TRUTH_CLAIMS and not f["label"].startswith("SYNTHETIC") else "not measured by these runs")
                cells += [why, "–"]
            else:
                cells += [f"{cell(primary['label'])}: {primary['text']}", primary["verdict"]]
        lines.append(f"| {cell(claim['claim'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
