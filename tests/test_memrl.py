"""MemRL's phase B, Q update and selection on hand-computed numbers."""

import numpy as np
import pytest

from memrl_bench.methods.base import Experience, MethodContext, Query, unit_rows
from memrl_bench.methods.memrl import MemRL
from memrl_bench.runner import ConfigError, validated
from memrl_bench.types import Episode, RetrievedItem, Task


def make(**cfg) -> MemRL:
    return MemRL(cfg, MethodContext(seed=0))


def add(method: MemRL, item_id: str, q: float, key: np.ndarray, success: bool = True) -> None:
    ep = Episode(item_id, f"task-{item_id}", "train", "train", 1, 0, 0, success, 1.0, "ok")
    method._write(Experience(ep, Task(f"task-{item_id}", "train", item_id), key), content=item_id)
    method.store.get(item_id).fields["q_value"] = q


def test_phase_b_ranks_by_hand_computed_scores():
    m = make(**{"lambda": 0.5})
    ids = ["A", "B", "C"]
    for i, q in zip(ids, [0.9, 0.6, 0.1]):
        add(m, i, q, np.eye(4)[0])
    ranked, sims, q, scores = m.rank(ids, np.array([0.9, 0.9, 0.7]))
    # sim_z = (sim - 0.5187) / 0.1203; q_z = (Q - 0.5333) / 0.32998 (population std)
    expected = {"A": 0.5 * (3.16958 + 1.11118), "B": 0.5 * (3.16958 + 0.20203), "C": 0.5 * (1.50706 - 1.31321)}
    assert ranked == ["A", "B", "C"]
    assert scores == pytest.approx([expected[i] for i in ranked], abs=1e-4)


def test_q_z_uses_unit_std_for_a_single_candidate_and_q_min_drops():
    m = make(q_min=0.0)
    add(m, "A", 0.5, np.eye(4)[0])
    add(m, "B", -0.5, np.eye(4)[1])
    ranked, _, q, scores = m.rank(["A", "B"], np.array([0.8, 0.8]))
    assert ranked == ["A"]  # B has Q < q_min
    assert scores[0] == pytest.approx(0.5 * (0.8 - 0.5187) / 0.1203 + 0.5 * 0.0)


def test_pool_z_scores_similarity_within_the_pool():
    m = make(sim_normalisation="pool")
    for i in "AB":
        add(m, i, 0.0, np.eye(4)["AB".index(i)])
    _, _, _, scores = m.rank(["A", "B"], np.array([0.9, 0.7]))
    assert scores == pytest.approx([0.5, -0.5])


def test_monte_carlo_q_update_and_new_memories():
    m = make(alpha=0.3)
    add(m, "A", 0.6, np.eye(4)[0])
    add(m, "B", 0.6, np.eye(4)[0])
    used_a = RetrievedItem.of(m.store.get("A"), 0.9, 0.6, 1.0)
    used_b = RetrievedItem.of(m.store.get("B"), 0.9, 0.6, 1.0)
    win = Episode("e1", "t1", "train", "train", 1, 0, 0, True, 1.0, "ok", retrieved=[used_a])
    loss = Episode("e2", "t2", "train", "train", 1, 0, 1, False, 0.0, "ok", retrieved=[used_b])
    m.learn([Experience(win, Task("t1", "train", "x"), np.eye(4)[0]), Experience(loss, Task("t2", "train", "y"), np.eye(4)[1])])
    assert m.store.get("A").fields["q_value"] == pytest.approx(0.72)  # 0.6 + 0.3 * (1 - 0.6)
    assert m.store.get("B").fields["q_value"] == pytest.approx(0.6 + 0.3 * (-1 - 0.6))
    assert m.store.get("e1").fields["group"] == m.store.get("A").fields["group"]  # sim 1.0 >= 0.9 joins
    assert m.store.get("e2").fields["group"] != m.store.get("A").fields["group"]  # orthogonal: new group
    assert m.store.get("e2").fields["q_value"] == 0.0 and m.stats().items == 4


def test_phase_a_threshold_and_k_groups():
    m = make(k_groups=2, sim_threshold=0.5)
    keys = np.array([[1, 0, 0], [0.8, 0.6, 0], [0.55, 0, 0.835], [0, 0, 1]], dtype=np.float32)
    for i, k in enumerate(keys):
        add(m, f"m{i}", 0.0, k)
    ids, sims = m.pool(m.group_keys.keys @ np.array([1, 0, 0], dtype=np.float32))
    assert ids == ["m0", "m1"]  # the top 2 groups above 0.5; m2 (0.55) is third, m3 (0.0) below threshold
    assert sims == pytest.approx([1.0, 0.8])


