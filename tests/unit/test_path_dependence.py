"""The critique study's exploration variants and path-dependence metrics, on hand-built inputs."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from memrl_bench.core.schema import Episode, MemoryItem, RetrievedItem, Task
from memrl_bench.methods.base import Experience, MethodContext, Query
from memrl_bench.methods.memrl import MemRL

# ---- exploration (memrl.select) ---------------------------------------------------


def memrl_with(cfg: dict, memories: list[tuple[str, np.ndarray, dict]], seed: int = 0) -> MemRL:
    """A MemRL holding one memory per (id, key, fields) in its own intent group."""
    m = MemRL({"sim_threshold": -1.0, "k_select": 1, **cfg}, MethodContext(seed=seed))
    for item_id, key, fields in memories:
        ep = Episode(item_id, f"task-{item_id}", "train", "train", 1, 0, 0, True, 1.0, "ok")
        m.learn([Experience(ep, Task(f"task-{item_id}", "train", item_id), np.asarray(key, dtype=np.float32))])
        m.store.get(item_id).fields.update(fields)
    return m


def picks(m: MemRL, key: np.ndarray, n: int = 200) -> Counter:
    query = lambda i: Query(Task("q", "train", "q"), key.astype(np.float32), f"train-e01-{i:05d}-s0", "train")  # noqa: E731
    return Counter(m.retrieve(query(i)).items[0].item_id for i in range(n))


def unit(v: list[float]) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_thompson_keeps_similarity_in_the_score():
    # Equal, untested posteriors; "near" is the query's own intent (sim 1), "far" has sim 0.5.
    # The similarity term (0.5 * 0.5 / 0.1203 = 2.08) outweighs any two-value q_z spread (1.0),
    # so Thompson must always take "near"; ranking by the Beta draws alone would split ~50/50.
    query = unit([1, 0])
    m = memrl_with({"selection": "thompson"}, [("near", query, {}), ("far", unit([0.5, np.sqrt(0.75)]), {})])
    assert picks(m, query) == Counter({"near": 200})


def test_thompson_explores_between_equally_similar_memories_in_proportion_to_their_record():
    key = unit([1, 0])
    proven = {"successes": 6, "failures": 0, "visits": 6}
    doubtful = {"successes": 1, "failures": 3, "visits": 4}
    m = memrl_with({"selection": "thompson"}, [("proven", key, proven), ("doubtful", key, doubtful)])
    counts = picks(m, key, 400)
    assert counts["doubtful"] > 0  # it still gets tried
    assert counts["proven"] > 3 * counts["doubtful"]


def test_ucb_bonus_picks_the_untested_memory_and_c_zero_is_greedy():
    key = unit([1, 0])
    memories = [("tested", key, {"q_value": 0.5, "visits": 20}), ("untested", key, {"q_value": 0.0, "visits": 0})]
    explore = memrl_with({"selection": "ucb", "ucb_c": 2.0}, memories)
    greedy = memrl_with({"selection": "ucb", "ucb_c": 0.0}, memories)
    # q_z = +-1, so the score gap is lambda * 2 = 1.0; the bonus gap is 2 * sqrt(ln 21) * (1 - 1/sqrt(21)) = 2.73.
    assert picks(explore, key, 5) == Counter({"untested": 5})
    assert picks(greedy, key, 5) == Counter({"tested": 5})


# ---- path-dependence metrics on hand-built logs ------------------------------------


def memory(item_id: str, epoch: int, task: str | None = None, q: float | None = None, success: bool = True) -> MemoryItem:
    """A memory item as a snapshot stores it; its source episode is `item_id`."""
    provenance = {
        "task_id": task or f"task-{item_id}",
        "split": "train",
        "phase": "train",
        "epoch": epoch,
        "episode_id": item_id,
        "success": success,
    }
    return MemoryItem.from_dict(
        {"id": item_id, "content": item_id, "provenance": provenance, "fields": {} if q is None else {"q_value": q}}
    )


def episode(
    episode_id: str,
    epoch: int,
    batch: int,
    used: list[MemoryItem] = (),
    phase: str = "train",
    task: str | None = None,
    success: bool = True,
    **info,
) -> Episode:
    """An episode record injecting the memories `used` (items as built by `memory`)."""
    ep = Episode(
        episode_id,
        task or f"task-{episode_id}",
        phase if phase != "test" else "test_in_distribution",
        phase,
        epoch,
        batch,
        0,
        success,
        1.0,
        "ok",
    )  # type: ignore[arg-type]
    ep.retrieved = [
        RetrievedItem(m.id, 1.0, None, None, m.provenance.task_id, m.id, m.provenance.epoch, m.provenance.success) for m in used
    ]
    ep.info = {"synthetic": True, **info} if info else {}
    return Episode.from_dict(ep.to_dict())


def test_one_memory_taking_every_retrieval_has_gini_and_never_retrieved_any_phase_share_n_minus_1_over_n(tmp_path):
    from memrl_bench.core.metrics import compute

    n = 5
    items = [memory(f"m{i}", 1) for i in range(n)]
    records = [episode(f"m{i}", 1, 0) for i in range(n)] + [episode(f"e{j}", 2, 0, [items[0]]) for j in range(7)]
    final = compute(records, items)["memory_final"]
    assert final["retrieval_gini"] == pytest.approx((n - 1) / n)
    assert final["never_retrieved_any_phase_share"] == pytest.approx((n - 1) / n)


def test_gini_is_zero_for_equal_use():
    from memrl_bench.core.metrics import gini

    assert gini([3, 3, 3, 3]) == 0.0


def test_epoch1_lock_in_against_the_share_of_epoch1_memories_in_the_bank():
    from memrl_bench.core.metrics import epoch1_lock_in

    m1, m2, m3, m4 = memory("m1", 1), memory("m2", 1), memory("m3", 2), memory("m4", 2)
    records = [
        episode("m1", 1, 0),
        episode("m2", 1, 0),  # batch position 0 writes m1, m2
        episode("m3", 2, 0, [m1]),
        episode("m4", 2, 0, [m1]),  # position 1: the bank is {m1, m2}, all epoch 1
        episode("x", 2, 1, [m1, m2]),  # position 2: the bank is {m1..m4}, half epoch 1
    ]
    out = epoch1_lock_in(records, [m1, m2, m3, m4])
    assert out["share"] == 1.0  # every injection in epoch 2 is an epoch-1 memory
    assert out["bank_share"] == pytest.approx((1 + 1 + 0.5 + 0.5) / 4)
    assert out["injections"] == 4


def test_good_memories_never_retrieved_uses_the_top_quartile_of_true_utility():
    from memrl_bench.core.metrics import good_memories_never_retrieved

    items = [memory(f"m{u}", 1) for u in range(8)]
    records = [episode(f"m{u}", 1, 0, lesson_utility=float(u)) for u in range(8)]
    records += [episode("a", 2, 0, [items[7], items[0]]), episode("b", 2, 0, [items[7]]), episode("c", 2, 0, [items[7]])]
    out = good_memories_never_retrieved(records, items)
    assert out["good"] == 2  # utilities 6 and 7 (the 0.75 quantile of 0..7 is 5.25)
    assert out["never_retrieved"] == 0.5  # m6 never injected
    assert out["injection_share"] == 0.75  # 3 of the 4 injections go to m7


def test_harmful_in_last_epoch():
    from memrl_bench.core.metrics import harmful_in_last_epoch

    h1, h2, ok1, ok2 = memory("h1", 1), memory("h2", 1), memory("ok1", 2), memory("ok2", 2)
    records = [episode("h1", 1, 0, lesson_harmful=True), episode("h2", 1, 0, lesson_harmful=True)]
    records += [episode("ok1", 2, 0, lesson_harmful=False), episode("ok2", 2, 0, lesson_harmful=False)]
    records += [episode("x", 3, 0, [h1, ok1], lesson_harmful=False), episode("y", 3, 0, [ok1], lesson_harmful=False)]
    out = harmful_in_last_epoch(records, [h1, h2, ok1, ok2])
    assert out == {"retrieval_share": pytest.approx(1 / 3), "retrieved_share": 0.5, "bank_share": 0.5}


@pytest.mark.parametrize("later_uses, expected", [([0, 1, 2, 3], 1.0), ([3, 2, 1, 0], -1.0)])
def test_early_amplification_is_spearman_of_utility_and_later_reuse(later_uses, expected):
    from memrl_bench.core.metrics import early_amplification

    items = [memory(f"m{u}", 1) for u in range(4)]
    records = [episode(f"m{u}", 1, 0, lesson_utility=float(u)) for u in range(4)]
    records += [episode(f"r{u}-{j}", 2, 0, [items[u]]) for u in range(4) for j in range(later_uses[u])]
    assert early_amplification(records, items) == pytest.approx(expected)


def test_retrieved_sources_jaccard_and_top_memory_sources():
    from memrl_bench.core.metrics import jaccard, retrieved_sources, top_memory_sources

    a, b, c = memory("a", 1, task="T1", q=0.9), memory("b", 1, task="T2", q=-0.5), memory("c", 1, task="T3", q=0.1)
    records = [episode("t1", 1, 0, [a, b], phase="test", task="Q1"), episode("t2", 1, 0, [c], phase="test", task="Q2")]
    assert retrieved_sources(records, "test_in_distribution") == {"Q1": frozenset({"T1", "T2"}), "Q2": frozenset({"T3"})}
    assert jaccard({"T1", "T2"}, {"T2", "T3"}) == pytest.approx(1 / 3)
    assert jaccard(set(), set()) == 1.0
    assert top_memory_sources([], [a, b, c], 2) == frozenset({"T1", "T3"})  # by Q
    unvalued = [memory("a", 1, task="T1"), memory("b", 1, task="T2"), memory("c", 1, task="T3")]
    used = [episode("u", 2, 0, [unvalued[1]]), episode("v", 2, 0, [unvalued[1], unvalued[2]])]
    assert top_memory_sources(used, unvalued, 2) == frozenset({"T2", "T3"})  # by injections


def test_oracle_regret_against_hand_computed_probabilities():
    from memrl_bench.core.metrics import oracle_regret
    from memrl_bench.envs.synthetic import SyntheticEnv

    env = SyntheticEnv({"n_types": 1, "n_ood_types": 0, "tasks": {"train": 3}, "harmful_share": 0.0, "quality_std": 0.0})
    t0, t1, t2 = env.tasks("train")
    first = [
        episode("e0", 1, 0, task=t0.id),
        episode("e1", 1, 0, task=t1.id, success=False),
    ]  # lessons of quality 0.8 (success) and 0.1 (failure): both help
    item = lambda r: memory(r.episode_id, 1, task=r.task_id, success=r.success)  # noqa: E731
    sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    base = t2.data["base_logit"]

    nothing = oracle_regret(first + [episode("x", 1, 1, [], task=t2.id)], env, k=3)
    assert nothing["by_epoch"][1] == pytest.approx((0 + 0 + sigmoid(base + 0.9) - sigmoid(base)) / 3)  # the first batch has no bank
    one = oracle_regret(first + [episode("x", 1, 1, [item(first[1])], task=t2.id)], env, k=1)
    assert one["cumulative"] == pytest.approx(sigmoid(base + 0.8) - sigmoid(base + 0.1))  # the oracle takes the 0.8 lesson
    best = oracle_regret(first + [episode("x", 1, 1, [item(first[0]), item(first[1])], task=t2.id)], env, k=3)
    assert best["cumulative"] == pytest.approx(0.0)


def test_oracle_injects_nothing_when_every_memory_is_harmful():
    from memrl_bench.core.metrics import oracle_regret
    from memrl_bench.envs.synthetic import SyntheticEnv

    env = SyntheticEnv({"n_types": 1, "n_ood_types": 0, "tasks": {"train": 2}, "harmful_share": 1.0})
    t0, t1 = env.tasks("train")
    first = episode("e0", 1, 0, task=t0.id)
    base = t1.data["base_logit"]
    out = oracle_regret([first, episode("x", 1, 1, [memory("e0", 1, task=t0.id)], task=t1.id)], env, k=3)
    assert out["cumulative"] == pytest.approx(1 / (1 + np.exp(-base)) - 1 / (1 + np.exp(-(base - 1.5))))
