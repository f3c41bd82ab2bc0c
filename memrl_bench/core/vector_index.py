"""Similarity search over stored keys: exact cosine, or an HNSW graph (faiss).

Similarities are cosines taken in float64 exactly as the official MemRL code takes
them: the products of a key and the query summed left to right, divided by the
product of their norms (each a left-to-right sum of squares). Threshold decisions at
exactly 0.5 or 0.9 therefore fall on the same side as there, identical keys get
bit-identical similarities (exact ties stay ties), and a key's similarity does not
depend on its position or on the other queries of a batch.

Exact search is the default and reproduces a full scan: it takes the top k in the
order of a stable descending sort of those similarities (ties: the earlier key
first), so results equal a Python loop over the keys. To stay fast it screens every
key with a float32 product (one BLAS call for a batch) and computes the float64
cosine only for keys the screen cannot rule out: a float32 dot product of d terms is
within d * 2^-24 of the exact cosine (relative to the norms), and every key within
twice that margin of a decision is recomputed. HNSW (approximate) answers in about
log(n) but may miss neighbours; it is a config option for large memories, and the
similarities of what it returns are the same float64 cosines.

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
from pydantic import Field
from threadpoolctl import threadpool_limits

from memrl_bench.core.config import Settings

HNSW_FILE = "hnsw.faiss"
HNSW_PARAMS_FILE = "hnsw.json"
_CHUNK_ROWS = 4096  # rows per float64 chunk when computing norms
_LEVEL_SEED = 1_000_003  # the level of the key at position p is drawn from a generator seeded _LEVEL_SEED + p

# One thread for BLAS and OpenMP (numpy's and faiss's) in every process that retrieves:
# the products here are small, and on a 2-core machine shared with the LLM server or a
# parallel sweep, handing them to worker threads costs more than it gains (per-step
# overhead 2.9 -> 0.5 ms in scripts/bench_overhead.py; BENCHMARKS.md).
threadpool_limits(1)


class IndexConfig(Settings):
    """How an item store answers nearest-key queries."""

    kind: Literal["exact", "hnsw"] = Field("exact", description="exact: full scan, same results as a loop; hnsw: approximate graph search.")
    hnsw_m: int = Field(32, ge=2, le=256, description="HNSW: links per node (faiss M); more is more accurate, larger and slower to build.")
    # faiss takes C ints: 2**31 ended a run (and each resume) in an OverflowError traceback (the thirty-first round)
    ef_construction: int = Field(40, ge=1, le=2**31 - 1, description="HNSW: candidate list size while inserting a key.")
    ef_search: int = Field(64, ge=1, le=2**31 - 1, description="HNSW: candidate list size while searching (at least k is used).")


@dataclass
class Hits:
    """One query's answer: positions of the chosen keys (most similar first) and their similarities."""

    positions: np.ndarray  # int64
    similarities: np.ndarray  # float64 cosines (see the module docstring)
    candidates: int  # keys at or above the floor (exact), or returned by the index above it (hnsw)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def empty_hits() -> Hits:
    return Hits(np.zeros(0, np.int64), np.zeros(0, np.float64), 0)


def _column_sums(columns: np.ndarray) -> np.ndarray:
    """Each column's sum of a C-contiguous float64 matrix, added top to bottom as Python's sum() adds.

    numpy sums a contiguous row pairwise, but reduces over the outer axis one row after
    another; a single column is given a zero neighbour, as numpy would sum it as a row.
    """
    if columns.shape[1] == 1:
        return np.hstack([columns, np.zeros_like(columns)]).sum(axis=0)[:1]
    return columns.sum(axis=0)


def row_norms(rows: np.ndarray) -> np.ndarray:
    """Each row's length in float64, summed left to right as math.sqrt(sum(x * x for x in row)); 1e-8 for a zero row (official)."""
    rows = np.atleast_2d(rows)
    norms = np.empty(len(rows))
    for start in range(0, len(rows), _CHUNK_ROWS):  # in chunks: a float64 copy of a whole store would be 2x its keys
        columns = rows[start : start + _CHUNK_ROWS].T.astype(np.float64, order="C")
        norms[start : start + columns.shape[1]] = np.sqrt(_column_sums(columns * columns))
    norms[norms == 0] = 1e-8
    return norms


def cosines(keys: np.ndarray, key_norms: np.ndarray, query: np.ndarray, query_norm: float) -> np.ndarray:
    """Float64 cosine of `query` with every row of `keys`: sum(a * b) / (|query| * |key|), summed left to right.

    float32 inputs multiply exactly in float64 and the products are added in the order
    of Python's sum(), so the result is bit for bit the official code's (on Python <=
    3.11; 3.12 made sum() of floats compensated, a difference in the last bits).
    """
    if not len(keys):
        return np.zeros(0, dtype=np.float64)
    products = np.multiply(np.asarray(keys).T, np.asarray(query, dtype=np.float64)[:, None], order="C")
    return _column_sums(products) / (query_norm * key_norms)


