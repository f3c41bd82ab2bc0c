"""The vector index and the item store: exact search semantics, HNSW determinism, store API."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from memrl_bench.core.schema import MemoryItem, Provenance
from memrl_bench.core.vector_index import HNSW_FILE, IndexConfig, inner_products, top_k
from memrl_bench.methods.base import ItemStore, save_array

HNSW = IndexConfig(kind="hnsw", hnsw_m=16, ef_construction=40, ef_search=128)


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def clustered_keys(n: int, dim: int = 24, topics: int = 10, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim))
    return unit(centres[rng.integers(0, topics, size=n)] + 0.5 * rng.standard_normal((n, dim)))


def item(i: int, **fields) -> MemoryItem:
    episode_id = f"train-e01-{i:05d}-s0"
    return MemoryItem(
        episode_id, f"content {i} " + "x" * (i % 7), Provenance(f"task/{i}", "train", "train", 1, episode_id, i % 2 == 0), dict(fields)
    )


def filled(keys: np.ndarray, index: IndexConfig | None = None, columns: tuple[str, ...] = ()) -> ItemStore:
    store = ItemStore(index=index, columns=columns)
    for i, key in enumerate(keys):
        store.add(item(i, q_value=float(i) / 10, visits=i), key)
    return store


@pytest.mark.parametrize("seed", range(30))
def test_top_k_is_the_prefix_of_a_stable_descending_sort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    values = rng.integers(-5, 6, size=n).astype(np.float32) / 5  # many ties
    k = int(rng.integers(1, 12)) if seed % 3 else 1
    floor = float(rng.choice([-np.inf, -0.5, 0.0, 0.6]))
    positions, count = top_k(values, k, floor)
    eligible = np.flatnonzero(values >= floor)
    expected = eligible[np.argsort(-values[eligible], kind="stable")[:k]]
    assert positions.tolist() == expected.tolist()
    assert count == len(eligible)


def test_inner_products_match_numpy_for_one_and_many_queries():
    keys = clustered_keys(500, dim=64)
    queries = clustered_keys(7, dim=64, seed=1)
    np.testing.assert_allclose(inner_products(keys, queries[:1]), queries[:1] @ keys.T, atol=1e-6)
    np.testing.assert_allclose(inner_products(keys, queries), queries @ keys.T, atol=1e-6)
    # Identical keys get bit-identical similarities, so ties stay ties.
    twins = np.concatenate([keys[:3], keys[:3]])
    sims = inner_products(twins, queries[:1])[0]
    assert sims[:3].tolist() == sims[3:].tolist()


def test_item_store_api_round_trips(tmp_path):
    keys = clustered_keys(130)
    store = filled(keys, columns=("q_value", "visits"))
    assert len(store) == 130 and store.keys.shape == (130, 24)
    assert store.get("train-e01-00007-s0").content.startswith("content 7")
    assert store.index_of("train-e01-00007-s0") == 7 and "train-e01-00007-s0" in store
    np.testing.assert_allclose(store.similarities(keys[3]), keys @ keys[3], atol=1e-6)
    assert store.similarities(keys[3], start=100).tolist() == store.similarities(keys[3])[100:].tolist()
    assert store.column("visits").tolist() == list(range(130))
    store.items[5].fields["q_value"] = 9.5  # fields write through to the column
    store.get("train-e01-00006-s0").fields.update(visits=60)
    assert store.column("q_value")[5] == 9.5 and store.column("visits")[6] == 60
    assert type(copy.deepcopy(store.items[5]).fields) is dict  # a copy is detached from the store
    assert store.nbytes() == sum(len(i.content.encode()) for i in store.items) + store.keys.nbytes

    store.save(tmp_path)
    loaded = ItemStore(columns=("q_value", "visits"))
    loaded.load(tmp_path)
    assert [i.to_dict() for i in loaded.items] == [i.to_dict() for i in store.items]
    assert loaded.keys.tobytes() == store.keys.tobytes()  # not renormalised on load
    assert loaded.column("q_value").tolist() == store.column("q_value").tolist()

    removed = {"train-e01-00005-s0", "train-e01-00100-s0"}
    store.remove(removed)
    assert len(store) == 128 and not any(i in store for i in removed)
    assert store.index_of("train-e01-00006-s0") == 5
    assert store.keys.tobytes() == np.delete(loaded.keys, [5, 100], axis=0).tobytes()
    assert store.column("visits").tolist() == [60 if v == 6 else v for v in range(130) if v not in (5, 100)]
    store.get("train-e01-00101-s0").fields["visits"] = -1  # after the removal its position is 99
    assert store.column("visits")[99] == -1


def test_an_empty_store_round_trips(tmp_path):
    for index in (None, HNSW):
        ItemStore(index=index, columns=("q_value",)).save(tmp_path)
        loaded = ItemStore(index=index, columns=("q_value",))
        loaded.load(tmp_path)
        assert len(loaded) == 0 and [len(h.positions) for h in loaded.search(np.ones((1, 4)), 3)] == [0]


@pytest.mark.parametrize("shape", [(0, 0), (5, 16), (3,)])
def test_keys_are_written_as_np_save_writes_them(tmp_path, shape):
    """save_array (Python's writes, so a full disk raises ENOSPC) gives np.save's bytes: old snapshots and their checksums still match."""
    keys = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.save(tmp_path / "numpy.npy", keys)
    save_array(tmp_path / "ours.npy", keys)
    assert (tmp_path / "ours.npy").read_bytes() == (tmp_path / "numpy.npy").read_bytes()


def test_item_store_refuses_bad_input():
    store = filled(clustered_keys(3))
    with pytest.raises(ValueError, match="already stored"):
        store.add(item(1), clustered_keys(1)[0])
    with pytest.raises(ValueError, match="key dimension 8 differs from stored 24"):
        store.add(item(99), np.ones(8))
    with pytest.raises(KeyError, match="'q_value' is a column"):
        ItemStore(columns=("q_value",)).add(item(1), np.ones(4))


def loop_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The official code's cosine: Python floats, sums left to right."""
    a, b = a.tolist(), b.tolist()
    return sum(x * y for x, y in zip(a, b)) / ((math.sqrt(sum(x * x for x in a)) or 1e-8) * (math.sqrt(sum(x * x for x in b)) or 1e-8))


@pytest.mark.parametrize("dim", [24, 301])
def test_exact_search_equals_a_loop_with_floor_and_ties(dim):
    keys = clustered_keys(200, dim=dim) * np.float32(1.5)  # not unit length: the cosine divides by the norms
    keys = np.concatenate([keys, keys[:50], np.zeros((2, dim), np.float32)])  # repeated keys (exact ties) and zero keys
    store = filled(keys)
    queries = clustered_keys(20, dim=dim, seed=3)
    for floor, k in ((0.2, 7), (-np.inf, 60), (0.0, 1)):
        batched = store.search(queries, k, floor=floor)
        for query, hits in zip(queries, batched):
            sims = [loop_cosine(query, key) for key in store.keys]
            expected = sorted((i for i, s in enumerate(sims) if s >= floor), key=lambda i: -sims[i])[:k]
            assert hits.positions.tolist() == expected
            assert hits.candidates == sum(s >= floor for s in sims)
            assert hits.similarities.tolist() == [sims[i] for i in expected]  # bit for bit
            one = store.search(query, k, floor=floor)[0]  # alone: a different screening kernel, the same answer
            assert one.positions.tolist() == hits.positions.tolist() and one.similarities.tolist() == hits.similarities.tolist()
    assert [len(h.positions) for h in ItemStore().search(queries[:2], 3)] == [0, 0]


def test_threshold_decisions_at_exactly_representable_cosines():
    """Cosines of exactly 0.5 and 0.9 (integer vectors) reach a floor of 0.5 / 0.9, as in float64 Python."""
    keys = np.array([[1, 1, 1, 1], [9, 3, 3, 1], [1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32)
    store = filled(keys)
    query = np.array([1, 0, 0, 0], dtype=np.float32)
    assert store.similarities(query).tolist() == [0.5, 0.9, 1.0, 0.0]
    assert store.search(query, 4, floor=0.9)[0].positions.tolist() == [2, 1]
    assert store.search(query, 4, floor=0.5)[0].positions.tolist() == [2, 1, 0]


def test_hnsw_finds_the_exact_neighbours_on_clustered_keys():
    keys = clustered_keys(3000, dim=32)
    exact, approx = filled(keys), filled(keys, index=HNSW)
    queries = clustered_keys(100, dim=32, seed=5)
    found = [set(h.positions.tolist()) for h in approx.search(queries, 10)]
    truth = [set(h.positions.tolist()) for h in exact.search(queries, 10)]
    recall = np.mean([len(f & t) / len(t) for f, t in zip(found, truth)])
    assert recall >= 0.9  # near-uniform 32-dim keys are a hard case; the benchmark reports recall on realistic ones
    assert approx.index_nbytes() > keys.nbytes  # its own copy of the keys plus the graph
    assert exact.index_nbytes() == 0


def test_hnsw_graph_is_a_function_of_the_key_sequence(tmp_path):
    keys = clustered_keys(400, dim=16)
    first, second = filled(keys[:300], index=HNSW), filled(keys[:300], index=HNSW)
    for name in "abrfwxy":
        (tmp_path / name).mkdir()
    first.save(tmp_path / "a")
    second.save(tmp_path / "b")
    assert (tmp_path / "a" / HNSW_FILE).read_bytes() == (tmp_path / "b" / HNSW_FILE).read_bytes()

    # A saved graph keeps growing as the unsaved one does (resume from a checkpoint).
    resumed = ItemStore(index=HNSW)
    resumed.load(tmp_path / "a")
    for i, key in enumerate(keys[300:], start=300):
        resumed.add(item(i), key)
        first.add(item(i), key)
    whole = filled(keys, index=HNSW)
    for store, name in ((resumed, "r"), (first, "f"), (whole, "w")):
        store.save(tmp_path / name)
    graphs = {(tmp_path / name / HNSW_FILE).read_bytes() for name in "rfw"}
    assert len(graphs) == 1

    # After a removal the graph equals one built from the remaining keys.
    whole.remove({item(i).id for i in range(0, 400, 3)})
    kept = [i for i in range(400) if i % 3]
    rebuilt = ItemStore(index=HNSW)
    for i in kept:
        rebuilt.add(item(i), keys[i])
    queries = clustered_keys(30, dim=16, seed=9)
    assert [h.positions.tolist() for h in whole.search(queries, 5)] == [h.positions.tolist() for h in rebuilt.search(queries, 5)]
    whole.save(tmp_path / "x")
    rebuilt.save(tmp_path / "y")
    assert (tmp_path / "x" / HNSW_FILE).read_bytes() == (tmp_path / "y" / HNSW_FILE).read_bytes()


@pytest.mark.parametrize("index", [None, HNSW])
def test_replace_puts_a_new_version_in_place(index):
    keys = clustered_keys(300, dim=16)
    store = filled(keys, index=index, columns=("q_value", "visits"))
    store.search(keys[:1], 3)  # an HNSW graph exists before the replacement
    moved = clustered_keys(1, dim=16, seed=11)[0]
    store.replace(item(7, q_value=-4.0, visits=70), moved)
    store.replace(item(8, q_value=-5.0, visits=80))
    assert store.get(item(7).id).fields["q_value"] == -4.0 and store.column("q_value")[7:9].tolist() == [-4.0, -5.0]
    store.get(item(8).id).fields["visits"] = 81  # the new version writes through as well
    assert store.column("visits")[8] == 81
    assert store.nbytes() == sum(len(i.content.encode()) for i in store.items) + store.keys.nbytes
    fresh = filled(np.concatenate([keys[:7], moved[None], keys[8:]]), index=index)
    queries = clustered_keys(20, dim=16, seed=12)
    assert [h.positions.tolist() for h in store.search(queries, 5)] == [h.positions.tolist() for h in fresh.search(queries, 5)]
    assert store.search(moved[None], 1)[0].positions.tolist() == [7]


def test_hnsw_load_rebuilds_when_the_saved_graph_does_not_fit(tmp_path):
    keys = clustered_keys(200, dim=16)
    filled(keys, index=HNSW).save(tmp_path)
    other = IndexConfig(kind="hnsw", hnsw_m=8, ef_construction=20, ef_search=32)
    loaded = ItemStore(index=other)
    loaded.load(tmp_path)  # different parameters: rebuilt, not the saved graph
    reference = filled(keys, index=other)
    queries = clustered_keys(10, dim=16, seed=2)
    assert [h.positions.tolist() for h in loaded.search(queries, 4)] == [h.positions.tolist() for h in reference.search(queries, 4)]
    (tmp_path / HNSW_FILE).unlink()
    missing = ItemStore(index=HNSW)
    missing.load(tmp_path)  # no graph file: built from the keys
    assert [h.positions.tolist() for h in missing.search(queries, 4)] == [
        h.positions.tolist() for h in filled(keys, index=HNSW).search(queries, 4)
    ]
