"""What the sandbox costs: container start, one command, one CodeRunner program, against bare subprocesses;
and what the checks a model cannot forge add: an LLB-OS check (`Sandbox.check`: the host's tools, the
scan of the episode's changes) against the same script run as a command, and a BigCodeBench step
(the trusted runner and the tampering checks) against the program as it ran before (tests and an
inline runner printing a marker).

    python scripts/bench_sandbox.py [--repeats 30]

Needs root (the sandbox does). Prints medians and interquartile ranges in milliseconds, and the
ratio of each sandboxed step to its bare counterpart measured in the same run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from memrl_bench.envs.bigcodebench import BigCodeBenchEnv
from memrl_bench.envs.sandbox import CodeRunner, Limits, Sandbox, require_sandbox

COMMAND = "sandbox: run('true')"
# An LLB-OS evaluation script of the usual kind: users, files, permissions.
CHECK = "id root >/dev/null && [ -d /etc ] && [ $(stat -c %a /etc) = 755 ] && grep -q '^root:' /etc/passwd"
SOLUTION = "def task_func(a, b):\n    return a + b\n"
TESTS = (
    "import unittest\nclass TestCases(unittest.TestCase):\n    def test_small(self):\n        self.assertEqual(task_func(2, 3), 5)\n    "
    "def test_negative(self):\n        self.assertEqual(task_func(-2, -3), -5)\n"
)
# The program as BigCodeBench ran before issue 26: tests, then an inline runner printing a marker.
INLINE_RUNNER = """
if __name__ == "__main__":
    import sys, unittest
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(unittest.defaultTestLoader.loadTestsFromTestCase(TestCases))
    if result.wasSuccessful():
        print("{marker}", flush=True)
    sys.exit(0 if result.wasSuccessful() else 1)
"""


def bigcodebench_env(folder: Path) -> BigCodeBenchEnv:
    """The env on one task (the tests above), in `folder`."""
    record = {
        "task_id": "BigCodeBench/0",
        "complete_prompt": "",
        "instruct_prompt": "add",
        "canonical_solution": "    return a + b\n",
        "code_prompt": "def task_func(a, b):\n",
        "test": TESTS,
        "entry_point": "task_func",
        "doc_struct": "{}",
        "libs": "['math']",
    }
    with gzip.open(folder / "BigCodeBench.jsonl.gz", "wt") as out:
        out.write(json.dumps(record) + "\n")
    (folder / "full_seed123.json").write_text(json.dumps({"train_ids": ["BigCodeBench/0"], "val_ids": []}))
    return BigCodeBenchEnv({"data_dir": str(folder), "exclude_gold_failures": False})


def bigcodebench_step(env: BigCodeBenchEnv) -> None:
    env.reset(env.tasks("train")[0])
    assert env.step(SOLUTION)[3]["success"]


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
    with Sandbox(Limits()) as sandbox:
        rows["LLB-OS check: run (before)"] = timed(lambda: sandbox.run(CHECK), repeats)
        rows["LLB-OS check: check (host tools)"] = timed(lambda: sandbox.check(CHECK), repeats)
    inline = SOLUTION + "\n\n" + TESTS + INLINE_RUNNER.format(marker=uuid.uuid4().hex)
    rows["BigCodeBench: inline runner (before)"] = timed(lambda: CodeRunner(Limits()).run(inline), repeats)
    with tempfile.TemporaryDirectory() as folder:
        env = bigcodebench_env(Path(folder))
        rows["BigCodeBench: env step (now)"] = timed(lambda: bigcodebench_step(env), repeats)
    for name, times in rows.items():
        print(f"{name:38s} {describe(times)}")
    median = {name: statistics.median(times) for name, times in rows.items()}
    print(f"sandboxed command / bare bash: {median[COMMAND] / median['bare: bash -c true']:.1f}x")
    print(f"CodeRunner sandbox / process:  {median['CodeRunner(sandbox): program'] / median['CodeRunner(process): program']:.1f}x")
    print(f"LLB-OS check, now / before:     {median['LLB-OS check: check (host tools)'] / median['LLB-OS check: run (before)']:.2f}x")
    print(
        f"BigCodeBench step, now / before: {median['BigCodeBench: env step (now)'] / median['BigCodeBench: inline runner (before)']:.2f}x"
    )


if __name__ == "__main__":
    main()
