"""Play ALFWorld's handcoded expert over whole game folders; print won/total and steps.

Not a test: it takes ~5 s a game. Usage (the numbers in BENCHMARKS.md "## ALFWorld expert"):
    PYTHONPATH=. python scripts/alfworld_expert_sweep.py --folders valid_unseen valid_seen --processes 2 --max-steps 60
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from multiprocessing import Pool

from memrl_bench.core.schema import Task
from memrl_bench.envs.alfworld import AlfWorldEnv

SPLITS_OF_FOLDER = {"valid_unseen": ["test_out_of_distribution"], "valid_seen": ["validation", "test_in_distribution"], "train": ["train"]}

_env: AlfWorldEnv | None = None
_max_steps = 60


def _start_worker(cfg: dict, max_steps: int) -> None:
    global _env, _max_steps
    _env = AlfWorldEnv(cfg)
    _max_steps = max_steps


def play_expert(task: Task) -> dict:
    """One expert episode: follow info["expert_plan"] until done or the step limit."""
    started = time.perf_counter()
    _, info = _env.reset(task)
    reset_s = time.perf_counter() - started
    steps, done, step_times, error = 0, False, [], None
    try:
        while not done and steps < _max_steps:
            began = time.perf_counter()
            _, _, done, info = _env.step(info["expert_plan"][0])
            step_times.append(time.perf_counter() - began)
            steps += 1
    except Exception as raised:  # the expert itself can fail mid-game; count it as a loss
        error = f"{task.id}: {raised!r}"
    won = bool(info.get("success")) and error is None
    return {
        "task_type": task.data["task_type"],
        "won": won,
        "steps": steps,
        "reset_s": reset_s,
        "step_times": step_times,
        "wall_s": time.perf_counter() - started,
        "error": error,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folders", nargs="+", default=["valid_unseen", "valid_seen"], choices=sorted(SPLITS_OF_FOLDER))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument("--data-dir", default=None, help="ALFWorld data folder (default: $ALFWORLD_DATA, then ../shared/data/alfworld)")
    args = parser.parse_args()

    cfg = {"expert": True, "data_dir": args.data_dir}
    lister = AlfWorldEnv(cfg)
    with Pool(args.processes, initializer=_start_worker, initargs=(cfg, args.max_steps)) as pool:
        for folder in args.folders:
            tasks = [task for split in SPLITS_OF_FOLDER[folder] for task in lister.tasks(split)]
            began = time.perf_counter()
            results = pool.map(play_expert, tasks, chunksize=1)
            elapsed = time.perf_counter() - began
            won = [r for r in results if r["won"]]
            by_type: dict[str, list[bool]] = defaultdict(list)
            for r in results:
                by_type[r["task_type"]].append(r["won"])
            step_times = [t for r in results for t in r["step_times"]]
            print(
                f"{folder}: won {len(won)}/{len(results)} within {args.max_steps} steps; mean steps "
                f"{statistics.mean(r['steps'] for r in results):.1f} (won games {statistics.mean(r['steps'] for r in won):.1f})"
            )
            for r in results:
                if r["error"]:
                    print(f"  expert error: {r['error']}")
            for task_type, outcomes in sorted(by_type.items()):
                print(f"  {task_type}: {sum(outcomes)}/{len(outcomes)}")
            print(
                f"  median reset {statistics.median(r['reset_s'] for r in results):.2f} s, median step "
                f"{1000 * statistics.median(step_times):.0f} ms,"
                f" median episode {statistics.median(r['wall_s'] for r in results):.1f} s; {elapsed:.0f} s wall with {args.processes} "
                "processes"
            )


if __name__ == "__main__":
    main()
