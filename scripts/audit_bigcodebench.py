"""Audit the BigCodeBench checker on real episodes by the official route, sharing none of its code (issue 27).

For every logged episode of the given run folders, the code is read again from the model's
completion (`raw_output`) by this script's own rule, not the harness's reader:

- the first closed fenced block that defines the entry point (`def task_func(`), else the first
  closed fenced block, else the whole completion; a completion that does not define the entry
  point gets the task's `code_prompt` in front (it is then a function body, as BigCodeBench's
  complete form reads it).

The program is that code, a blank line, and the task's `test` code, written as program.py in a
fresh temporary folder and run as `python -m unittest program.TestCases`: a plain unittest
TextTestRunner, as BigCodeBench's `untrusted_check` runs `TestCases` with a plain TestResult.
Success: exit code 0 and unittest's own summary ("Ran N tests", N >= 1, then "OK") within the
time limit (60 s, the env's). None of `memrl_bench.envs.bigcodebench` or its runner is used: no
trusted runner, no test count, no tampering patterns. Containment: the program runs in a fresh
`memrl_bench.envs.sandbox.Sandbox` (no network, an overlay root, memory and process caps), as user
nobody in its own folder under /tmp, with the harness's Python and packages shown read only; the
same conditions as the env's (whose tests of permission errors expect a user without root).

Each judged episode is "agree" (the logged success equals the audit's), or listed with both
verdicts, the code and the reason, for a person to read; when this script's reading of the code
differs from what the env was handed (the logged action), that is listed too, with the route's
verdict on the env's code. Episodes cut at the token limit before their code block closed, and
other statuses than "ok" and "tampered", are counted apart. With --gold, the canonical solution
(code_prompt + canonical_solution) of every task of the episodes is run by the same route instead:
each must pass.

    python scripts/audit_bigcodebench.py RUN_FOLDER [RUN_FOLDER ...] [--data ../shared/data/bigcodebench] [--gold]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memrl_bench.envs.sandbox import DEFAULT_HIDDEN_PATHS, Limits, Sandbox  # noqa: E402 (containment only)
from scripts.audit_common import episodes_of  # noqa: E402

TIMEOUT_S = 60.0
JUDGED = ("ok", "tampered")
_BLOCK = re.compile(r"```[^\n`]*\n(.*?)\n?```", re.DOTALL)
_SUMMARY = re.compile(r"^Ran (\d+) tests? in [\d.]+s\s*\n\s*\n(OK|FAILED)\b", re.MULTILINE)
_NOBODY = 65534


def default_data() -> Path:
    """$MEMRL_BENCH_BIGCODEBENCH_DIR (as for the env), else ../shared/data/bigcodebench beside the repository."""
    return Path(os.environ.get("MEMRL_BENCH_BIGCODEBENCH_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data" / "bigcodebench")


def load_tasks(data: Path) -> dict[str, dict[str, Any]]:
    with gzip.open(data / "BigCodeBench.jsonl.gz", "rt") as lines:
        return {record["task_id"]: record for record in map(json.loads, lines)}


def defines(code: str, entry_point: str) -> bool:
    return re.search(rf"^[ \t]*(async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\(", code, re.MULTILINE) is not None


def read_code(completion: str, entry_point: str) -> str:
    """The code a reader takes from the completion (module doc)."""
    blocks = _BLOCK.findall(completion)
    chosen = next((b for b in blocks if defines(b, entry_point)), blocks[0] if blocks else completion)
    return chosen.strip("\n")


def solution(code: str, task: dict[str, Any]) -> str:
    return code if defines(code, task["entry_point"]) else task["code_prompt"] + code


def _python_roots(hidden: tuple[str, ...]) -> tuple[str, ...]:
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    return tuple(sorted(r for r in roots if any(r == h or r.startswith(h.rstrip("/") + "/") for h in hidden)))


def run_tests(program_text: str, hidden: tuple[str, ...] = DEFAULT_HIDDEN_PATHS, timeout_s: float = TIMEOUT_S) -> tuple[bool, str]:
    """(passed, the end of unittest's output) for program.py = `program_text`, run by `python -m unittest program.TestCases`."""
    python = os.path.abspath(sys.executable)  # a virtualenv's python: its packages come with it
    limits = Limits(timeout_s=timeout_s, output_bytes=1 << 20, memory_bytes=2048 << 20, max_processes=256, disk_bytes=512 << 20)
    environment = {
        "PATH": f"{os.path.dirname(python)}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "MPLBACKEND": "Agg",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    command = (
        'folder=$(mktemp -d /tmp/audit.XXXXXX) && cat > "$folder/program.py" && chown -R 65534:65534 "$folder" && cd "$folder" || exit '
        "125\n"
        f'HOME="$folder" setpriv --reuid={_NOBODY} --regid={_NOBODY} --clear-groups -- {python} -m unittest program.TestCases; status=$?\n'
        "kill -9 -1 2>/dev/null; exit $status"
    )
    with Sandbox(limits, workdir="/tmp", hidden_paths=hidden, readonly_binds=_python_roots(hidden), env=environment) as sandbox:
        result = sandbox.run(command, stdin=program_text.encode())
    if result.timed_out:
        return False, f"killed at the {timeout_s:g} s time limit"
    summaries = _SUMMARY.findall(result.output)
    ran, verdict = (int(summaries[-1][0]), summaries[-1][1]) if summaries else (0, "")
    passed = result.exit_code == 0 and ran >= 1 and verdict == "OK"
    tail = result.output.strip()[-400:]
    return passed, f"exit {result.exit_code}, ran {ran}, {verdict or 'no summary'}: ...{tail}"


def audit(episode: dict[str, Any], task: dict[str, Any], hidden: tuple[str, ...]) -> dict[str, Any]:
    """The audit's verdict on one judged episode, with what it read and why."""
    turn = episode["turns"][-1]
    completion = turn.get("raw_output") if turn.get("raw_output") is not None else turn["action"]
    code = read_code(completion, task["entry_point"])
    passed, detail = run_tests(solution(code, task) + "\n\n" + task["test"], hidden)
    out: dict[str, Any] = {"verdict": passed, "detail": detail, "code": code}
    if code.strip() != turn["action"].strip():  # the env was handed other code: how the route judges that code
        out["env_code_verdict"], out["env_code_detail"] = run_tests(solution(turn["action"], task) + "\n\n" + task["test"], hidden)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--gold", action="store_true", help="run the canonical solutions of the episodes' tasks instead")
    args = parser.parse_args()
    tasks = load_tasks(args.data)
    hidden = DEFAULT_HIDDEN_PATHS + (str(args.data.resolve()),)
    counts: Counter[str] = Counter()
    episodes = episodes_of(args.runs)
    if args.gold:
        for task_id in sorted({e["task_id"] for _, e in episodes}, key=lambda t: int(t.rsplit("/", 1)[1])):
            task = tasks[task_id]
            passed, detail = run_tests(task["code_prompt"] + task["canonical_solution"] + "\n\n" + task["test"], hidden)
            counts["gold passes" if passed else "gold fails"] += 1
            if not passed:
                print(f"GOLD FAILS {task_id}: {detail}")
        print(json.dumps(dict(sorted(counts.items()))))
        return 0
    for run_name, episode in episodes:
        counts["episodes"] += 1
        if episode["status"] not in JUDGED:
            counts[f"status {episode['status']} (not judged)"] += 1
            continue
        logged = bool(episode["success"])
        result = audit(episode, tasks[episode["task_id"]], hidden)
        counts["judged"] += 1
        if "env_code_verdict" in result:
            counts["code read differently"] += 1
            print(
                f"CODE DIFFERS {run_name} {episode['episode_id']} {episode['task_id']}: audit's code {result['verdict']}, the env's code "
                f"under the route {result['env_code_verdict']}, logged {logged}"
            )
        counts["agree" if result["verdict"] == logged else "disagree"] += 1
        if result["verdict"] != logged:
            print(
                f"DISAGREE {run_name} {episode['episode_id']} {episode['task_id']}: logged {logged} (status {episode['status']}), audit "
                f"{result['verdict']}"
            )
            print(f"    audit: {result['detail']}")
            print(f"    env's observation: {episode['turns'][-1]['observation'][-400:]!r}")
            print("    code: " + result["code"].replace("\n", "\n          "))
    print(json.dumps(dict(sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