def unit32(rows: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32 (the HNSW graph's inner product is then the cosine)."""
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    return np.ascontiguousarray(rows / row_norms(rows)[:, None], dtype=np.float32)


def screening_margin(dim: int) -> float:
    """A bound, with a factor 2 to spare, on |float32 screened cosine - exact cosine| for `dim`-dimensional keys.

    A float32 dot product of d terms errs by at most ~d * 2^-24 times the product of the
    norms, whatever the summation order (BLAS blocking, FMA); scaling by the two inverse
    norms adds a few more roundings.
    """
    return (dim + 8) * 2.0**-23


def exact_search(keys: np.ndarray, key_norms: np.ndarray, key_scale: np.ndarray, queries: np.ndarray, k: int, floor: float) -> list[Hits]:
    """Per query row: the k keys of highest float64 cosine >= floor, as the first k of a stable descending sort.

    `key_scale` is 1 / key_norms as float32, for the screen. Equal to computing every
    cosine exactly (see the module docstring), so a batch gives what its queries give
    one by one.
    """
    queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
    if not len(keys):
        return [empty_hits() for _ in queries]
    query_norms = row_norms(queries)
    screened = inner_products(keys, queries)
    screened *= key_scale
    screened *= (1.0 / query_norms).astype(np.float32)[:, None]
    margin = screening_margin(keys.shape[1])
    hits = []
    for query, query_norm, row in zip(queries, query_norms, screened):

        def exact(positions: np.ndarray, query=query, query_norm=query_norm) -> np.ndarray:
            return cosines(keys[positions], key_norms[positions], query, query_norm)

        hits.append(_exact_top_k(row, k, floor, margin, exact))
    return hits


def _exact_top_k(screened: np.ndarray, k: int, floor: float, margin: float, exact) -> Hits:
    """Top k by exact cosine >= floor, recomputing exactly only the keys within the margin of a decision."""
    bounded = floor > -np.inf
    # Keys that may reach the floor; keys screened below floor - margin cannot.
    positions = (screened >= floor - margin).nonzero()[0] if bounded else np.arange(len(screened))
    values = screened[positions]
    if len(values) > k:
        # The exact k-th largest is within the margin of the screened one, so every key of
        # the exact top k is screened within twice the margin of it.
        kth = -np.partition(-values, k - 1)[k - 1]
        shortlist = positions[values >= kth - 2 * margin]
    else:
        shortlist = positions
    sims = exact(shortlist)
    keep = sims >= floor
    shortlist, sims = shortlist[keep], sims[keep]
    order = (-sims).argsort(kind="stable")[:k]  # shortlist is in position order: ties keep the earlier key first
    count = len(screened)
    if bounded:
        near = (values < floor + margin).nonzero()[0]  # keys the screen cannot place on either side of the floor
        count = len(values) - len(near) + (int((exact(positions[near]) >= floor).sum()) if len(near) else 0)
    return Hits(shortlist[order], sims[order], count)


def inner_products(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """queries @ keys.T as float32, shape (len(queries), len(keys)): the screen of exact search.

    One query: faiss's single-threaded SIMD kernel (faster than numpy's gemv when chosen,
    see BENCHMARKS.md); several: one BLAS matrix product. The two may differ in the last
    bits, as may keys in different rows of one product: decisions are never taken on these.
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
    """A faiss HNSW graph (inner product of unit-length copies) over the keys of one store, positions as ids."""

    def __init__(self, dim: int, config: IndexConfig):
        self.config = config
        self.index = faiss.IndexHNSWFlat(dim, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = config.ef_construction

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def add(self, keys: np.ndarray) -> None:
        for row in unit32(keys):
            self.index.hnsw.rng = faiss.RandomGenerator(_LEVEL_SEED + len(self))
            self.index.add(row.reshape(1, -1))

    def search(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        """Per query: positions of the (approximately) k most similar keys, in no particular order."""
        k = min(k, len(self))
        if k == 0:
            return [np.zeros(0, np.int64) for _ in queries]
        params = faiss.SearchParametersHNSW(efSearch=max(k, self.config.ef_search))
        _, positions = self.index.search(unit32(queries), k, params=params)
        return [row[row >= 0].astype(np.int64) for row in positions]

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
            same_keys = (
                saved.ntotal == len(keys)
                and saved.d == keys.shape[1]
                and np.array_equal(faiss.vector_to_array(faiss.downcast_index(saved.storage).codes).view(np.float32), unit32(keys).ravel())
            )
            graph = cls(keys.shape[1], config)
            if same_keys and json.loads((path / HNSW_PARAMS_FILE).read_text()) == graph._params():
                graph.index = saved
                return graph
        return cls.build(keys, config)

    def _params(self) -> dict:
        return {"hnsw_m": self.config.hnsw_m, "ef_construction": self.config.ef_construction, "level_seed": _LEVEL_SEED}
