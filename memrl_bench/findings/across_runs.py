"""Measures across runs of one arm: how much where greedy MemRL ends up depends on the task
order and on the method seed (the spread across orders, the agreement of retrievals across
method seeds, their overlap across orders, and the counterfactual of one epoch's order)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from memrl_bench.core import metrics
from memrl_bench.findings.runs import Run, by_method_seed


def order_spread(runs: list[Run], measure: str) -> dict[str, float | None]:
    """Spread of a measure across task orders with the method seed fixed: the std and the
    range per method seed, averaged over method seeds."""
    groups = [g for g in by_method_seed(runs, measure) if len(g) > 1]
    if not groups:
        return {"std": None, "range": None, "orders": 0}
    return {
        "std": float(np.mean([np.std(g, ddof=1) for g in groups])),
        "range": float(np.mean([max(g) - min(g) for g in groups])),
        "orders": max(len(g) for g in groups),
    }


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
                tasks = sorted(
                    t for t in set(a.test_sources) & set(b.test_sources) if a.test_sources[t] or b.test_sources[t]
                )  # sorted: a float sum in a fixed order
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
