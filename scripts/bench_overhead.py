"""Harness overhead per step at 10^5 stored memories: everything but the LLM and the environment.

The real Runner plays mini-batches (`Runner._play_batch`, then `RunFolder.append_episodes`)
with an actor that answers at once, so what is timed is the harness: retrieval, the
episode records, the log write (JSON lines + fsync), MemRL's learn bookkeeping (Q
updates, group assignment, the new memories) and the memory stats. A step's overhead
is its batch's time divided by the batch size, as the runner accounts retrieval
latency; percentiles are over batches. The memory starts as the 384-dimensional bank
of scripts/bench_retrieval.py (restored from a snapshot) and grows as learn writes.

    python -m scripts.bench_overhead --memories 100000 --out results/bench/overhead.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from memrl_bench.actors.base import Actor, EnvPool, Job
from memrl_bench.core.schema import Outcome, Task, Turn
from memrl_bench.protocols import Batch
from memrl_bench.protocols.held_out import HeldOut
from memrl_bench.runner.loop import Runner, RunParts
from scripts.bench_retrieval import Bank, load_memrl


class InstantActor(Actor):
    """Answers every episode at once: the LLM and the environment are left out of the timing."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    async def play(self, job: Job, env) -> Outcome:
        success = bool(self.rng.random() < 0.5)
        return Outcome(success=success, reward=float(success), turns=[Turn(action="act", observation="success" if success else "failure")])

    async def play_batch(self, jobs: list[Job], pool: EnvPool) -> list[Outcome]:
        return [await self.play(job, None) for job in jobs]


def measure(memories: int, index: dict, batch_size: int, batches: int, log_dir: Path | None) -> dict:
    bank = Bank(memories)
    with tempfile.TemporaryDirectory() as tmp:
        bank.write_snapshot(Path(tmp) / "bank")
        method = load_memrl(Path(tmp) / "bank", index)
    keys = bank.queries(batch_size * batches, seed=7)
    tasks = [Task(f"bench/task/{i:06d}", "train", f"bench task {i}", intent=tuple(map(float, k))) for i, k in enumerate(keys)]
    with tempfile.TemporaryDirectory(dir=log_dir) as run_dir:
        runner = Runner({"seed": 0, "llm": {"max_concurrency": 1}}, Path(run_dir))
        parts = RunParts(
            env=None,
            method=method,
            actor=InstantActor(0),
            protocol=HeldOut(HeldOut.Settings()),
            roles={"train": "train"},
            tasks={"train": tasks},
            labels=[],
            llm=None,
            embedder=None,
        )
        pool = EnvPool(None, 1)
        runner.keys_for(tasks, None)  # the runner caches every task's key once per run
        per_step: list[float] = []
        for b in range(batches):
            batch = Batch("train", "train", 2, b, tuple(tasks[b * batch_size : (b + 1) * batch_size]), b * batch_size)
            t0 = time.perf_counter()
            records = runner._play_batch(parts, batch, pool)
            runner.folder.append_episodes(records)
            per_step.append((time.perf_counter() - t0) / batch_size)
        runner.loop.close()
    ms = np.asarray(per_step[1:]) * 1e3  # the first batch warms caches
    return {
        "memories_at_start": memories,
        "groups_at_start": int(len(bank.group_sizes)),
        "index": index["kind"],
        "batch_size": batch_size,
        "batches": batches,
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "max_ms": float(ms.max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument(
        "--batch-sizes", type=int, nargs="+", default=[32, 1], help="32 is MemRL's mini-batch; 1 times a single step without amortisation"
    )
    parser.add_argument("--log-dir", type=Path, default=None, help="parent folder of the episode log (default: the system's temp dir)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    for batch_size in args.batch_sizes:
        for index in ({"kind": "exact"}, {"kind": "hnsw"}):
            row = measure(args.memories, index, batch_size, args.batches, args.log_dir)
            rows.append(row)
            print(
                f"memories {row['memories_at_start']:>7}  index {row['index']:<5}  batch {batch_size:>2}:  per step p50 "
                f"{row['p50_ms']:.3f} ms  p95 {row['p95_ms']:.3f} ms  max {row['max_ms']:.3f} ms",
                flush=True,
            )
    result = {"log_dir": str(args.log_dir or tempfile.gettempdir()), "load_average_1min": os.getloadavg()[0], "rows": rows}
    print(f"load average {result['load_average_1min']:.1f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
