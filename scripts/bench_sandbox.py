"""What the sandbox costs: container start, one command, one CodeRunner program, against bare subprocesses.

    python scripts/bench_sandbox.py [--repeats 30]

Needs root (the sandbox does). Prints medians and interquartile ranges in milliseconds, and the
ratio of each sandboxed step to its bare counterpart measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from memrl_bench.sandbox import CodeRunner, Limits, Sandbox, require_sandbox

COMMAND = "sandbox: run('true')"


def timed(step, repeats: int) -> list[float]:
    """Milliseconds of `repeats` calls of step(), after one warm-up call."""
    step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1000)
    return times


def describe(times: list[float]) -> str:
    q1, median, q3 = statistics.quantiles(times, n=4)
    return f"median {median:8.1f} ms  (IQR {q1:.1f}-{q3:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    repeats = parser.parse_args().repeats
    require_sandbox()
    program = "print(sum(range(10)))\n"

    def start_and_close() -> None:
        with Sandbox(Limits()):
            pass

    rows = {"bare: bash -c true": timed(lambda: subprocess.run(["bash", "-c", "true"], check=True), repeats)}
    rows["sandbox: start + close"] = timed(start_and_close, repeats)
    with Sandbox(Limits()) as sandbox:
        rows[COMMAND] = timed(lambda: sandbox.run("true"), repeats)
    rows["bare: python program"] = timed(lambda: subprocess.run([sys.executable, "-c", program], check=True, capture_output=True), repeats)
    rows["CodeRunner(sandbox): program"] = timed(lambda: CodeRunner(Limits()).run(program), repeats)
    rows["CodeRunner(process): program"] = timed(lambda: CodeRunner(Limits(), isolation="process").run(program), repeats)
    for name, times in rows.items():
        print(f"{name:32s} {describe(times)}")
    median = {name: statistics.median(times) for name, times in rows.items()}
    print(f"sandboxed command / bare bash: {median[COMMAND] / median['bare: bash -c true']:.1f}x")
    print(f"CodeRunner sandbox / process:  {median['CodeRunner(sandbox): program'] / median['CodeRunner(process): program']:.1f}x")


if __name__ == "__main__":
    main()
