"""Similarity search over unit-norm keys: exact inner product, or an HNSW graph (faiss).

Exact search is the default and reproduces a full scan: every similarity is computed
and the top k are taken in the order of a stable descending sort (ties: the earlier
key first), so results equal a Python loop over the keys. HNSW (approximate) answers in
about log(n) but may miss neighbours; it is a config option for large memories.

The HNSW graph is a pure function of the key sequence: keys are inserted one at a
time, single-threaded, each with a level drawn from a generator seeded by its
position. Two runs that store the same keys build the same graph, a graph rebuilt
after a removal equals one built from the remaining keys, and a saved graph keeps
growing exactly as the unsaved one would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import faiss
import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from threadpoolctl import threadpool_limits

HNSW_FILE = "hnsw.faiss"
HNSW_PARAMS_FILE = "hnsw.json"
_LEVEL_SEED = 1_000_003  # the level of the key at position p is drawn from a generator seeded _LEVEL_SEED + p

# One thread for BLAS and OpenMP (numpy's and faiss's) in every process that retrieves:
# the products here are small, and on a 2-core machine shared with the LLM server or a
# parallel sweep, handing them to worker threads costs more than it gains (per-step
# overhead 2.9 -> 0.5 ms in scripts/bench_overhead.py; BENCHMARKS.md).
threadpool_limits(1)


class IndexConfig(BaseModel):
    """How an item store answers nearest-key queries."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["exact", "hnsw"] = Field("exact", description="exact: full scan, same results as a loop; hnsw: approximate graph search.")
    hnsw_m: int = Field(32, ge=2, le=256, description="HNSW: links per node (faiss M); more is more accurate, larger and slower to build.")
    ef_construction: int = Field(40, ge=1, description="HNSW: candidate list size while inserting a key.")
    ef_search: int = Field(64, ge=1, description="HNSW: candidate list size while searching (at least k is used).")


@dataclass
class Hits:
    """One query's answer: positions of the chosen keys (most similar first) and their similarities."""

    positions: np.ndarray  # int64
    similarities: np.ndarray  # float32
    candidates: int  # keys at or above the floor (exact), or returned by the index above it (hnsw)


def inner_products(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """queries @ keys.T as float32, shape (len(queries), len(keys)).

    One query: faiss's single-threaded SIMD kernel (faster than numpy's gemv when chosen,
    see BENCHMARKS.md); several: one BLAS matrix product.
    """
    keys = np.ascontiguousarray(keys, dtype=np.float32)
    queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
    if len(queries) == 1 and len(keys):
        out = np.empty((1, len(keys)), dtype=np.float32)
        faiss.fvec_inner_products_ny(faiss.swig_ptr(out), faiss.swig_ptr(queries), faiss.swig_ptr(keys), keys.shape[1], len(keys))
        return out
    return queries @ keys.T


def top_k(similarities: np.ndarray, k: int, floor: float = -np.inf) -> tuple[np.ndarray, int]:
    """Positions of the k largest values >= floor, as the first k of a stable descending sort.

    Returns (positions, number of values >= floor). Linear time: a partition finds the
    k-th value, then only the values at or above it are sorted.
    """
    # Array methods rather than np.* functions: these run per query, and the wrappers cost more than the work.
    eligible = (similarities >= floor).nonzero()[0] if floor > -np.inf else None
    values = similarities if eligible is None else similarities[eligible]
    if k == 1 and len(values):
        chosen = values.argmax().reshape(1)  # the first maximum, as a stable sort puts it
    elif len(values) > 4 * k:
        negated = -values
        negated.partition(k - 1)
        candidates = (values >= -negated[k - 1]).nonzero()[0]  # ties at the k-th value stay, in position order
        chosen = candidates[(-values[candidates]).argsort(kind="stable")[:k]]
    else:
        chosen = (-values).argsort(kind="stable")[:k]
    return (chosen if eligible is None else eligible[chosen]), len(values)


class HNSWIndex:
    """A faiss HNSW graph (inner product) over the keys of one store, positions as ids."""

    def __init__(self, dim: int, config: IndexConfig):
        self.config = config
        self.index = faiss.IndexHNSWFlat(dim, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = config.ef_construction

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def add(self, keys: np.ndarray) -> None:
        keys = np.ascontiguousarray(keys, dtype=np.float32)
        for row in keys:
            self.index.hnsw.rng = faiss.RandomGenerator(_LEVEL_SEED + len(self))
            self.index.add(row.reshape(1, -1))

    def search(self, queries: np.ndarray, k: int, floor: float) -> list[Hits]:
        k = min(k, len(self))
        if k == 0:
            return [Hits(np.zeros(0, np.int64), np.zeros(0, np.float32), 0) for _ in queries]
        params = faiss.SearchParametersHNSW(efSearch=max(k, self.config.ef_search))
        sims, positions = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k, params=params)
        hits = []
        for row_sims, row_positions in zip(sims, positions):
            keep = (row_positions >= 0) & (row_sims >= floor)
            row_sims, row_positions = row_sims[keep], row_positions[keep]
            order = np.lexsort((row_positions, -row_sims))  # ties: the earlier key first, as exact search
            hits.append(Hits(row_positions[order].astype(np.int64), row_sims[order], int(keep.sum())))
        return hits

    def nbytes(self) -> int:
        """Bytes of the index's copy of the keys and of its graph (links, levels, offsets)."""
        hnsw = self.index.hnsw
        return len(self) * self.index.d * 4 + hnsw.neighbors.size() * 4 + hnsw.levels.size() * 4 + hnsw.offsets.size() * 8

    def save(self, path: Path) -> None:
        faiss.write_index(self.index, str(path / HNSW_FILE))
        (path / HNSW_PARAMS_FILE).write_text(json.dumps(self._params(), sort_keys=True))

    @classmethod
    def build(cls, keys: np.ndarray, config: IndexConfig) -> HNSWIndex:
        graph = cls(keys.shape[1], config)
        graph.add(keys)
        return graph

    @classmethod
    def load_or_build(cls, path: Path, keys: np.ndarray, config: IndexConfig) -> HNSWIndex:
        """The graph saved under `path` if it was built with these parameters over these keys, else a new build."""
        if (path / HNSW_PARAMS_FILE).exists() and (path / HNSW_FILE).exists():
            saved = faiss.read_index(str(path / HNSW_FILE))
            same_keys = saved.ntotal == len(keys) and saved.d == keys.shape[1] and np.array_equal(faiss.vector_to_array(faiss.downcast_index(saved.storage).codes).view(np.float32), keys.ravel())
            graph = cls(keys.shape[1], config)
            if same_keys and json.loads((path / HNSW_PARAMS_FILE).read_text()) == graph._params():
                graph.index = saved
                return graph
        return cls.build(keys, config)

    def _params(self) -> dict:
        return {"hnsw_m": self.config.hnsw_m, "ef_construction": self.config.ef_construction, "level_seed": _LEVEL_SEED}
