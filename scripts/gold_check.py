"""Play the gold answer of every task of the tool-using environments and print pass counts.

    python scripts/gold_check.py                          # llb_os llb_db bigcodebench mmlu
    python scripts/gold_check.py bigcodebench --set subset=hard --set timeout_s=60
    python scripts/gold_check.py llb_os --instead finish  # a no-op: should pass nothing

Each env is built from conf/env/<name>.yaml (plus --set overrides) with its gold-failure
exclusion switched off, so every task is played; at most --workers episodes run at once
(one env instance each). Failing task ids are printed with the env's reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memrl_bench.core import registry  # noqa: E402
from memrl_bench.core.schema import Task  # noqa: E402
from memrl_bench.envs.base import Env  # noqa: E402
from memrl_bench.envs.gold import gold_failure  # noqa: E402

ENVS = ("llb_os", "llb_db", "bigcodebench", "mmlu")


def env_config(name: str, overrides: list[str]) -> dict:
    """The env's settings as a run composes them (its model's defaults: conf/env/<name>.yaml sets nothing else) with `overrides`."""
    cfg: dict = {}
    for override in overrides:
        key, _, value = override.partition("=")
        if not key or not _:
            raise SystemExit(f"--set expects key=value, got {override!r}")
        cfg[key] = yaml.safe_load(value)
    cfg["exclude_gold_failures"] = False
    return cfg


def play_all(env: Env, tasks: list[Task], workers: int) -> dict[str, str]:
    """Task id -> failure reason ("" = the episode succeeded), one env instance per worker thread."""
    local = threading.local()
    spawned: list[Env] = []

    def play(task: Task) -> str:
        if not hasattr(local, "env"):
            local.env = env.spawn()
            spawned.append(local.env)
        return gold_failure(local.env, task)

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        return dict(zip((t.id for t in tasks), pool.map(play, tasks)))
    finally:
        pool.shutdown(cancel_futures=True)  # on Ctrl-C: finish the running episodes only
        for instance in spawned:
            instance.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("envs", nargs="*", default=list(ENVS), help=f"env names (default: {' '.join(ENVS)})")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a key of conf/env/<name>.yaml (all envs)")
    parser.add_argument("--workers", type=int, default=2, help="episodes played at once (default 2)")
    parser.add_argument("--instead", metavar="ACTION", help="play this one action instead of the gold (a no-op baseline, e.g. finish)")
    args = parser.parse_args()
    for name in args.envs:
        start = time.perf_counter()
        env = registry.get("env", name)(env_config(name, args.set), seed=0)
        counts: Counter = Counter()
        failures: dict[str, str] = {}
        played = "gold" if args.instead is None else f"{args.instead!r} instead of the gold"
        for split in env.splits():
            tasks = env.tasks(split)
            if args.instead is not None:
                tasks = [dataclasses.replace(t, data={**t.data, "gold": [args.instead]}) for t in tasks]
            results = play_all(env, tasks, args.workers)
            passed = sum(1 for reason in results.values() if not reason)
            counts["passed"] += passed
            counts["total"] += len(tasks)
            failures.update({task_id: reason for task_id, reason in results.items() if reason})
            print(f"{name} {split}: {played} passes {passed}/{len(tasks)}", flush=True)
        if hasattr(env, "reference_agreement") and args.instead is None:
            print(f"{name} reference vs the dataset's recorded answers (agree, total): {env.reference_agreement()}")
        env.close()
        print(f"{name} all splits: {played} passes {counts['passed']}/{counts['total']} ({time.perf_counter() - start:.0f} s)")
        if args.instead is None:
            for task_id, reason in sorted(failures.items()):
                print(f"  FAIL {task_id}: {' '.join(reason.split())[:240]}")
        print(flush=True)


if __name__ == "__main__":
    main()
