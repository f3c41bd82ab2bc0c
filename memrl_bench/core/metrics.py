"""Metrics, computed from episodes.jsonl (and, for memory-state metrics, the final snapshot),
read back as the records of memrl_bench/core/schema.py.

Definitions (MemRL v2 where it defines them):
- SR: share of successful episodes of a phase (split) and epoch.
- CSR_E: share of tasks solved in at least one epoch <= E.
- forgetting_rate (MemRL v2): FR_e = N_lost,e / N_fail,e, the tasks solved at e-1 and
  failed at e over all tasks failed at e.
- forgetting_of_solved: N_lost,e / N_solved,e-1, the share of solved tasks lost.
- latency p50 / p95 per stage, per episode and per step: "act" without cache hits,
  "act_with_cache_hits" with them.
- memory growth per epoch, retrieval coverage (share of memories never retrieved in any
  phase: a memory written in the last training batch can only be retrieved at test),
  the Gini coefficient of retrieval counts, and on the synthetic env the Spearman
  correlation of learned Q with true utility.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from memrl_bench.core.schema import Episode, MemoryItem, RetrievedItem


def success_rates(records: Iterable[Episode]) -> dict[str, dict[int, float]]:
    """SR per phase (test phases by split) and epoch."""
    totals: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r in records:
        cell = totals[r.phase_name][r.epoch]
        cell[0] += r.success
        cell[1] += 1
    return {phase: {epoch: s / n for epoch, (s, n) in sorted(by_epoch.items())} for phase, by_epoch in totals.items()}


def _solved_by_epoch(records: Iterable[Episode], phase: str) -> dict[int, dict[str, bool]]:
    """epoch -> task -> solved (any sample) in that epoch, for one phase."""
    solved: dict[int, dict[str, bool]] = defaultdict(dict)
    for r in records:
        if r.phase_name == phase:
            solved[r.epoch][r.task_id] = solved[r.epoch].get(r.task_id, False) or r.success
    return dict(sorted(solved.items()))


def cumulative_success_rates(records: list[Episode], phase: str = "train") -> dict[int, float]:
    """CSR_E: share of the phase's tasks solved in at least one epoch <= E."""
    by_epoch = _solved_by_epoch(records, phase)
    all_tasks = {t for tasks in by_epoch.values() for t in tasks}
    ever: set[str] = set()
    out = {}
    for epoch, tasks in by_epoch.items():
        ever |= {t for t, ok in tasks.items() if ok}
        out[epoch] = len(ever) / len(all_tasks) if all_tasks else 0.0
    return out


def forgetting_rates(records: list[Episode], phase: str = "train") -> dict[str, dict[int, float | None]]:
    """Both forgetting rates per epoch e >= 2: None where the denominator is 0, and where
    nothing was solved at e-1 (nothing could be forgotten: undefined, not 0)."""
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
        fr_fail[cur] = lost / failed if failed and solved_before else None
        fr_solved[cur] = lost / solved_before if solved_before else None
    return {"forgetting_rate": fr_fail, "forgetting_of_solved": fr_solved}


def pass_at_k(records: list[Episode]) -> dict[str, float]:
    """Per evaluation phase with several samples per task: share of tasks with any success."""
    out = {}
    last_epoch: dict[str, int] = {}
    for r in records:
        last_epoch[r.phase_name] = max(last_epoch.get(r.phase_name, r.epoch), r.epoch)
    for phase in {r.phase_name for r in records if r.phase != "train"}:
        by_task: dict[str, list[bool]] = defaultdict(list)
        for r in records:
            if r.phase_name == phase and r.epoch == last_epoch[phase]:
                by_task[r.task_id].append(r.success)
        k = min(len(v) for v in by_task.values())
        if k > 1:
            out[f"{phase}@{k}"] = float(np.mean([any(v) for v in by_task.values()]))
    return out


def latency_percentiles(records: list[Episode]) -> dict[str, dict[str, float]]:
    """p50 / p95 seconds per stage over episodes: 'act' leaves out the episodes whose every
    call was a cache hit, 'act_with_cache_hits' keeps them."""
    stages: dict[str, list[float]] = defaultdict(list)
    for r in records:
        all_cached = r.act_usage.calls > 0 and r.act_usage.cache_hits >= r.act_usage.calls
        for stage, seconds in r.latency_s.items():
            _add_latency(stages, stage, seconds, all_cached)
    return _percentiles(stages)


