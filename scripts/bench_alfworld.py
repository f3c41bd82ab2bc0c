"""ALFWorld env costs: reset and step, with and without the handcoded expert, wall and CPU time.

CPU time (this process) is reported beside wall time because it stays meaningful on a
loaded machine. Usage (numbers in BENCHMARKS.md "## ALFWorld expert"):
    PYTHONPATH=. python scripts/bench_alfworld.py --games 6 --steps 20
"""

from __future__ import annotations

import argparse
import statistics
import time

from memrl_bench.envs.alfworld import AlfWorldEnv


def timed(call, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    result = call(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=6, help="games of test_out_of_distribution, spread over the split")
    parser.add_argument("--steps", type=int, default=20, help="steps per game (expert actions, or 'look' without the expert)")
    args = parser.parse_args()

    for expert in (False, True):
        env = AlfWorldEnv({"expert": expert})
        tasks = env.tasks("test_out_of_distribution")
        games = tasks[:: max(1, len(tasks) // args.games)][: args.games]
        resets, steps = [], []
        for task in games:
            (_, info), wall, cpu = timed(env.reset, task)
            resets.append((wall, cpu))
            for _ in range(args.steps):
                action = info["expert_plan"][0] if expert else "look"
                (_, _, done, info), wall, cpu = timed(env.step, action)
                steps.append((wall, cpu))
                if done:
                    break
        env.close()
        label = "with expert   " if expert else "without expert"
        print(
            f"{label}: reset median {statistics.median(w for w, _ in resets):.2f} s wall / {statistics.median(c for _, c in resets):.2f} s "
            "CPU;"
            f" step median {1000 * statistics.median(w for w, _ in steps):.0f} ms wall / "
            f"{1000 * statistics.median(c for _, c in steps):.0f} ms CPU"
            f" ({len(resets)} games, {len(steps)} steps)"
        )


if __name__ == "__main__":
    main()
