"""memrl_bench's vectorised MemRL and RAG choose what a loop-and-lists reference chooses.

The reference (scripts/bench_retrieval.py: ReferenceMemRL) is the official code's
algorithm written out: a dict of groups keyed by task text, one cosine at a time in
Python floats, phase B on lists, each new memory grouped through its own retrieval.
Both are fed the same episodes for several rounds of retrieve -> learn, so Q values,
groups and pools evolve identically; every round's selections must match (ids exactly,
numbers to 1e-12), and so must the groups and every Q. The official code itself is
run in tests/contracts/test_memrl_official.py; this reference also covers the switches that
correct the official quirks.
"""

from __future__ import annotations

import numpy as np
import pytest

from memrl_bench.core.schema import Episode, Task
from memrl_bench.methods.base import Experience, MethodContext, Query, fingerprint
from memrl_bench.methods.memrl import MemRL
from memrl_bench.methods.rag import RAG
from scripts.bench_retrieval import Bank, ReferenceEpisode, ReferenceMemRL, load_memrl


def world(seed: int, n_tasks: int, dim: int = 32):
    """Tasks in topics; a task's key is its topic centre plus noise (cos ~0.89 within a topic)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(2, n_tasks // 25), dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    topic = rng.integers(0, len(centres), size=n_tasks)
    keys = centres[topic] + 0.35 * rng.standard_normal((n_tasks, dim)) / np.sqrt(dim)
    keys = (keys / np.linalg.norm(keys, axis=1, keepdims=True)).astype(np.float32)
    tasks = [Task(f"t/{i:05d}", "train", f"task {i}") for i in range(n_tasks)]
    return tasks, keys, rng


def play_rounds(method, reference, tasks, keys, rng, rounds: int, batch: int, check, first_round: int = 0) -> None:
    """Rounds of: retrieve a batch (tasks repeat, as epochs do) -> compare -> learn with random outcomes."""
    for r in range(first_round, first_round + rounds):
        picks = rng.integers(0, len(tasks), size=batch)
        queries = [Query(tasks[i], keys[i], f"train-e{r:02d}-{j:05d}-s0", "train") for j, i in enumerate(picks)]
        retrievals = method.retrieve_batch(queries)
        seen = []
        for query, retrieval in zip(queries, retrievals):
            if reference is not None:
                ranked = reference.ranked(query.key)
                check(retrieval, ranked)
                if isinstance(reference, ReferenceMemRL):  # what its learn groups by
                    seen.append((reference.phase_a(query.key), bool(ranked)))
        successes = rng.random(batch) < 0.5
        episodes = [
            Episode(q.episode_id, q.task.id, "train", "train", 1, r, j, bool(s), float(s), "ok", retrieved=ret.items)
            for j, (q, ret, s) in enumerate(zip(queries, retrievals, successes))
        ]
        method.learn([Experience(e, q.task, q.key) for e, q in zip(episodes, queries)])
        if isinstance(reference, ReferenceMemRL):
            reference.learn(
                [
                    ReferenceEpisode(e.episode_id, q.task.description, q.key, e.success, [i.item_id for i in e.retrieved], *s)
                    for e, q, s in zip(episodes, queries, seen)
                ]
            )
        elif reference is not None:
            reference.learn(queries)


def memrl_check(k_select: int, score_atol: float = 1e-12):
    """A check that our choice is the reference's top k_select, and their numbers agree.

    Similarities and Q are the same float64 computations; z-scores sum in another order
    (numpy's pairwise sums), so scores agree to rounding, and scores tied to rounding
    (e.g. symmetric z-scores in a pool of three) may come in either order.
    """

    def check(ours, ranked) -> None:
        assert ours.candidates == len(ranked)  # the same pool after the q_min filter
        assert len(ours.items) == min(k_select, len(ranked))
        score_of = {t[0]: t[3] for t in ranked}
        for mine, their in zip(ours.items, ranked):
            assert mine.item_id == their[0] or abs(score_of[mine.item_id] - their[3]) < 1e-9, (mine.item_id, their[0])
        theirs = [next(t for t in ranked if t[0] == i.item_id) for i in ours.items]
        np.testing.assert_allclose([i.similarity for i in ours.items], [t[1] for t in theirs], rtol=0, atol=1e-12)
        assert [i.q_value for i in ours.items] == [t[2] for t in theirs]
        np.testing.assert_allclose([i.score for i in ours.items], [t[3] for t in theirs], rtol=0, atol=score_atol)

    return check


MEMRL_VARIANTS = [
    {},  # the official ALFWorld configuration
    {"sim_normalisation": "pool", "q_min": -0.2, "k_groups": 3, "k_select": 5},
    {"sim_threshold": 0.8, "lambda": 0.9, "add_similarity_threshold": 0.95},
    # LLB-like: Q floored at 0, failures reward 0, q_min reachable (with a boost) and the stats before it
    {
        "k_groups": 10,
        "k_select": 5,
        "add_similarity_threshold": 0.99,
        "q_init": 0.5,
        "q_init_failure": 0.4,
        "reward_failure": 0.0,
        "q_floor": 0.0,
        "q_min": 0.45,
        "recency_boost": 0.1,
    },
    # BCB-like q_min -0.8, every correction switched on
    {
        "k_select": 5,
        "q_min": -0.8,
        "group_within_batch": True,
        "keep_repeated_task_members": True,
        "q_stats_after_q_min": True,
        "join_after_empty_retrieval": True,
    },
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_tasks", [40, 400])
@pytest.mark.parametrize("variant", range(len(MEMRL_VARIANTS)))
def test_memrl_selects_what_the_reference_selects(seed, n_tasks, variant):
    method = MemRL({"write_with_llm": False, **MEMRL_VARIANTS[variant]}, MethodContext(seed=seed))
    reference = ReferenceMemRL(method.config)
    tasks, keys, rng = world(seed, n_tasks)
    # z-scoring similarities within a pool whose similarities are close together
    # (sim_normalisation=pool) divides rounding differences by a small std.
    score_atol = 1e-9 if method.config.sim_normalisation == "pool" else 1e-12
    play_rounds(method, reference, tasks, keys, rng, rounds=12, batch=32, check=memrl_check(method.config.k_select, score_atol))
    assert len(method.store) == 12 * 32 == len(reference.q)
    assert [(g.content, g.fields["members"]) for g in method.group_keys.items] == list(reference.groups.items())
    assert {i.id: i.fields["q_value"] for i in method.store.items} == reference.q
    orphans = {i.id for i in method.store.items if i.fields["group"] == -1}
    assert orphans == set(reference.q) - {m for members in reference.groups.values() for m in members}
    grown = method._member_index()  # extended batch by batch; must equal a fresh build
    method._members = None
    assert all(np.array_equal(a, b) for a, b in zip(grown, method._member_index()))


def test_the_variants_reach_the_official_quirks():
    """The rounds above reach the cases where the official code differs from the corrections."""
    tasks, keys, rng = world(0, 40)
    official = MemRL({"write_with_llm": False, **MEMRL_VARIANTS[3]}, MethodContext(seed=0))
    play_rounds(official, None, tasks, keys, rng, rounds=12, batch=32, check=None)
    assert any(i.fields["group"] == -1 for i in official.store.items)  # taken-over groups: repeated texts, empty retrievals
    corrected = MemRL({"write_with_llm": False, **MEMRL_VARIANTS[4]}, MethodContext(seed=0))
    play_rounds(corrected, None, tasks, keys, np.random.default_rng(1), rounds=12, batch=32, check=None)
    assert not any(i.fields["group"] == -1 for i in corrected.store.items)
    assert corrected.labels == (
        "memrl_group_within_batch",
        "memrl_keep_repeated_task_members",
        "memrl_q_stats_after_q_min",
        "memrl_join_after_empty_retrieval",
    )
    assert official.labels == ()


def test_memrl_restored_from_a_snapshot_chooses_as_before(tmp_path):
    method = MemRL({"write_with_llm": False}, MethodContext(seed=0))
    reference = ReferenceMemRL(method.config)
    tasks, keys, rng = world(5, 300)
    play_rounds(method, reference, tasks, keys, rng, rounds=6, batch=32, check=memrl_check(method.config.k_select))
    method.snapshot(tmp_path)
    restored = MemRL({"write_with_llm": False}, MethodContext(seed=0))
    restored.restore(tmp_path)
    assert fingerprint(restored, tmp_path / "a") == fingerprint(method, tmp_path / "b")
    play_rounds(restored, reference, tasks, keys, rng, rounds=3, batch=32, check=memrl_check(3), first_round=6)


@pytest.mark.parametrize("n_memories", [1000, 5000])
def test_memrl_on_a_restored_bank_matches_the_reference(tmp_path, n_memories):
    bank = Bank(n_memories, seed=n_memories, dim=64)
    bank.write_snapshot(tmp_path / "bank")
    method = load_memrl(tmp_path / "bank", {"kind": "exact"})
    reference = ReferenceMemRL.from_bank(bank, method.config)
    queries = bank.queries(60, seed=3)
    results = method.retrieve_batch([Query(Task(f"q{i}", "validation", ""), k, f"v{i}", "validation") for i, k in enumerate(queries)])
    assert all(len(r.items) == 3 for r in results)  # the bank is built so that phase A finds groups
    for ours, query in zip(results, queries):
        memrl_check(3)(ours, reference.ranked(query))
    one_by_one = [method.retrieve(Query(Task(f"q{i}", "validation", ""), k, f"v{i}", "validation")) for i, k in enumerate(queries)]
    assert [[i.item_id for i in r.items] for r in results] == [[i.item_id for i in r.items] for r in one_by_one]


def test_memrl_with_hnsw_resumes_exactly(tmp_path):
    """A run restored from a mid-run snapshot ends in the same memory as one never interrupted."""
    cfg = {"write_with_llm": False, "index": {"kind": "hnsw", "hnsw_m": 8, "ef_search": 32}}
    tasks, keys, _ = world(7, 500)
    whole = MemRL(cfg, MethodContext(seed=0))
    resumed = MemRL(cfg, MethodContext(seed=0))
    play_rounds(whole, None, tasks, keys, np.random.default_rng(1), rounds=4, batch=32, check=None)
    whole.snapshot(tmp_path)
    resumed.restore(tmp_path)
    for method in (whole, resumed):
        play_rounds(method, None, tasks, keys, np.random.default_rng(2), rounds=4, batch=32, check=None, first_round=4)
    assert fingerprint(whole, tmp_path / "a") == fingerprint(resumed, tmp_path / "b")


class ReferenceRAG:
    """RAG as a loop: cosine to every stored episode, then a stable sort."""

    def __init__(self, sim_floor: float):
        self.sim_floor = sim_floor
        self.stored: list[tuple[str, np.ndarray]] = []

    def ranked(self, key: np.ndarray) -> list[tuple[str, float]]:
        scored = [(item_id, ReferenceMemRL.cosine(key, k)) for item_id, k in self.stored]
        return sorted((pair for pair in scored if pair[1] >= self.sim_floor), key=lambda pair: -pair[1])

    def learn(self, queries: list[Query]) -> None:
        self.stored.extend((q.episode_id, q.key) for q in queries)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sim_floor", [-1.0, 0.85])
def test_rag_selects_what_a_loop_selects(seed, sim_floor):
    method = RAG({"top_k": 4, "sim_floor": sim_floor}, MethodContext(seed=seed))
    reference = ReferenceRAG(sim_floor)
    tasks, keys, rng = world(seed, 60)  # few tasks, many repeats: exact ties between stored keys

    def check(ours, ranked):
        theirs = ranked[:4]
        assert ours.candidates == len(ranked)
        assert [i.item_id for i in ours.items] == [t[0] for t in theirs]
        np.testing.assert_allclose([i.similarity for i in ours.items], [t[1] for t in theirs], atol=1e-6)

    play_rounds(method, reference, tasks, keys, rng, rounds=8, batch=32, check=check)
