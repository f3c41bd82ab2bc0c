"""Metrics, computed from episodes.jsonl (and, for memory-state metrics, the final snapshot).

Definitions (MemRL v2 where it defines them):
- SR: share of successful episodes of a phase (split) and epoch.
- CSR_E: share of tasks solved in at least one epoch <= E.
- forgetting_rate (MemRL v2): FR_e = N_lost,e / N_fail,e, the tasks solved at e-1 and
  failed at e over all tasks failed at e.
- forgetting_of_solved: N_lost,e / N_solved,e-1, the share of solved tasks lost.
- latency p50 / p95 per stage and episode (cache-hit episodes left out of "act").
- memory growth per epoch, retrieval coverage (share of memories never retrieved),
  the Gini coefficient of retrieval counts, and on the synthetic env the Spearman
  correlation of learned Q with true utility.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable

import numpy as np


def _phase_name(record: dict) -> str:
    return record["phase"] if record["phase"] != "test" else record["split"]


def success_rates(records: Iterable[dict]) -> dict[str, dict[int, float]]:
    """SR per phase (test phases by split) and epoch."""
    totals: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r in records:
        cell = totals[_phase_name(r)][r["epoch"]]
        cell[0] += bool(r["success"])
        cell[1] += 1
    return {phase: {epoch: s / n for epoch, (s, n) in sorted(by_epoch.items())} for phase, by_epoch in totals.items()}


def _solved_by_epoch(records: Iterable[dict], phase: str) -> dict[int, dict[str, bool]]:
    """epoch -> task -> solved (any sample) in that epoch, for one phase."""
    solved: dict[int, dict[str, bool]] = defaultdict(dict)
    for r in records:
        if _phase_name(r) == phase:
            solved[r["epoch"]][r["task_id"]] = solved[r["epoch"]].get(r["task_id"], False) or bool(r["success"])
    return dict(sorted(solved.items()))


def cumulative_success_rates(records: list[dict], phase: str = "train") -> dict[int, float]:
    """CSR_E: share of the phase's tasks solved in at least one epoch <= E."""
    by_epoch = _solved_by_epoch(records, phase)
    all_tasks = {t for tasks in by_epoch.values() for t in tasks}
    ever: set[str] = set()
    out = {}
    for epoch, tasks in by_epoch.items():
        ever |= {t for t, ok in tasks.items() if ok}
        out[epoch] = len(ever) / len(all_tasks) if all_tasks else 0.0
    return out


def forgetting_rates(records: list[dict], phase: str = "train") -> dict[str, dict[int, float | None]]:
    """Both forgetting rates per epoch e >= 2 (None where the denominator is 0)."""
    by_epoch = _solved_by_epoch(records, phase)
    epochs = list(by_epoch)
    fr_fail: dict[int, float | None] = {}
    fr_solved: dict[int, float | None] = {}
    for prev, cur in zip(epochs, epochs[1:]):
        before, now = by_epoch[prev], by_epoch[cur]
        common = set(before) & set(now)
        lost = sum(1 for t in common if before[t] and not now[t])
        failed = sum(1 for t in now if not now[t])
        solved_before = sum(1 for t in common if before[t])
        fr_fail[cur] = lost / failed if failed else None
        fr_solved[cur] = lost / solved_before if solved_before else None
    return {"forgetting_rate": fr_fail, "forgetting_of_solved": fr_solved}


def pass_at_k(records: list[dict]) -> dict[str, float]:
    """Per evaluation phase with several samples per task: share of tasks with any success."""
    out = {}
    last_epoch: dict[str, int] = {}
    for r in records:
        phase = _phase_name(r)
        last_epoch[phase] = max(last_epoch.get(phase, r["epoch"]), r["epoch"])
    for phase in {_phase_name(r) for r in records if r["phase"] != "train"}:
        by_task: dict[str, list[bool]] = defaultdict(list)
        for r in records:
            if _phase_name(r) == phase and r["epoch"] == last_epoch[phase]:
                by_task[r["task_id"]].append(bool(r["success"]))
        k = min(len(v) for v in by_task.values())
        if k > 1:
            out[f"{phase}@{k}"] = float(np.mean([any(v) for v in by_task.values()]))
    return out


