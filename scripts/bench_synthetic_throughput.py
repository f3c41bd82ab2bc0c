"""Synthetic-environment episodes per second of the real Runner, with 10,000+ stored memories.

One run of memrl on the synthetic env in a temporary folder: epoch 1 plays the
10,000 training tasks (memory grows 0 -> 10,000), then validation plays with those
10,000 memories frozen, then epoch 2 trains with 10,000 -> 20,000. A phase's rate is
its episodes over the time from its first batch's start to the next phase's, so it
includes everything the runner does (retrieve, play, log write + fsync, learn,
checkpoints, fingerprints).

    python -m scripts.bench_synthetic_throughput --out results/bench/synthetic_throughput.json
    python -m scripts.bench_synthetic_throughput --profile 25   # cProfile, top 25 functions
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import tempfile
import time
from pathlib import Path

from omegaconf import OmegaConf

from memrl_bench.cli.hydra_support import compose, composing
from memrl_bench.runner.loop import Runner


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
    with composing():
        cfg = compose(overrides)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    resolved["hydra"] = {"overrides": overrides}
    return resolved


class StampingRunner(Runner):
    """The real Runner, noting wall and CPU time at the start of every batch."""

    def __init__(self, cfg: dict, run_dir: Path):
        super().__init__(cfg, run_dir)
        self.stamps: list[tuple[str, float, float, int]] = []  # (phase/split/epoch, wall s, CPU s, episodes)

    def _play_batch(self, parts, batch, pool):
        self.stamps.append((f"{batch.phase}/{batch.split}/{batch.epoch}", time.perf_counter(), time.process_time(), batch.size))
        return super()._play_batch(parts, batch, pool)


def phase_rates(stamps: list[tuple[str, float, float, int]], end: tuple[float, float]) -> dict:
    """Episodes per second of each phase, per wall-clock second and per CPU second of this process.

    steady: the phase's batches but its last, over the time from its first batch's start
    to its last batch's start (periodic checkpoints included, the phase-end snapshots and
    fingerprints not). phase: all its episodes over the time to the next phase's first
    batch (`end` closes the last phase). CPU seconds are what a free core would take; this
    machine may be shared, which inflates wall time.
    """
    phases: dict[str, list[tuple[float, float, int]]] = {}
    for name, wall, cpu, n in stamps:
        phases.setdefault(name, []).append((wall, cpu, n))
    names = list(phases)
    rates = {}
    for i, name in enumerate(names):
        batches = phases[name]
        next_wall, next_cpu = (phases[names[i + 1]][0][:2]) if i + 1 < len(names) else end
        (w0, c0, _), (w_last, c_last, _) = batches[0], batches[-1]
        steady_n = sum(n for _, _, n in batches[:-1])
        total_n = steady_n + batches[-1][2]
        rates[name] = {
            "episodes": total_n,
            "phase": {
                "wall_s": next_wall - w0,
                "cpu_s": next_cpu - c0,
                "episodes_per_s": total_n / (next_wall - w0),
                "episodes_per_cpu_s": total_n / (next_cpu - c0),
            },
        }
        if len(batches) > 1:
            rates[name]["steady"] = {
                "episodes": steady_n,
                "wall_s": w_last - w0,
                "cpu_s": c_last - c0,
                "episodes_per_s": steady_n / (w_last - w0),
                "episodes_per_cpu_s": steady_n / (c_last - c0),
            }
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", default="memrl")
    parser.add_argument("--train-tasks", type=int, default=10000)
    parser.add_argument("--validation-tasks", type=int, default=2000)
    parser.add_argument("--profile", type=int, default=0, help="profile with cProfile and print this many functions")
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="parent of the temporary run folder (default: the system's temp dir; /dev/shm takes the disk's fsync out)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("overrides", nargs="*", help="more Hydra overrides, e.g. method.index.kind=hnsw")
    args = parser.parse_args()
    cfg = run_config(args.method, args.train_tasks, args.validation_tasks, args.overrides)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        runner = StampingRunner(cfg, Path(tmp) / "run")
        profiler = cProfile.Profile(time.process_time) if args.profile else None  # CPU time: a shared machine inflates wall time
        t0, c0 = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        runner.run()
        if profiler:
            profiler.disable()
        total_s, total_cpu = time.perf_counter() - t0, time.process_time() - c0
        rates = phase_rates(runner.stamps, (time.perf_counter(), time.process_time()))
        n = sum(r["episodes"] for r in rates.values())
    result = {
        "config_overrides": cfg["hydra"]["overrides"],
        "run_dir_parent": str(args.dir or tempfile.gettempdir()),
        "load_average_1min": os.getloadavg()[0],
        "episodes": n,
        "total_s": total_s,
        "total_cpu_s": total_cpu,
        "phases": rates,
    }
    print(f"{'phase':<34} {'episodes':>8} | {'steady: /s':>10} {'/CPU s':>8} | {'whole phase: /s':>15} {'/CPU s':>8}")
    for name, rate in rates.items():
        steady = rate.get("steady")
        steady_text = f"{steady['episodes_per_s']:10.0f} {steady['episodes_per_cpu_s']:8.0f}" if steady else f"{'-':>10} {'-':>8}"
        print(
            f"{name:<34} {rate['episodes']:>8} | {steady_text} | {rate['phase']['episodes_per_s']:15.0f} "
            f"{rate['phase']['episodes_per_cpu_s']:8.0f}"
        )
    print(
        f"whole run, start to metrics: {n} episodes in {total_s:.2f} s ({n / total_s:.0f}/s), CPU {total_cpu:.2f} s "
        f"({n / total_cpu:.0f}/CPU s); load average {result['load_average_1min']:.1f}"
    )
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)
        pstats.Stats(profiler).sort_stats("cumtime").print_stats(args.profile)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
