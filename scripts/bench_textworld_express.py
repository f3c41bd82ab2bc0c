"""TextWorldExpress costs: spawn (a new JVM) vs a second simulator on a shared gateway, reset, step.

Usage (numbers in BENCHMARKS.md "## TextWorldExpress"):
    PYTHONPATH=. python scripts/bench_textworld_express.py --game twc --instances 4 --episodes 50
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from memrl_bench.envs.textworld_express import TextWorldExpressEnv


def resident_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="twc")
    parser.add_argument("--instances", type=int, default=4, help="spawned instances to time")
    parser.add_argument("--episodes", type=int, default=50, help="gold-path episodes to time reset and step over")
    args = parser.parse_args()

    env = TextWorldExpressEnv({"game": args.game, "tasks_per_split": args.episodes})
    spawn_s, shared_s, spawned = [], [], []
    for _ in range(args.instances):
        began = time.perf_counter()
        spawned.append(env.spawn())
        spawn_s.append(time.perf_counter() - began)
        # The alternative: another simulator object inside the first instance's JVM.
        began = time.perf_counter()
        env._simulator._gateway.jvm.textworldexpress.runtime.PythonInterface().load(args.game, "")
        shared_s.append(time.perf_counter() - began)
    rss = [resident_kib(other.java_process().pid) for other in spawned]
    for other in spawned:
        other.close()

    reset_s, step_s, won = [], [], 0
    for task in env.tasks("train"):
        gold = env.gold_actions(task)
        began = time.perf_counter()
        env.reset(task)
        reset_s.append(time.perf_counter() - began)
        for action in gold:
            began = time.perf_counter()
            _, _, done, info = env.step(action)
            step_s.append(time.perf_counter() - began)
            if done:
                won += info["success"]
                break
    first_rss = resident_kib(env.java_process().pid)
    env.close()

    print(f"game {args.game}; {args.instances} spawns, {len(reset_s)} episodes ({won} won by the gold path), {len(step_s)} steps")
    print(f"spawn (new JVM + load):            median {1000 * statistics.median(spawn_s):.0f} ms")
    print(f"second simulator on shared gateway: median {1000 * statistics.median(shared_s):.1f} ms")
    print(
        f"JVM resident memory: first instance after {len(reset_s)} episodes {first_rss // 1024} MiB, fresh spawned ones median "
        f"{statistics.median(rss) // 1024} MiB"
    )
    print(f"reset: median {1000 * statistics.median(reset_s):.1f} ms; step: median {1000 * statistics.median(step_s):.2f} ms")


if __name__ == "__main__":
    main()
