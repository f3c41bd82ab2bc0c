"""Latency and memory of one MemRL retrieval at 10^3..10^6 stored memories, beside a reference.

The reference (`ReferenceMemRL`) is a straightforward re-implementation of the official
algorithm: a Python loop over the stored intents computing one cosine at a time, then
phase B on Python lists. memrl_bench's MemRL is measured with the exact index and with
HNSW, on the same bank and queries; exact selections are checked against the reference.

The bank: 384-dimensional unit keys (MiniLM's size). Memories come in intent groups of
1-10 (uniform; MemRL groups the memories of one task across epochs, so group size is
about the number of epochs a task was played), groups in topics of 20 whose keys have
cosine ~0.73 with each other (below the 0.9 joining threshold, as distinct groups
must), and queries drawn from a topic, so phase A finds ~20 intents above the 0.5
threshold and pools the top 5 groups (~27 memories). Q values are uniform in [-1, 1].
The bank is written as a MemRL snapshot and loaded with `restore`, the public path.

Each size runs in its own subprocess so resident-memory deltas do not mix:
    python -m scripts.bench_retrieval --sizes 1000 10000 100000 1000000 --out results/bench/retrieval.json
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memrl_bench.core.schema import Task
from memrl_bench.methods.base import MethodContext, Query
from memrl_bench.methods.memrl import MemRL, MemRLConfig

REPO = Path(__file__).resolve().parent.parent
DIM = 384
GROUPS_PER_TOPIC = 20
KEY_NOISE = 0.6  # a group key is its topic centre plus this much noise (cos ~0.86 to the centre)


def rss_bytes() -> int:
    """Resident set size of this process (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("VmRSS not found in /proc/self/status")


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


# ---- the bank ---------------------------------------------------------------------
class Bank:
    """A synthetic MemRL memory: group keys, member counts, per-memory Q and counts."""

    def __init__(self, n_memories: int, seed: int = 0, dim: int = DIM):
        rng = np.random.default_rng(seed)
        sizes = rng.integers(1, 11, size=n_memories)  # more than enough groups
        ends = np.cumsum(sizes)
        n_groups = int(np.searchsorted(ends, n_memories) + 1)
        sizes = sizes[:n_groups]
        sizes[-1] -= ends[n_groups - 1] - n_memories
        self.group_sizes = sizes
        n_topics = math.ceil(n_groups / GROUPS_PER_TOPIC)
        self.centres = _unit(rng.standard_normal((n_topics, dim)))
        self.group_topic = np.arange(n_groups) % n_topics
        self.group_keys = _unit(self.centres[self.group_topic] + KEY_NOISE * rng.standard_normal((n_groups, dim)) / np.sqrt(dim))
        self.member_group = np.repeat(np.arange(n_groups), sizes)
        self.q_value = rng.uniform(-1, 1, size=n_memories)
        self.successes = rng.integers(0, 10, size=n_memories)
        self.failures = rng.integers(0, 10, size=n_memories)
        self.ids = [f"train-e01-{i:07d}-s0" for i in range(n_memories)]
        self.content_chars = 300
        self._rng = rng

    def queries(self, n: int, seed: int = 1) -> np.ndarray:
        rng = np.random.default_rng(seed)
        topics = rng.integers(0, len(self.centres), size=n)
        return _unit(self.centres[topics] + KEY_NOISE * rng.standard_normal((n, self.centres.shape[1])) / np.sqrt(self.centres.shape[1]))

    @staticmethod
    def group_text(g: int) -> str:
        return f"synthetic intent {g}"

    def content(self, i: int) -> str:
        head = f"Task: synthetic task {i}\nOutcome: {'success' if self.successes[i] >= self.failures[i] else 'failure'}\n"
        return head + "x" * (self.content_chars - len(head))

    def write_snapshot(self, path: Path) -> None:
        """The bank in MemRL's snapshot format (items.jsonl + keys.npy, groups/ likewise)."""
        path.mkdir(parents=True, exist_ok=True)
        (path / "groups").mkdir(exist_ok=True)
        member_keys = self.group_keys[self.member_group]
        with open(path / "items.jsonl", "w") as f:
            for i, item_id in enumerate(self.ids):
                success = bool(self.successes[i] >= self.failures[i])
                fields = {
                    "q_value": float(self.q_value[i]),
                    "visits": int(self.successes[i] + self.failures[i]),
                    "successes": int(self.successes[i]),
                    "failures": int(self.failures[i]),
                    "group": int(self.member_group[i]),
                }
                f.write(
                    json.dumps(
                        {"id": item_id, "content": self.content(i), "provenance": _provenance(item_id, success), "fields": fields},
                        sort_keys=True,
                    )
                    + "\n"
                )
        np.save(path / "keys.npy", member_keys)
        starts = np.concatenate([[0], np.cumsum(self.group_sizes)])
        with open(path / "groups" / "items.jsonl", "w") as f:
            for g in range(len(self.group_sizes)):
                members = self.ids[starts[g] : starts[g + 1]]
                f.write(
                    json.dumps(
                        {
                            "id": f"group-{g}",
                            "content": self.group_text(g),
                            "provenance": _provenance(members[0], True),
                            "fields": {"members": members},
                        },
                        sort_keys=True,
                    )
                    + "\n"
                )
        np.save(path / "groups" / "keys.npy", self.group_keys)


def _provenance(episode_id: str, success: bool) -> dict:
    return {"task_id": f"bench/{episode_id}", "split": "train", "phase": "train", "epoch": 1, "episode_id": episode_id, "success": success}


# ---- the reference ------------------------------------------------------------------
@dataclass
class ReferenceEpisode:
    """A played episode as the reference's learn takes it, with its retrieval's phase A list."""

    episode_id: str
    text: str
    key: np.ndarray
    success: bool
    used: list[str]  # ids of the injected memories
    phase_a: list[tuple[str, float]]  # (group text, sim) of its retrieval
    returned: bool  # whether its retrieval returned memories


class ReferenceMemRL:
    """MemRL as the official code writes it (memory_service.py retrieve_query, update_values,
    add_memories): Python loops over a dict of groups keyed by task text, one cosine at a
    time in Python floats. Greedy selection; the harness's switches for the official quirks
    are honoured, so that their corrections are checked too.
    """

    def __init__(self, config: MemRLConfig):
        self.config = config
        self.groups: dict[str, list[str]] = {}  # task text -> member ids, in founding order
        self.embeddings: dict[str, list[float]] = {}  # task text -> key
        self.q: dict[str, float] = {}

    @staticmethod
    def cosine(a: np.ndarray, b: np.ndarray) -> float:
        """As the official retrieve_query: Python floats, sums left to right."""
        a, b = np.asarray(a).tolist(), np.asarray(b).tolist()
        norm_a = math.sqrt(sum(x * x for x in a)) or 1e-8
        norm_b = math.sqrt(sum(x * x for x in b)) or 1e-8
        return sum(x * y for x, y in zip(a, b)) / (norm_a * norm_b)

    @classmethod
    def from_bank(cls, bank: Bank, config: MemRLConfig) -> ReferenceMemRL:
        ref = cls(config)
        start = 0
        for g, size in enumerate(bank.group_sizes):
            ref.groups[bank.group_text(g)] = bank.ids[start : start + size]
            ref.embeddings[bank.group_text(g)] = bank.group_keys[g].tolist()
            ref.q.update((bank.ids[i], float(bank.q_value[i])) for i in range(start, start + size))
            start += size
        return ref

    def phase_a(self, key: np.ndarray) -> list[tuple[str, float]]:
        """(group text, sim) of the top k_groups groups with sim >= sim_threshold, most similar first."""
        found = [(text, self.cosine(key, vector)) for text, vector in self.embeddings.items()]
        found = [pair for pair in found if pair[1] >= self.config.sim_threshold]
        found.sort(key=lambda pair: pair[1], reverse=True)  # stable: equal sims keep group order
        return found[: self.config.k_groups]

    def ranked(self, key: np.ndarray) -> list[tuple[str, float, float, float]]:
        """(id, similarity, q, score) of the pool after q_min, best first ([] when the retrieval returns nothing)."""
        c = self.config
        pool = []
        for text, sim in self.phase_a(key):
            for memory_id in self.groups[text]:
                q = self.q[memory_id]
                if c.recency_boost > 0:
                    q += c.recency_boost
                if c.q_floor is not None:
                    q = max(c.q_floor, q)
                pool.append((memory_id, sim, q))
        kept = [p for p in pool if p[2] >= c.q_min]
        if not kept:
            return []
        q_z = _zscore_list([p[2] for p in kept], [p[2] for p in (kept if c.q_stats_after_q_min else pool)])
        sims = [p[1] for p in kept]
        sim_z = [(s - c.sim_mean) / c.sim_std for s in sims] if c.sim_normalisation == "fixed" else _zscore_list(sims, sims)
        scores = [s * (1 - c.lambda_) + min(3.0, max(-3.0, q)) * c.lambda_ for s, q in zip(sim_z, q_z)]
        order = sorted(range(len(kept)), key=lambda i: scores[i], reverse=True)  # stable
        return [(kept[i][0], kept[i][1], kept[i][2], scores[i]) for i in order]

    def retrieve(self, key: np.ndarray) -> list[tuple[str, float, float, float]]:
        """(id, similarity, q, score) of the chosen memories, best first."""
        return self.ranked(key)[: self.config.k_select]

    def learn(self, episodes: list[ReferenceEpisode]) -> None:
        """Q updates for every episode of the batch, in order, then one new memory per episode."""
        c = self.config
        for ep in episodes:
            target = c.reward_success if ep.success else c.reward_failure
            for memory_id in ep.used:
                q = (1.0 - c.alpha) * self.q[memory_id] + c.alpha * (target + c.gamma * 0.0)
                self.q[memory_id] = q if c.q_floor is None else max(c.q_floor, q)
        founded: list[str] = []  # groups founded in this batch
        for ep in episodes:
            candidates = ep.phase_a if ep.returned or c.join_after_empty_retrieval else []
            if c.group_within_batch:
                candidates = candidates + [(text, self.cosine(ep.key, self.embeddings[text])) for text in founded]
            matched, best = None, -math.inf
            for text, sim in candidates:
                if sim >= c.add_similarity_threshold and sim > best:
                    matched, best = text, sim
            if matched is not None:
                self.groups[matched].append(ep.episode_id)
            elif ep.text in self.groups and c.keep_repeated_task_members:
                self.groups[ep.text].append(ep.episode_id)
            else:  # a new group, or the text's group taken over (its members orphaned)
                founded += [] if ep.text in self.groups else [ep.text]
                self.groups[ep.text] = [ep.episode_id]
                self.embeddings[ep.text] = np.asarray(ep.key).tolist()
            self.q[ep.episode_id] = c.q_init if ep.success or c.q_init_failure is None else c.q_init_failure


def _zscore_list(values: list[float], stats_of: list[float]) -> list[float]:
    n = len(stats_of)
    mean = sum(stats_of) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in stats_of) / n) if n > 1 else 0.0
    std = std if std > 1e-9 else 1.0
    return [(v - mean) / std for v in values]


