"""Throughput of the int8 MiniLM embedder on this machine, and of cache hits.

Usage: python scripts/bench_embed.py [--model-dir DIR] [--repeats 5]
Prints a markdown table for BENCHMARKS.md: median over the repeats of sentences per
wall-clock second, and per CPU-second of this process (all its threads), which is
the steadier number when other work shares the machine (the load average is printed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memrl_bench.llm.embedders import CachedEmbedder, Embedder, MiniLMOnnxEmbedder  # noqa: E402

OBJECTS = ["apple", "mug", "knife", "pan", "book", "lettuce", "towel", "vase", "key chain", "pencil"]
PLACES = ["fridge", "countertop 1", "cabinet 3", "sink basin", "drawer 2", "shelf 1", "microwave", "dining table"]
VERBS = ["put a clean", "put a hot", "put a cool", "find two", "examine the", "put some"]


def task_descriptions(n: int) -> list[str]:
    """Short texts like the task keys a method embeds (about 10 tokens)."""
    return [f"{VERBS[i % 6]} {OBJECTS[i % 10]} in {PLACES[(i // 6) % 8]} (variant {i})" for i in range(n)]


def trajectories(n: int) -> list[str]:
    """Long texts like a stored trajectory (about 190 tokens)."""
    out = []
    for i, task in enumerate(task_descriptions(n)):
        steps = [f"> go to {PLACES[(i + s) % 8]}. You see a {OBJECTS[(i + s) % 10]} and a {OBJECTS[(i + 2 * s) % 10]}." for s in range(12)]
        out.append(f"Task: {task}. " + " ".join(steps))
    return out


def rates(embedder: Embedder, texts: list[str], repeats: int) -> tuple[float, float]:
    """Median sentences per wall second and per CPU second."""
    wall, cpu = [], []
    for _ in range(repeats):
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        embedder.embed(texts)
        wall.append(len(texts) / (time.perf_counter() - wall_start))
        cpu.append(len(texts) / max(time.process_time() - cpu_start, 1e-9))
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=None, help="folder with model.onnx and tokenizer.json (default: memrl_bench.llm.catalogue)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    corpora = {"task description (~12 tokens)": task_descriptions(256), "trajectory (~190 tokens)": trajectories(64)}
    print(f"cores: {os.cpu_count()}, repeats: {args.repeats} (median), load average at start: {os.getloadavg()[0]:.1f}\n")
    print("| text | threads | batch size | sentences / wall s | sentences / CPU s |")
    print("| --- | --- | --- | --- | --- |")
    for label, texts in corpora.items():
        for threads in (1, 2):
            for batch_size in (1, 32):
                embedder = MiniLMOnnxEmbedder(args.model_dir, threads=threads, batch_size=batch_size)
                embedder.embed(texts[:4])  # warm-up
                wall, cpu = rates(embedder, texts, args.repeats)
                print(f"| {label} | {threads} | {batch_size} | {wall:,.0f} | {cpu:,.0f} |", flush=True)

    texts = corpora["task description (~12 tokens)"]
    with tempfile.TemporaryDirectory() as scratch:
        cached = CachedEmbedder(MiniLMOnnxEmbedder(args.model_dir), Path(scratch) / "cache.sqlite")
        cached.embed(texts)
        wall, cpu = rates(cached, texts, args.repeats)
        print(f"| cache hits (SQLite), task descriptions | - | {len(texts)} | {wall:,.0f} | {cpu:,.0f} |")
        cached.close()
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
