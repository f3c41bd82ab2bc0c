"""The `memrl-bench-report RESULTS_DIR [--out DIR]` command."""

from __future__ import annotations

import argparse
import sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from memrl_bench.core.errors import InputError, print_or_exit
from memrl_bench.core.interrupts import WORKER_LOST
from memrl_bench.report import load_for_report, write_report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="memrl-bench-report", description="Tables, figures and report.html for every run folder under RESULTS_DIR."
    )
    parser.add_argument(
        "results_dir", type=Path, help="a results folder (searched for run folders holding manifest.json), or one run folder"
    )
    parser.add_argument("--out", type=Path, default=None, help="where to write the report (default: RESULTS_DIR/report)")
    args = parser.parse_args(argv)
    try:
        results = load_for_report(args.results_dir)
        for reason in results.skipped:
            print(f"memrl-bench-report: warning: skipped {reason}", file=sys.stderr)
        for run in results.runs.loc[~results.runs["complete"], "run"]:
            print(f"memrl-bench-report: warning: {run} is incomplete: only its whole epochs are in the tables", file=sys.stderr)
        page = write_report(results, args.out)
    except InputError as err:  # ReportInputError, and a path no reader can follow
        print(f"memrl-bench-report: error: {err}", file=sys.stderr)
        sys.exit(2)
    except BrokenProcessPool:  # a worker reading the run folders killed outright
        print(f"memrl-bench-report: {WORKER_LOST}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:  # the report folder is swapped in one step: the previous one stays whole
        print("memrl-bench-report: interrupted", file=sys.stderr)
        sys.exit(130)
    except OSError as err:  # a folder it cannot write (read-only, full, no permission): the previous report stays whole
        where = err.filename or (args.out or args.results_dir / "report")  # a full disk's error names no file (60b)
        print(f"memrl-bench-report: error: {where}: {err.strerror or err}", file=sys.stderr)
        sys.exit(2)
    print_or_exit(str(page), "memrl-bench-report")


if __name__ == "__main__":
    main()
