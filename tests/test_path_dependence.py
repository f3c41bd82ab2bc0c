"""The critique study's exploration variants and path-dependence metrics, on hand-built inputs."""

from __future__ import annotations

from collections import Counter

import numpy as np

from memrl_bench.methods.base import Experience, MethodContext, Query
from memrl_bench.methods.memrl import MemRL
from memrl_bench.types import Episode, Task

# ---- exploration (memrl.select) ---------------------------------------------------


def memrl_with(cfg: dict, memories: list[tuple[str, np.ndarray, dict]], seed: int = 0) -> MemRL:
    """A MemRL holding one memory per (id, key, fields) in its own intent group."""
    m = MemRL({"sim_threshold": -1.0, "k_select": 1, **cfg}, MethodContext(seed=seed))
    for item_id, key, fields in memories:
        ep = Episode(item_id, f"task-{item_id}", "train", "train", 1, 0, 0, True, 1.0, "ok")
        m._write(Experience(ep, Task(f"task-{item_id}", "train", item_id), key), content=item_id)
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