def latency_percentiles(records: list[dict]) -> dict[str, dict[str, float]]:
    """p50 / p95 seconds per stage over episodes; cache-hit-only episodes left out of 'act'."""
    stages: dict[str, list[float]] = defaultdict(list)
    for r in records:
        usage = r.get("act_usage", {})
        all_cached = usage.get("calls", 0) > 0 and usage.get("cache_hits", 0) >= usage.get("calls", 0)
        for stage, seconds in r.get("latency_s", {}).items():
            if stage == "act" and all_cached:
                continue
            stages[stage].append(seconds)
    return {stage: {"p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95)), "n": len(v)} for stage, v in sorted(stages.items())}


def memory_growth(records: list[dict]) -> dict[int, dict[str, float]]:
    """Memory size after the last training batch of each epoch, and mean injected characters."""
    out: dict[int, dict[str, float]] = {}
    injected: dict[int, list[int]] = defaultdict(list)
    for r in records:
        if r["phase"] == "train":
            out[r["epoch"]] = {"items": r["memory_items_after"], "bytes": r["memory_bytes_after"], "groups": r["memory_groups_after"]}
            injected[r["epoch"]].append(r["injected_chars"])
    for epoch, chars in injected.items():
        out[epoch]["injected_chars_mean"] = float(np.mean(chars))
    return dict(sorted(out.items()))


def usage_totals(records: list[dict]) -> dict[str, dict[str, float]]:
    """LLM calls and tokens spent on acting and on memory management."""
    out = {}
    for purpose in ("act_usage", "memory_usage"):
        total: Counter = Counter()
        for r in records:
            total.update({k: v for k, v in r.get(purpose, {}).items()})
        out[purpose.removesuffix("_usage")] = dict(total)
    out["memory"]["op_errors"] = sum(r.get("memory_op_errors", 0) for r in records)
    return out


def gini(counts: Iterable[float]) -> float:
    """Gini coefficient of non-negative counts: 0 equal use, (n-1)/n one item takes all."""
    x = np.sort(np.asarray(list(counts), dtype=np.float64))
    n = len(x)
    if n == 0 or x.sum() == 0:
        return 0.0
    return float((2 * np.arange(1, n + 1) - n - 1) @ x / (n * x.sum()))


def load_memory_items(memory_dir: Path | None) -> list[dict]:
    if memory_dir is None or not (Path(memory_dir) / "items.jsonl").exists():
        return []
    with open(Path(memory_dir) / "items.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]


def retrieval_counts(records: list[dict], item_ids: Iterable[str], phases: tuple[str, ...] = ("train",)) -> dict[str, int]:
    """How often each stored item was injected, in the given phases."""
    counts = {i: 0 for i in item_ids}
    for r in records:
        if r["phase"] in phases:
            for used in r["retrieved"]:
                if used["item_id"] in counts:
                    counts[used["item_id"]] += 1
    return counts


def spearman(x: list[float], y: list[float]) -> float | None:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def synthetic_q_utility(records: list[dict], items: list[dict]) -> dict[str, Any]:
    """Synthetic env: Spearman(final Q, true utility) over stored memories."""
    utility = {r["episode_id"]: r["info"]["lesson_utility"] for r in records if r.get("info", {}).get("synthetic")}
    pairs = [(i["fields"]["q_value"], utility[i["provenance"]["episode_id"]]) for i in items if "q_value" in i.get("fields", {}) and i["provenance"]["episode_id"] in utility]
    if not pairs:
        return {}
    q, u = zip(*pairs)
    return {"spearman_q_true_utility": spearman(list(q), list(u)), "n_memories": len(pairs)}


def compute(records: list[dict], memory_dir: Path | None = None, labels: list[str] | None = None) -> dict[str, Any]:
    """Every metric of one run."""
    items = load_memory_items(memory_dir)
    counts = retrieval_counts(records, [i["id"] for i in items])
    phases = sorted({_phase_name(r) for r in records})
    out: dict[str, Any] = {
        "labels": labels or [],
        "episodes": len(records),
        "status_counts": dict(Counter(r["status"] for r in records)),
        "success_rate": success_rates(records),
        "cumulative_success_rate": {p: cumulative_success_rates(records, p) for p in phases if p in ("train", "validation")},
        "forgetting": {p: forgetting_rates(records, p) for p in phases if p in ("train", "validation")},
        "pass_at_k": pass_at_k(records),
        "latency_s": latency_percentiles(records),
        "memory_growth": memory_growth(records),
        "usage": usage_totals(records),
        "memory_final": {"items": len(items), "never_retrieved_share": (sum(1 for c in counts.values() if c == 0) / len(counts)) if counts else None, "retrieval_gini": gini(counts.values()) if counts else None},
    }
    if any(r.get("info", {}).get("synthetic") for r in records):
        out["synthetic"] = synthetic_q_utility(records, items)
    return out
