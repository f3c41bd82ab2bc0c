"""Resident memory per stored memory for none, rag and memrl, against the raw payload.

Each (method, size) runs in a fresh subprocess: the method learns `size` episodes in
mini-batches of 32 through its real `learn`, and the growth of the process's resident
set (VmRSS, after garbage collection) is compared with the payload it stores: content
bytes plus key bytes (the method's own `stats().bytes`). The episodes imitate text
tasks: 384-dimensional task keys (MiniLM's size), each task played in 5 epochs (so
MemRL's intent groups hold ~5 memories), a trajectory of 8 turns (~1 KB of text);
--dim 32 --turns 1 gives the synthetic env's small memories instead.

    python -m scripts.bench_memory_growth --sizes 2000 5000 10000 20000 40000 --out results/bench/memory_growth.json
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from memrl_bench.core import registry
from memrl_bench.core.schema import Episode, Task, Turn
from memrl_bench.methods.base import Experience, MethodContext
from scripts.bench_retrieval import REPO, rss_bytes

EPOCHS = 5
BATCH = 32


class Episodes:
    """n training episodes: n / EPOCHS tasks, each played once per epoch; made before measuring, batches built on demand."""

    def __init__(self, n: int, dim: int, turns: int, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.turns = turns
        self.n_tasks = max(1, n // EPOCHS)
        self.keys = self.rng.standard_normal((self.n_tasks, dim)).astype(np.float32)
        self.keys /= np.linalg.norm(self.keys, axis=1, keepdims=True)
        self.tasks = [Task(f"bench/train/{i:06d}", "train", f"put a clean mug {i} in the coffee machine") for i in range(self.n_tasks)]
        self.order = np.concatenate([self.rng.permutation(self.n_tasks) for _ in range(EPOCHS)])[:n]

    def batches(self):
        for start in range(0, len(self.order), BATCH):
            yield [self._experience(j, int(t), start // BATCH) for j, t in enumerate(self.order[start : start + BATCH], start=start)]

    def _experience(self, j: int, t: int, batch_index: int) -> Experience:
        epoch = 1 + j // self.n_tasks
        turns = [
            Turn(
                action=f"go to countertop {k} and take mug {t}",
                observation=f"You arrive at countertop {k}. On it you see a mug {t}, a spoon and a plate ({j}).",
            )
            for k in range(self.turns)
        ]
        success = bool(self.rng.random() < 0.5)
        episode = Episode(
            f"train-e{epoch:02d}-{j:07d}-s0",
            self.tasks[t].id,
            "train",
            "train",
            epoch,
            batch_index,
            j,
            success,
            float(success),
            "ok",
            turns=turns,
        )
        return Experience(episode, self.tasks[t], self.keys[t])


def measure(method_name: str, n: int, dim: int, turns: int) -> dict:
    method = registry.get("method", method_name)({"write_with_llm": False} if method_name == "memrl" else {}, MethodContext(seed=0))
    episodes = Episodes(n, dim, turns)
    method.learn(next(episodes.batches()))  # first use (prompt templates, lazy imports) before the baseline
    gc.collect()
    before = rss_bytes()
    for batch in episodes.batches():
        if batch[0].episode.order_index >= BATCH:
            method.learn(batch)
    gc.collect()
    resident = rss_bytes() - before
    stats = method.stats()
    return {
        "method": method_name,
        "stored": stats.items,
        "groups": stats.groups,
        "payload_bytes": stats.bytes,
        "rss_delta_bytes": resident,
        "rss_over_payload": resident / stats.bytes if stats.bytes else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="+", default=["none", "rag", "memrl"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000, 20000, 40000])
    parser.add_argument("--dim", type=int, default=384, help="key dimension (384: MiniLM; the synthetic env uses 32)")
    parser.add_argument("--turns", type=int, default=8, help="turns per trajectory (8 make ~1 KB of text)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--one", nargs=2, default=None, help=argparse.SUPPRESS)  # internal: METHOD SIZE, print JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]), args.dim, args.turns)))
        return
    rows, fits = [], {}
    for name in args.methods:
        for n in args.sizes:
            command = [
                sys.executable,
                "-m",
                "scripts.bench_memory_growth",
                "--dim",
                str(args.dim),
                "--turns",
                str(args.turns),
                "--one",
                name,
                str(n),
            ]
            done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
            row = {"episodes": n, **json.loads(done.stdout.strip().splitlines()[-1])}
            rows.append(row)
            ratio = f"{row['rss_over_payload']:.2f}" if row["rss_over_payload"] is not None else "-"
            print(
                f"{name:<6} episodes {n:>7}  stored {row['stored']:>7}  payload {row['payload_bytes'] / 2**20:8.2f} MiB  resident "
                f"+{row['rss_delta_bytes'] / 2**20:8.2f} MiB  resident/payload {ratio}",
                flush=True,
            )
        mine = [r for r in rows if r["method"] == name]
        x = np.array([r["episodes"] for r in mine], dtype=float)
        y = np.array([r["rss_delta_bytes"] for r in mine], dtype=float)
        slope, intercept = np.polyfit(x, y, 1)
        residual = y - (slope * x + intercept)
        r2 = 1 - (residual**2).sum() / ((y - y.mean()) ** 2).sum() if y.std() > 0 else None
        payload = np.array([r["payload_bytes"] for r in mine], dtype=float)
        fits[name] = {
            "resident_bytes_per_episode": slope,
            "intercept_bytes": intercept,
            "r2": r2,
            "payload_bytes_per_episode": float(np.polyfit(x, payload, 1)[0]),
        }
        print(
            f"{name:<6} linear fit: {slope:,.0f} resident bytes per episode (payload {fits[name]['payload_bytes_per_episode']:,.0f}), "
            f"intercept {intercept / 2**20:.2f} MiB, R^2 {r2 if r2 is None else round(r2, 4)}",
            flush=True,
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"argv": sys.argv, "rows": rows, "fits": fits}, indent=1))


if __name__ == "__main__":
    main()