# ---- measuring --------------------------------------------------------------------
def _queries(keys: np.ndarray, phase: str = "validation") -> list[Query]:
    return [Query(Task(f"bench/q{i}", "validation", "query"), k, f"validation-e01-{i:05d}-s0", phase) for i, k in enumerate(keys)]


def _percentiles(seconds: list[float]) -> dict:
    ms = np.asarray(seconds) * 1e3
    return {"p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)), "n": len(ms)}


def _time_each(fn, items) -> tuple[list[float], list]:
    times, results = [], []
    for item in items:
        t0 = time.perf_counter()
        results.append(fn(item))
        times.append(time.perf_counter() - t0)
    return times, results


def load_memrl(snapshot: Path, index: dict) -> MemRL:
    method = MemRL({"write_with_llm": False, "index": index}, MethodContext(seed=0))
    method.restore(snapshot)
    return method


def measure_size(n: int, n_queries: int, n_reference: int, batch: int, hnsw: dict) -> dict:
    """One size, in this process: build the bank, then each implementation in turn (one in memory at a time)."""
    bank = Bank(n)
    queries = bank.queries(n_queries)
    chunks = [_queries(queries[i : i + batch]) for i in range(0, len(queries) - batch + 1, batch)]
    out: dict = {"memories": n, "groups": int(len(bank.group_sizes)), "dim": DIM}
    config = MemRLConfig(write_with_llm=False)
    gc.collect()
    before = rss_bytes()
    reference = ReferenceMemRL.from_bank(bank, config)
    gc.collect()
    out["reference_rss_bytes"] = rss_bytes() - before  # its keys are views of the bank's: Python structure only
    times, reference_results = _time_each(reference.retrieve, list(queries[:n_reference]))
    out["reference"] = _percentiles(times)
    del reference
    chosen: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "snapshot"
        bank.write_snapshot(snapshot)
        for name, index in (("exact", {"kind": "exact"}), ("hnsw", {"kind": "hnsw", **hnsw})):
            gc.collect()
            before = rss_bytes()
            t0 = time.perf_counter()
            method = load_memrl(snapshot, index)
            out[f"{name}_restore_s"] = time.perf_counter() - t0
            gc.collect()
            out[f"{name}_rss_bytes"] = rss_bytes() - before
            out[f"{name}_index_bytes"] = method.group_keys.index_nbytes()
            out["payload_bytes"] = method.stats().bytes
            method.retrieve_batch(chunks[0])  # warm-up (first BLAS call, caches)
            times, chosen[name] = _time_each(method.retrieve, _queries(queries))
            out[name] = _percentiles(times)
            times, _ = _time_each(method.retrieve_batch, chunks)
            out[f"{name}_batch{batch}_per_query"] = _percentiles([t / batch for t in times])
            del method
    exact_ids = [[r.item_id for r in result.items] for result in chosen["exact"]]
    hnsw_ids = [[r.item_id for r in result.items] for result in chosen["hnsw"]]
    out["hnsw_same_selection_share"] = float(np.mean([a == b for a, b in zip(exact_ids, hnsw_ids)]))

    same = 0
    max_score_diff = 0.0
    for ours, theirs in zip(chosen["exact"], reference_results):
        if [r.item_id for r in ours.items] == [t[0] for t in theirs]:
            same += 1
            max_score_diff = max([max_score_diff] + [abs(r.score - t[3]) for r, t in zip(ours.items, theirs)])
    out["exact_matches_reference"] = f"{same}/{len(reference_results)}"
    out["max_score_difference"] = max_score_diff
    for name in ("exact", "hnsw"):
        out[f"speedup_{name}_p50"] = out["reference"]["p50_ms"] / out[name]["p50_ms"]
        out[f"speedup_{name}_batch_p50"] = out["reference"]["p50_ms"] / out[f"{name}_batch{batch}_per_query"]["p50_ms"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    parser.add_argument("--queries", type=int, default=320, help="queries timed for memrl_bench (one at a time, then in batches)")
    parser.add_argument(
        "--reference-queries",
        type=int,
        nargs="+",
        default=[200, 100, 30, 10],
        help="queries timed for the reference, per size (last value repeats)",
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hnsw-m", type=int, default=32)
    parser.add_argument("--ef-construction", type=int, default=40)
    parser.add_argument("--ef-search", type=int, default=64)
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # internal: measure one size, print JSON
    args = parser.parse_args()
    hnsw = {"hnsw_m": args.hnsw_m, "ef_construction": args.ef_construction, "ef_search": args.ef_search}
    if args.one is not None:
        i = args.sizes.index(args.one)
        n_reference = args.reference_queries[min(i, len(args.reference_queries) - 1)]
        print(json.dumps(measure_size(args.one, args.queries, n_reference, args.batch, hnsw)))
        return
    rows = []
    for n in args.sizes:
        done = subprocess.run(
            [sys.executable, "-m", "scripts.bench_retrieval", *sys.argv[1:], "--one", str(n)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"n={n:>8} groups={row['groups']:>7}  exact p50 {row['exact']['p50_ms']:.3f} p95 {row['exact']['p95_ms']:.3f} ms"
            f" | batch/q p50 {row[f'exact_batch{args.batch}_per_query']['p50_ms']:.3f}"
            f" | hnsw p50 {row['hnsw']['p50_ms']:.3f} p95 {row['hnsw']['p95_ms']:.3f} ms (same selection "
            f"{row['hnsw_same_selection_share']:.2f})"
            f" | reference p50 {row['reference']['p50_ms']:.1f} p95 {row['reference']['p95_ms']:.1f} ms (n={row['reference']['n']})"
            f" | speedup exact {row['speedup_exact_p50']:.0f}x batch {row['speedup_exact_batch_p50']:.0f}x hnsw "
            f"{row['speedup_hnsw_p50']:.0f}x"
            f" | exact==reference {row['exact_matches_reference']} | RSS exact {row['exact_rss_bytes'] / 2**20:.1f} MiB"
            f" hnsw {row['hnsw_rss_bytes'] / 2**20:.1f} MiB (index {row['hnsw_index_bytes'] / 2**20:.1f}) reference (lists over shared "
            f"keys) {row['reference_rss_bytes'] / 2**20:.1f} MiB"
            f" | hnsw build {row['hnsw_restore_s']:.0f} s",
            flush=True,
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"argv": sys.argv, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