def step_latency_percentiles(records: list[Episode]) -> dict[str, dict[str, float]]:
    """p50 / p95 seconds of one step (LLM thinking, env step) over every recorded turn;
    'act' leaves out the turns answered from the cache, 'act_with_cache_hits' keeps them."""
    stages: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for turn in r.turns:
            for stage, seconds in (turn.latency_s or {}).items():
                _add_latency(stages, stage, seconds, bool(turn.cache_hit))
    return _percentiles(stages)


def _add_latency(stages: dict[str, list[float]], stage: str, seconds: float, cache_hit: bool) -> None:
    if stage == "act":
        stages["act_with_cache_hits"].append(seconds)
        if cache_hit:
            return
    stages[stage].append(seconds)


def _percentiles(stages: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        stage: {"p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95)), "n": len(v)} for stage, v in sorted(stages.items())
    }


def memory_growth(records: list[Episode]) -> dict[int, dict[str, float]]:
    """Memory size after the last training batch of each epoch, and mean injected characters."""
    out: dict[int, dict[str, float]] = {}
    injected: dict[int, list[int]] = defaultdict(list)
    for r in records:
        if r.phase == "train":
            out[r.epoch] = {"items": r.memory_items_after, "bytes": r.memory_bytes_after, "groups": r.memory_groups_after}
            injected[r.epoch].append(r.injected_chars)
    for epoch, chars in injected.items():
        out[epoch]["injected_chars_mean"] = float(np.mean(chars))
    return dict(sorted(out.items()))


def usage_totals(records: list[Episode]) -> dict[str, dict[str, float]]:
    """LLM calls and tokens spent on acting and on memory management."""
    out = {}
    for purpose in ("act_usage", "memory_usage"):
        total: Counter = Counter()
        for r in records:
            total.update(getattr(r, purpose).to_dict())
        out[purpose.removesuffix("_usage")] = dict(total)
    out["memory"]["op_errors"] = sum(r.memory_op_errors for r in records)
    return out


def retry_rates(records: list[Episode]) -> dict[str, dict[int, dict[str, float]]]:
    """protocol.retries: per phase (test phases by split) and epoch, over the scheduled episodes (one per task and
    sample): sr_at_1 (the first attempt solved it), sr_at_k (an attempt solved it, k = retries + 1 attempts at most;
    the environment's own success, whatever verdict decided the retries), attempts_mean, and the tokens the retrying
    cost (retry_tokens_mean per scheduled episode: the retries' acting, the verdict and reflection calls). Never mixed
    into success_rate."""
    chains: dict[tuple[str, int, str, int], list[Episode]] = defaultdict(list)
    for r in records:
        base = r.episode_id.rsplit("-a", 1)[0] if r.attempt else r.episode_id
        chains[r.phase_name, r.epoch, base, r.sample_index].append(r)
    cells: dict[str, dict[int, list[list[Episode]]]] = defaultdict(lambda: defaultdict(list))
    for (phase, epoch, _, _), chain in chains.items():
        cells[phase][epoch].append(sorted(chain, key=lambda r: r.attempt or 0))
    out: dict[str, dict[int, dict[str, float]]] = {}
    for phase, by_epoch in sorted(cells.items()):
        out[phase] = {}
        for epoch, epoch_chains in sorted(by_epoch.items()):
            retried = [r for chain in epoch_chains for r in chain[1:]]
            tokens = sum(r.act_usage.prompt_tokens + r.act_usage.completion_tokens for r in retried)
            tokens += sum(
                int((r.info.get("retry") or {}).get("call_tokens", 0)) for chain in epoch_chains for r in chain
            )  # verdicts, reflections
            out[phase][epoch] = {
                "tasks": len(epoch_chains),
                "sr_at_1": float(np.mean([chain[0].success for chain in epoch_chains])),
                "sr_at_k": float(np.mean([any(r.success for r in chain) for chain in epoch_chains])),
                "attempts_mean": float(np.mean([len(chain) for chain in epoch_chains])),
                "retry_tokens_mean": tokens / len(epoch_chains),
            }
    return out


def gini(counts: Iterable[float]) -> float:
    """Gini coefficient of non-negative counts: 0 equal use, (n-1)/n one item takes all."""
    x = np.sort(np.asarray(list(counts), dtype=np.float64))
    n = len(x)
    if n == 0 or x.sum() == 0:
        return 0.0
    return float((2 * np.arange(1, n + 1) - n - 1) @ x / (n * x.sum()))


def retrieval_counts(records: list[Episode], item_ids: Iterable[str], phases: tuple[str, ...] | None = None) -> dict[str, int]:
    """How often each stored item was injected, in the given phases (None: all of them)."""
    counts = {i: 0 for i in item_ids}
    for r in records:
        if phases is None or r.phase in phases:
            for used in r.retrieved:
                if used.item_id in counts:
                    counts[used.item_id] += 1
    return counts


def spread_of_counts(counts: Iterable[int], injections: int) -> dict[str, float | None]:
    """The share of the final memories never injected and the Gini of their injection counts, given every
    injection of the same phases (`injections`, of any id). None for both without memories, and for a run
    that injected memory but never one of its final items by id: it injects a document rebuilt from them
    (AWM's workflows, Dynamic Cheatsheet's cumulative sheet), so no item is injected or left out by id."""
    counts = list(counts)
    if not counts or (injections and not any(counts)):
        return {"never_retrieved": None, "gini": None}
    return {"never_retrieved": sum(1 for c in counts if c == 0) / len(counts), "gini": gini(counts)}


def injection_spread(records: list[Episode], items: list[MemoryItem], phases: tuple[str, ...] | None = None) -> dict[str, float | None]:
    """Over the final memories: the share never injected in `phases` (None: any phase) and the Gini of their injection counts."""
    counts = retrieval_counts(records, [i.id for i in items], phases)
    injections = sum(len(r.retrieved) for r in records if phases is None or r.phase in phases)
    return spread_of_counts(counts.values(), injections)


SIMILARITY_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
# A held-out phase whose retrievals the threshold removes more often than this gets a warning:
# the method may be off for it (e.g. MemRL's official threshold with another embedder).
THRESHOLD_WARNING_SHARE = 0.9


def retrieval_similarity(records: list[Episode]) -> dict[str, dict[str, Any]]:
    """Per phase (test: per split), from each episode's info.retrieval (MemRL): the quantiles
    of the query's best similarity to any stored key, and the share below the threshold
    (no memory retrieved for that reason). Episodes retrieved against an empty memory are left out."""
    by_phase: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in records:
        seen = r.info.get("retrieval") or {}
        if seen.get("top_similarity") is not None:
            by_phase[r.phase_name].append((float(seen["top_similarity"]), float(seen["threshold"])))
    out = {}
    for phase, pairs in sorted(by_phase.items()):
        top = np.array([t for t, _ in pairs])
        quantiles = {f"q{int(100 * q):02d}": float(np.quantile(top, q)) for q in SIMILARITY_QUANTILES}
        out[phase] = {
            "n": len(pairs),
            **quantiles,
            "threshold": pairs[0][1],
            "below_threshold_share": float(np.mean([t < h for t, h in pairs])),
        }
    return out


def similarity_warnings(similarity: dict[str, dict[str, Any]]) -> list[str]:
    """One line per held-out phase where the threshold removes more than THRESHOLD_WARNING_SHARE of the retrievals."""
    return [
        f"memrl-bench: warning: {phase}: the similarity threshold {s['threshold']} removed {100 * s['below_threshold_share']:.0f}% of "
        f"{s['n']} retrievals (median best similarity {s['q50']:.2f}); the method may be off here. Calibrate it from training data: "
        "README.md, MemRL with another embedder"
        for phase, s in similarity.items()
        if phase != "train" and s["below_threshold_share"] > THRESHOLD_WARNING_SHARE
    ]


def spearman(x: list[float], y: list[float]) -> float | None:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def synthetic_q_utility(records: list[Episode], items: list[MemoryItem]) -> dict[str, Any]:
    """Synthetic env: Spearman(final Q, true utility) over stored memories."""
    utility = {r.episode_id: r.info["lesson_utility"] for r in records if r.info.get("synthetic")}
    pairs = [
        (i.fields["q_value"], utility[i.provenance.episode_id])
        for i in items
        if "q_value" in i.fields and i.provenance.episode_id in utility
    ]
    if not pairs:
        return {}
    q, u = zip(*pairs)
    return {"spearman_q_true_utility": spearman(list(q), list(u)), "n_memories": len(pairs)}


def compute(records: list[Episode], items: list[MemoryItem] | None = None, labels: list[str] | None = None) -> dict[str, Any]:
    """Every metric of one run that any protocol has, from its log and its final memory's items
    (a protocol's own blocks come from Protocol.metrics)."""
    items = items or []
    attempts = [r for r in records if r.played]  # with the retries of protocol.retries: what the run spent
    records = [r for r in records if r.first_attempt]  # the scheduled episodes: every rate below is SR@1
    spread = injection_spread(records, items)
    poison = [r for r in records if not r.played]
    records = [r for r in records if r.played]
    phases = sorted({r.phase_name for r in records})
    out: dict[str, Any] = {
        "labels": labels or [],
        "episodes": len(records),
        "status_counts": dict(Counter(r.status for r in records)),
        "success_rate": success_rates(records),
        "cumulative_success_rate": {p: cumulative_success_rates(records, p) for p in phases if p in ("train", "validation")},
        "forgetting": {p: forgetting_rates(records, p) for p in phases if p in ("train", "validation")},
        "pass_at_k": pass_at_k(records),
        "latency_s": latency_percentiles(records),
        "step_latency_s": step_latency_percentiles(records),
        "memory_growth": memory_growth(records),
        "usage": usage_totals(attempts),
        "memory_final": {
            "items": len(items),
            "never_retrieved_any_phase_share": spread["never_retrieved"],
            "retrieval_gini": spread["gini"],
        },
    }
    similarity = retrieval_similarity(records)
    if similarity:
        out["retrieval_similarity"] = similarity
    if poison:
        poison_ids = {r.episode_id for r in poison}
        injected = [u for r in records if r.phase == "train" for u in r.retrieved]
        out["poison"] = {
            "memories": len(poison),
            "share_of_retrievals": sum(u.source_episode_id in poison_ids for u in injected) / len(injected) if injected else None,
        }
    if any(r.attempt is not None for r in attempts):
        out["retries"] = retry_rates(attempts)
    if any(r.info.get("synthetic") for r in records):
        out["synthetic"] = synthetic_q_utility(records, items)
    out["path_dependence"] = path_dependence(records, items)
    return out


# ---- path dependence (the critique study) ---------------------------------------
# A retrieved item carries its source's provenance (source_task_id, source_episode_id,
# source_epoch), and a memory is placed in time by its source episode's training batch,
# so every measure below comes from the log and a memory snapshot, without a re-run.


def played_train(records: list[Episode]) -> list[Episode]:
    """Training episodes that were played (not memories fed in unplayed, e.g. poison)."""
    return [r for r in records if r.phase == "train" and r.played]


def _batch_positions(records: list[Episode]) -> dict[str, int]:
    """Training episode id -> ordinal of its batch in the log: learn() saw the batches in this order."""
    batches: dict[tuple, int] = {}
    return {r.episode_id: batches.setdefault((r.epoch, r.batch_index), len(batches)) for r in records if r.phase == "train"}


def _source_info(records: list[Episode]) -> dict[str, dict]:
    """Training episode id -> its info (the synthetic env's ground truth about its lesson)."""
    return {r.episode_id: r.info for r in records if r.phase == "train"}


def epoch1_lock_in(records: list[Episode], items: list[MemoryItem]) -> dict[str, float | None]:
    """How much training epochs >= 2 reuse the memories epoch 1 wrote.

    share: injections of epoch-1 memories / all injections, over the training episodes of
    epochs >= 2. bank_share: what a retriever blind to a memory's age would give, the
    mean over the same injections of the epoch-1 share among the memories stored before
    the injecting batch (the snapshot's items, placed by their source episode's batch).
    share above bank_share means later epochs keep drawing on what epoch 1 wrote.
    """
    position = _batch_positions(records)
    written = sorted((position[i.provenance.episode_id], i.provenance.epoch == 1) for i in items if i.provenance.episode_id in position)
    written_at = np.array([b for b, _ in written], dtype=np.int64)
    early_so_far = np.concatenate([[0], np.cumsum([early for _, early in written])])
    hits = injections = 0
    bank_shares: list[float] = []
    for r in played_train(records):
        if r.epoch < 2 or not r.retrieved:
            continue
        stored = int(np.searchsorted(written_at, position[r.episode_id], side="left"))
        hits += sum(u.source_epoch == 1 for u in r.retrieved)
        injections += len(r.retrieved)
        bank_shares += [early_so_far[stored] / stored if stored else 0.0] * len(r.retrieved)
    if not injections:
        return {"share": None, "bank_share": None, "injections": 0}
    return {"share": hits / injections, "bank_share": float(np.mean(bank_shares)), "injections": injections}


def good_memories_never_retrieved(records: list[Episode], items: list[MemoryItem]) -> dict[str, float | None]:
    """Synthetic env: are the most useful memories found?

    Good memories are the stored ones in the top quartile of true utility (the source
    episode's info.lesson_utility). never_retrieved: the share of them never injected in
    training; injection_share: their share of all training injections (0.25 if used as
    often as the rest, above if retrieval favours them). Memories written late had
    fewer chances to be injected, so compare methods rather than read the level alone.
    """
    info = _source_info(records)
    utility = {i.id: info.get(i.provenance.episode_id, {}).get("lesson_utility") for i in items}
    utility = {k: v for k, v in utility.items() if v is not None}
    if len(utility) < 4:
        return {"never_retrieved": None, "injection_share": None, "good": 0}
    cut = float(np.quantile(list(utility.values()), 0.75))
    good = {k for k, v in utility.items() if v >= cut}
    counts = retrieval_counts(records, utility, ("train",))
    total = sum(counts.values())
    return {
        "never_retrieved": sum(counts[k] == 0 for k in good) / len(good),
        "injection_share": sum(counts[k] for k in good) / total if total else None,
        "good": len(good),
    }


def harmful_in_last_epoch(records: list[Episode], items: list[MemoryItem]) -> dict[str, float | None]:
    """Synthetic env: does the last training epoch still inject harmful memories?

    Harmful memories are those whose source episode has info.lesson_harmful. Over the
    last training epoch: retrieval_share = harmful injections / all injections;
    retrieved_share = the share of the harmful memories stored before that epoch that
    were injected at least once in it; bank_share = the harmful share of the memories
    stored before it (what a retriever blind to value would inject).
    """
    train = played_train(records)
    if not train:
        return {"retrieval_share": None, "retrieved_share": None, "bank_share": None}
    last = max(r.epoch for r in train)
    info = _source_info(records)
    harmful = {i.id for i in items if info.get(i.provenance.episode_id, {}).get("lesson_harmful")}
    before = {i.id for i in items if i.provenance.epoch < last}
    used = [u.item_id for r in train if r.epoch == last for u in r.retrieved]
    stored_harmful = harmful & before
    return {
        "retrieval_share": sum(u in harmful for u in used) / len(used) if used else None,
        "retrieved_share": len(stored_harmful & set(used)) / len(stored_harmful) if stored_harmful else None,
        "bank_share": len(stored_harmful) / len(before) if before else None,
    }


def early_amplification(records: list[Episode], items: list[MemoryItem]) -> float | None:
    """Synthetic env: Spearman, over the memories written in epoch 1, of true utility
    against injections in epochs >= 2. Positive: good early memories are reused more
    and bad ones less; near 0: what epoch 1 wrote is reused regardless of its value."""
    info = _source_info(records)
    early = [i for i in items if i.provenance.epoch == 1 and "lesson_utility" in info.get(i.provenance.episode_id, {})]
    later = Counter(u.item_id for r in played_train(records) if r.epoch >= 2 for u in r.retrieved)
    return spearman([info[i.provenance.episode_id]["lesson_utility"] for i in early], [later[i.id] for i in early])


def oracle_regret(records: list[Episode], env: Any, k: int) -> dict[str, Any]:
    """Synthetic env: per training episode, P(success | oracle's memories) - P(success | injected).

    The oracle knows every memory's true effect (env.item_effect) on the episode's task.
    For an episode of training batch b it may inject up to k of the memories stored
    before b, taken to be every training episode of earlier batches (exactly the bank of
    memrl and rag, which store every episode; for other methods, the experience they
    could have stored), and injects those with the largest positive effects (fewer than
    k when fewer help). Both probabilities come from env.p_success. Returns the mean
    and cumulative regret over training episodes and the mean per epoch.
    """
    position = _batch_positions(records)
    bank_records = [r for r in records if r.phase == "train"]
    # each memory as its method stored it: with the success it learned (env.learned_success)
    bank = [
        RetrievedItem(r.episode_id, 0.0, None, None, r.task_id, r.episode_id, r.epoch, env.learned_success(r.episode_id, r.success))
        for r in bank_records
    ]
    written_at = np.array([position[r.episode_id] for r in bank_records], dtype=np.int64)
    tasks = {t.id: t for split in {r.split for r in bank_records} for t in env.tasks(split)}
    types = sorted({tasks[r.task_id].data["task_type"] for r in bank_records})
    effect = np.array([[env.item_effect(item, t) for t in types] for item in bank]).reshape(len(bank), len(types))
    regret_by_epoch: dict[int, list[float]] = defaultdict(list)
    for r in played_train(records):
        task = tasks[r.task_id]
        stored = int(np.searchsorted(written_at, position[r.episode_id], side="left"))
        gains = effect[:stored, types.index(task.data["task_type"])]
        best = [i for i in np.argsort(-gains, kind="stable")[:k] if gains[i] > 0]
        injected = r.retrieved
        regret_by_epoch[r.epoch].append(env.p_success(task, [bank[i] for i in best]) - env.p_success(task, injected))
    every = [x for values in regret_by_epoch.values() for x in values]
    return {
        "mean": float(np.mean(every)) if every else None,
        "cumulative": float(np.sum(every)),
        "by_epoch": {e: float(np.mean(v)) for e, v in sorted(regret_by_epoch.items())},
        "k": k,
    }


def retrieved_sources(records: list[Episode], phase: str | tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Task id -> source task ids of the memories injected for it in the last epoch of
    `phase` (train, validation, a test split's name, or several test splits pooled), over all its samples."""
    names = (phase,) if isinstance(phase, str) else phase
    chosen = [r for r in records if r.phase_name in names and r.played]
    if not chosen:
        return {}
    last = max(r.epoch for r in chosen)
    out: dict[str, set[str]] = defaultdict(set)
    for r in chosen:
        if r.epoch == last:
            out[r.task_id].update(u.source_task_id for u in r.retrieved)
    return {t: frozenset(s) for t, s in out.items()}


def top_memory_sources(records: list[Episode], items: list[MemoryItem], n: int) -> frozenset[str]:
    """Source task ids of the n most valued memories: by Q where the method keeps one
    (memrl's q_value), else by training injections; ties go to the earlier-stored item."""
    counts = retrieval_counts(records, [i.id for i in items], ("train",))
    value = [(i.fields.get("q_value", counts[i.id]), -position, i.provenance.task_id) for position, i in enumerate(items)]
    return frozenset(task for *_, task in sorted(value, reverse=True)[:n])


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|a & b| / |a | b|; 1.0 when both are empty (nothing differs)."""
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 1.0


def path_dependence(records: list[Episode], items: list[MemoryItem]) -> dict[str, Any]:
    """The per-run path-dependence measures that need no environment (see each function)."""
    out: dict[str, Any] = {"epoch1_lock_in": epoch1_lock_in(records, items)}
    if any(r.info.get("synthetic") for r in records):
        out["good_memories"] = good_memories_never_retrieved(records, items)
        out["harmful_last_epoch"] = harmful_in_last_epoch(records, items)
        out["early_amplification"] = early_amplification(records, items)
    return out
