"""The runs the findings read, and how claims select and compare them.

`load_runs(results_dir)` reads every complete run folder below `results_dir` with the typed
run reader (memrl_bench.core.records) into a `Run`: its config, labels and per-run measures
(memrl_bench.findings.measures); the episode log itself is not kept. A folder that is
incomplete or cannot be read is left out with one warning line naming it.

A `Study` is the runs of one world, by evaluation kind, outcome temperature and arm. The
replicate is the task order (task_order_seed): runs of one arm with several method seeds are
averaged per task order first (`per_order`), and arms are compared paired on the task order
(`paired`).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from memrl_bench import protocols
from memrl_bench.core import interrupts, metrics
from memrl_bench.core.config import NOT_RESULTS, KeyRole, canonical, keys_with, without
from memrl_bench.core.records import read_run
from memrl_bench.core.runfolder import CorruptRunFolderError, run_folders
from memrl_bench.core.schema import Episode
from memrl_bench.core.stats import Interval, t_interval
from memrl_bench.findings.measures import last_epoch_outcomes, run_measures, test_splits
from memrl_bench.protocols.retry import kind_suffix


def config_key(value: Any) -> str:
    """A config (or part of one) as one comparable string, numbers compared as numbers."""
    return json.dumps(canonical(value), sort_keys=True, default=str)


_VARIANT_LABELS = {("dynamic_cheatsheet", "variant"): {"cumulative": "DC-Cu", "retrieval_synthesis": "DC-RS"}}


def arm_label(method: dict, writer: str | None = None) -> str:
    """A short name of a method configuration: MemRL by its selection rule, others by name; then what tells a family's
    variants apart (step-level retrieval, skills with Q, a cheatsheet's variant) and the writer model when one is set
    (memory_llm). Arms without these keys keep the names they always had."""
    name = str(method.get("name"))
    label = name if name != "memrl" else _memrl_label(method)
    if method.get("q_learning"):
        label += "+Q"
    for (of, key), names in _VARIANT_LABELS.items():
        if name == of:
            label += f" {names.get(method.get(key, ''), method.get(key, ''))}".rstrip()
    if method.get("retrieval_granularity") == "step":
        label += " step"
    return f"{label} writer={writer}" if writer else label


def _memrl_label(method: dict) -> str:
    selection = method.get("selection", "greedy")
    if selection == "greedy":
        return f"memrl ε={method.get('epsilon', 0.0):g}"
    if selection == "softmax":
        return f"memrl softmax T={method.get('softmax_temperature', 1.0):g}"
    if selection == "ucb":
        return f"memrl UCB c={method.get('ucb_c', 1.0):g}"
    return "memrl Thompson"


def is_greedy_epsilon_zero(method: dict) -> bool:
    """MemRL as the critique describes it: greedy, epsilon = 0, retrieving once per task."""
    greedy = method.get("selection", "greedy") == "greedy" and not method.get("epsilon", 0.0)
    return method.get("name") == "memrl" and greedy and method.get("retrieval_granularity", "task") == "task"


def arm_rank(method: dict) -> int:
    """0: MemRL with epsilon = 0; 1: a MemRL that explores; 2: another method (a step-level MemRL is a variant of its own)."""
    if is_greedy_epsilon_zero(method):
        return 0
    return 1 if method.get("name") == "memrl" and method.get("retrieval_granularity", "task") == "task" else 2


_SELECTION_PARAMETER = {"greedy": "epsilon", "softmax": "softmax_temperature", "ucb": "ucb_c"}


def arm_order(method: dict) -> tuple:
    """MemRL with epsilon = 0 first, then the other MemRLs (greedy, then by selection rule,
    each by its parameter's value, numbers as numbers), then the other methods by name."""
    selection = method.get("selection", "greedy")
    value = method.get(_SELECTION_PARAMETER.get(selection, ""))
    return (arm_rank(method), str(method.get("name")), selection != "greedy", str(selection), float(value or 0.0))


@dataclass(frozen=True)
class Run:
    """What the findings need of one run folder; the episode log itself is not kept."""

    path: Path
    config: dict
    labels: list[str]
    measures: dict[str, float | None] = field(default_factory=dict)
    train_choices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # episode id -> injected item ids
    test_sources: dict[str, frozenset[str]] = field(default_factory=dict)  # test task -> injected source tasks
    test_outcomes: dict[str, float] = field(default_factory=dict)  # test task -> its success in the last test epoch (mean over samples)
    train_outcomes: dict[str, float] = field(default_factory=dict)  # training task -> its success in the last training epoch
    train_solved: dict[str, float] = field(default_factory=dict)  # training task -> 1.0 if solved in any training epoch (its CSR)
    top_sources: frozenset[str] = frozenset()  # source tasks of the top-decile memories by value

    @property
    def method(self) -> dict:
        return self.config["method"]

    @property
    def writer(self) -> dict | None:
        """The writer model's settings that can change results (memory_llm), None when the acting model writes."""
        writer = without(self.config, keys_with(*NOT_RESULTS)).get("memory_llm")
        return writer or None

    @property
    def arm(self) -> str:
        return arm_label(self.method, (self.writer or {}).get("model") or (self.writer or {}).get("name"))

    @property
    def arm_key(self) -> str:
        """The method's config; with a writer of its own, the method and the writer (memory_llm is an ARM key, KEY_ROLES)."""
        return config_key(self.method) if self.writer is None else config_key({"method": self.method, "memory_llm": self.writer})

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
        orders), runtime_learning, streaming, replay, repair, poison, drift, transfer, or a plugin's; an unknown protocol is an error.
        With protocol.retries, +retry<k> (its SR is of attempts with a retry: never compared with another arm's)."""
        return protocols.named(self.protocol).kind(self.protocol) + kind_suffix(self.protocol)

    @property
    def world_key(self) -> str:
        """The environment and everything else but the method, the evaluation kind and the replicate."""
        return config_key(without(self.config, keys_with(KeyRole.ARM, KeyRole.EVALUATION, KeyRole.REPLICATE, *NOT_RESULTS)))

    @property
    def identity(self) -> str:
        """The whole config but where the run was written: equal identities are the same run."""
        return config_key(without(self.config, keys_with(*NOT_RESULTS)))

    @property
    def varied_epoch(self) -> tuple[int, int] | None:
        """(epoch, its order seed) for a run whose order differs from its task_order_seed in one epoch only."""
        seeds = self.protocol.get("epoch_order_seeds") or []
        varied = [(i + 1, s) for i, s in enumerate(seeds) if s != self.order_seed]
        return varied[0] if len(varied) == 1 else None


def load_run(path: Path) -> Run:
    """Read one complete run folder (memrl_bench.core.records) and compute its measures."""
    records = read_run(path, require_complete=True)
    records = replace(records, episodes=[e for e in records.episodes if e.first_attempt])  # retries: their SR@k is metrics' `retries`
    run = Run(path, records.manifest.config, list(records.manifest.labels))
    test = test_splits(records.manifest)
    train = metrics.played_train(records.episodes)
    return replace(
        run,
        measures=run_measures(records, run.kind),
        train_choices={r.episode_id: tuple(u.item_id for u in r.retrieved) for r in train},
        test_sources=metrics.retrieved_sources(records.episodes, test),
        test_outcomes=last_epoch_outcomes(records.episodes, test),
        train_outcomes=last_epoch_outcomes(records.episodes, "train"),
        train_solved=_solved_in_any_epoch(train),
        top_sources=metrics.top_memory_sources(records.episodes, records.items, max(1, len(records.items) // 10)),
    )


def _solved_in_any_epoch(train: list[Episode]) -> dict[str, float]:
    """Training task -> 1.0 if any of its episodes succeeded (the task's share of the CSR), else 0.0."""
    solved: dict[str, float] = {}
    for r in train:
        solved[r.task_id] = max(solved.get(r.task_id, 0.0), float(r.success))
    return solved


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


def load_runs(results_dir: Path, workers: int | None = None, warn: Warn | None = warn_on_stderr) -> list[Run]:
    """Every complete run below results_dir, once per config (presets may repeat a run).

    Folders are read by `workers` processes (default: one per CPU, at most 4). Each
    folder left out (incomplete, unreadable) is one call of `warn`.
    """
    folders = run_folders(Path(results_dir))  # what cannot be walked (a path past the system's limit) is not searched
    workers = workers or min(4, os.cpu_count() or 1)
    if workers > 1 and len(folders) > 8:
        # forked by this thread, which waits for them here: killed with it (a SIGKILLed report left them hung)
        with ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("fork"), initializer=interrupts.die_with_parent, initargs=(os.getpid(),)
        ) as pool:
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
        """Arm key -> its runs, in the order of arm_order."""
        out: dict[str, list[Run]] = defaultdict(list)
        for r in self.runs:
            if r.kind == kind and r.temperature == temperature:
                out[r.arm_key].append(r)
        return dict(sorted(out.items(), key=lambda kv: arm_order(kv[1][0].method)))

    def temperatures(self) -> list[float]:
        return sorted({r.temperature for r in self.runs})


def critique_world(runs: list[Run]) -> Study:
    """The largest world of runs (outcome temperatures pooled: the claims compare them), transfer runs left out:
    a transfer run tests another run's memory, and the report's transfer matrix shows it."""
    worlds: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        if r.kind != "transfer":
            worlds[config_key({**json.loads(r.world_key), "env": without(r.config["env"], ("outcome_temperature",))})].append(r)
    return Study(max(worlds.values(), key=len) if worlds else [])


def held_out_world(runs: list[Run]) -> Study:
    """The largest world of runs but drift and transfer runs (critique_world's rule): the families' claims on new tasks, whose
    study also runs drift presets (step_drift) that drift_world reads."""
    return critique_world([r for r in runs if r.kind != "drift"])


def drift_world(runs: list[Run]) -> Study:
    """The largest world of drift runs."""
    worlds: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        if r.kind == "drift":
            worlds[r.world_key].append(r)
    return Study(max(worlds.values(), key=len) if worlds else [])


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


def task_differences(a: list[Run], b: list[Run], outcomes: str = "test_outcomes") -> list[float]:
    """a - b in held-out test success per test task (`outcomes`: or per training task, "train_outcomes" in the last
    training epoch, "train_solved" in any), each arm's success on the task averaged over its runs (task orders, method
    seeds): the pairs of a comparison on the tasks."""

    def per_task(runs: list[Run]) -> dict[str, float]:
        by: dict[str, list[float]] = defaultdict(list)
        for r in runs:
            for task, success in getattr(r, outcomes).items():
                by[task].append(success)
        return {task: float(np.mean(v)) for task, v in by.items()}

    x, y = per_task(a), per_task(b)
    return [x[task] - y[task] for task in sorted(x) if task in y]


def one_task_order(study: Study) -> bool:
    """The study ran one task order: no spread over orders, so its comparisons are paired on the task instead."""
    return len({r.order_seed for r in study.runs}) < 2


def by_method_seed(runs: list[Run], measure: str) -> list[list[float]]:
    """Per method seed, the measure across task orders (in order-seed order)."""
    groups: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for r in runs:
        if r.measures.get(measure) is not None:
            groups[r.method_seed].append((r.order_seed, r.measures[measure]))
    return [[v for _, v in sorted(g)] for _, g in sorted(groups.items())]
