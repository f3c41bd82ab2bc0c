"""`python -m memrl_bench.findings RESULTS_DIR [--html FILE]`: print the findings section as Markdown."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memrl_bench.core.errors import InputError, print_or_exit
from memrl_bench.core.runfolder import damaged_by_writing, replacing
from memrl_bench.findings.render import render_html, render_markdown
from memrl_bench.findings.section import findings


def main() -> None:
    parser = argparse.ArgumentParser(description="Findings on the critique's claims, from the run folders below RESULTS_DIR.")
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--html", type=Path, help="also write the HTML section here")
    args = parser.parse_args()
    try:
        found = findings(args.results_dir)
        damaged = damaged_by_writing(args.html) if args.html else None
    except (FileNotFoundError, InputError) as err:
        print(f"memrl-bench: error: {err}", file=sys.stderr)
        sys.exit(2)
    if damaged is not None:
        print(
            f"memrl-bench: error: {args.html} is inside the memory snapshots of the run folder {damaged}; choose another", file=sys.stderr
        )
        sys.exit(2)
    if args.html:
        try:
            with replacing(args.html, "w") as page:  # whole or not at all: a kill leaves the previous file
                page.write(render_html(found, args.results_dir))
        except OSError as err:  # a place that cannot be written (a folder, below a file or a missing folder, read-only)
            if not err.filename:
                raise
            print(f"memrl-bench: error: {args.html}: {err.strerror or err}", file=sys.stderr)  # not the temporary file's name
            sys.exit(2)
    print_or_exit(render_markdown(found, args.results_dir), "memrl-bench")


if __name__ == "__main__":
    main()
