"""Time one command under two checkouts of memrl-bench, alternately, in one process: the medians and
their ratio (a restructuring must not slow a run or the report).

    python scripts/bench_versions.py OLD_CHECKOUT NEW_CHECKOUT --repeat 5 -- -m memrl_bench +experiment=demo

Each repetition runs the command (arguments after `--`, given to this Python) first in one
checkout, then in the other (the order alternates), with the checkout as the working folder
and first on PYTHONPATH, so its `memrl_bench` is the one imported. Results go to a fresh
temporary folder per run (`results_dir=` is appended when the command is memrl_bench's);
`{out}` in an argument is replaced by that folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(checkout: Path, args: list[str]) -> float:
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, *(a.replace("{out}", out) for a in args)]
        if args[:2] == ["-m", "memrl_bench"] and not any(a.startswith("results_dir=") for a in args):
            command.append(f"results_dir={out}")
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        start = time.perf_counter()
        subprocess.run(command, cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, command = parser.parse_args(argv[:split]), argv[split + 1 :]
    if not command:
        parser.error("give the command after --")
    times: dict[str, list[float]] = {"old": [], "new": []}
    for i in range(args.repeat):
        for label in ("old", "new") if i % 2 == 0 else ("new", "old"):
            times[label].append(timed(getattr(args, label), command))
    old, new = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"old median {old:.2f} s {[round(t, 2) for t in times['old']]}")
    print(f"new median {new:.2f} s {[round(t, 2) for t in times['new']]}")
    print(f"new / old {new / old:.3f} (load average at the end {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