def test_epsilon_zero_is_greedy_top_k_and_deterministic():
    m = make(k_select=3, epsilon=0.0)
    rng = np.random.default_rng(1)
    for i in range(12):
        add(m, f"m{i}", float(rng.normal()), rng.normal(size=8))
    query = Query(Task("q", "train", "q"), m.store.keys[0], "train-e01-00000-s0", "train")
    first = m.retrieve(query)
    ids, sims, _, scores = m.rank(*m.pool(m.group_keys.similarities(query.key)))
    assert [r.item_id for r in first.items] == ids[:3]
    assert [r.item_id for r in m.retrieve(query).items] == [r.item_id for r in first.items]


def test_epsilon_one_samples_uniformly_and_depends_on_the_seed():
    picks = set()
    for seed in range(20):
        m = MemRL({"epsilon": 1.0, "k_select": 1, "sim_threshold": -1.0}, MethodContext(seed=seed))
        for i in range(5):
            add(m, f"m{i}", 0.0, np.eye(5)[i])
        key = np.ones(5, dtype=np.float32) / np.sqrt(5)
        picks.add(m.retrieve(Query(Task("q", "train", "q"), key, "ep", "train")).items[0].item_id)
    assert len(picks) >= 3


def test_retrieve_does_not_change_state(tmp_path):
    from memrl_bench.methods.base import fingerprint

    m = make(selection="thompson")
    for i in range(6):
        add(m, f"m{i}", 0.1 * i, np.eye(6)[i] + 0.5)
    before = fingerprint(m, tmp_path / "a")
    m.retrieve(Query(Task("q", "train", "q"), np.ones(6, dtype=np.float32) / np.sqrt(6), "ep", "validation"))
    assert fingerprint(m, tmp_path / "b") == before


def test_snapshot_restore_round_trip(tmp_path):
    m = make()
    for i in range(5):
        add(m, f"m{i}", 0.2 * i, np.eye(5)[i])
    (tmp_path / "s").mkdir()
    m.snapshot(tmp_path / "s")
    other = make()
    other.restore(tmp_path / "s")
    assert [i.to_dict() for i in other.items()] == [i.to_dict() for i in m.items()]
    assert np.array_equal(other.group_keys.keys, m.group_keys.keys)


def test_learn_takes_the_nearest_group_from_phase_a_and_groups_as_a_full_search():
    """After retrieve_batch, learn reuses phase A's top group instead of searching again;
    groups founded since retrieval, and a key that differs from the query's, are still
    compared. The groups equal those of a twin that never retrieves (a full search)."""
    rng = np.random.default_rng(0)
    centres = unit_rows(rng.standard_normal((6, 16)))
    retrieving, searching = make(), make()
    k1_searches = []
    search = retrieving.group_keys.search

    def counting_search(queries, k, floor=-np.inf):
        if k == 1:  # learn's nearest-group search; phase A asks for k_groups
            k1_searches.append(len(queries))
        return search(queries, k, floor)

    retrieving.group_keys.search = counting_search

    def topic_keys(n: int) -> np.ndarray:
        return centres[rng.integers(0, len(centres), n)] + 0.33 * rng.standard_normal((n, 16)) / 4  # cos ~0.9 within a topic

    def experiences(prefix: str, keys: np.ndarray) -> list[Experience]:
        return [Experience(Episode(f"{prefix}-{j}", f"t-{prefix}-{j}", "train", "train", 1, 0, j, True, 1.0, "ok"), Task(f"t-{prefix}-{j}", "train", f"task {prefix} {j}"), key) for j, key in enumerate(keys)]

    def learn(batch: list[Experience]) -> None:
        retrieving.learn(batch)
        searching.learn(batch)

    learn(experiences("seed", topic_keys(8)))
    for r in range(6):
        keys = topic_keys(8)
        batch = experiences(f"r{r}", keys)
        retrieving.retrieve_batch([Query(e.task, e.key, e.episode.episode_id, "train") for e in batch])
        if r == 2:  # the same keys learned after the retrieval: the groups they found are the nearest
            groups_before = len(searching.group_keys)
            learn(experiences("between", keys))
            assert len(searching.group_keys) > groups_before
        if r == 4:
            batch[3] = Experience(batch[3].episode, batch[3].task, -batch[3].key)  # not the key that was retrieved for
        learn(batch)
    assert k1_searches == [8, 1]  # the batch learned between, and the one changed key
    assert [g.fields["members"] for g in retrieving.group_keys.items] == [g.fields["members"] for g in searching.group_keys.items]
    assert np.array_equal(retrieving.store.column("group"), searching.store.column("group"))
    sizes = [len(g.fields["members"]) for g in searching.group_keys.items]
    assert max(sizes) > 1 and len(sizes) > len(centres)  # both joins and new groups were decided


@pytest.mark.parametrize(
    "cfg, key",
    [({"epsilon": -0.1}, "method.epsilon"), ({"k_select": 0}, "method.k_select"), ({"lambda": 2}, "method.lambda"), ({"alpah": 0.3}, "method.alpah")],
)
def test_bad_hyperparameters_name_the_key(cfg, key):
    from memrl_bench.methods.memrl import MemRLConfig

    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validated(MemRLConfig, cfg, "method")
