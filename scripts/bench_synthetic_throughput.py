"""Synthetic-environment episodes per second of the real Runner, with 10,000+ stored memories.

One run of memrl on the synthetic env in a temporary folder: epoch 1 plays the
10,000 training tasks (memory grows 0 -> 10,000), then validation plays with those
10,000 memories frozen, then epoch 2 trains with 10,000 -> 20,000. Steady-state rates
come from the batch start stamps in episodes.jsonl (`wall_time`): episodes of a phase
divided by the time from its first batch's start to the next phase's start, so they
include everything the runner does per batch (retrieve, play, log write + fsync,
learn, snapshots and fingerprints).

    python -m scripts.bench_synthetic_throughput --out results/bench/synthetic_throughput.json
    python -m scripts.bench_synthetic_throughput --profile 25   # cProfile, top 25 functions
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import tempfile
import time
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import memrl_bench.cli  # noqa: F401  (registers the run_name resolver the config uses)
from memrl_bench.runner import Runner
from memrl_bench.runfolder import RunFolder

CONF = str(Path(__file__).resolve().parent.parent / "conf")


def run_config(method: str, train_tasks: int, validation_tasks: int, extra: list[str]) -> dict:
    overrides = [
        f"method={method}",
        "protocol.epochs=2",
        f"env.tasks.train={train_tasks}",
        f"env.tasks.validation={validation_tasks}",
        "env.tasks.test_in_distribution=100",
        "env.tasks.test_out_of_distribution=100",
        "progress=false",
        *extra,
    ]
    with initialize_config_dir(config_dir=CONF, version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    resolved["hydra"] = {"overrides": overrides}
    return resolved


def phase_rates(records: list[dict]) -> dict:
    """Episodes per second of each (phase, split, epoch), from the batch start stamps."""
    segments: list[tuple[tuple, float, int, int]] = []  # (key, first start, episodes, memory items at start)
    for r in records:
        key = (r["phase"], r["split"], r["epoch"])
        if not segments or segments[-1][0] != key:
            segments.append((key, r["wall_time"], 0, r["memory_items_after"]))
        k, start, n, items = segments[-1]
        segments[-1] = (k, start, n + 1, items)
    rates = {}
    for (key, start, n, _), nxt in zip(segments, segments[1:]):
        rates["/".join(map(str, key))] = {"episodes": n, "seconds": nxt[1] - start, "episodes_per_s": n / (nxt[1] - start)}
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", default="memrl")
    parser.add_argument("--train-tasks", type=int, default=10000)
    parser.add_argument("--validation-tasks", type=int, default=2000)
    parser.add_argument("--profile", type=int, default=0, help="profile with cProfile and print this many functions")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the temporary run folder (default: the system's temp dir; /dev/shm takes the disk's fsync out)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("overrides", nargs="*", help="more Hydra overrides, e.g. method.index.kind=hnsw")
    args = parser.parse_args()
    cfg = run_config(args.method, args.train_tasks, args.validation_tasks, args.overrides)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        runner = Runner(cfg, Path(tmp) / "run")
        profiler = cProfile.Profile() if args.profile else None
        t0 = time.perf_counter()
        if profiler:
            profiler.enable()
        runner.run()
        if profiler:
            profiler.disable()
        total_s = time.perf_counter() - t0
        records = RunFolder(Path(tmp) / "run").read_episodes()
    rates = phase_rates(records)
    result = {"config_overrides": cfg["hydra"]["overrides"], "run_dir_parent": str(args.dir or tempfile.gettempdir()), "episodes": len(records), "total_s": total_s, "episodes_per_s_overall": len(records) / total_s, "phases": rates}
    for name, rate in rates.items():
        print(f"{name:<32} {rate['episodes']:>6} episodes {rate['seconds']:7.2f} s  {rate['episodes_per_s']:8.0f} episodes/s")
    print(f"{'whole run':<32} {len(records):>6} episodes {total_s:7.2f} s  {len(records) / total_s:8.0f} episodes/s")
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)
        pstats.Stats(profiler).sort_stats("cumtime").print_stats(args.profile)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
