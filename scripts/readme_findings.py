"""Regenerate the README's findings table from the studies' run folders.

    python scripts/readme_findings.py --synthetic results/critique_sensitivity --real results/critique_real

Reads each study as its own command writes its findings (the sensitivity study's claims at
the centre of its grid), renders memrl_bench.findings.comparison_table and replaces the
README's text between the markers `<!-- findings-table:start -->` and
`<!-- findings-table:end -->`; prints the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memrl_bench import sensitivity
from memrl_bench.findings import comparison_table, findings, load_runs

START, END = "<!-- findings-table:start -->", "<!-- findings-table:end -->"


def study_findings(study_dir: Path) -> list[dict]:
    """The findings as `memrl-bench +experiment=<study>` computes them (memrl_bench.study.run_study)."""
    runs = load_runs(study_dir)
    grid = sensitivity.phase_diagrams(runs)
    return findings(study_dir, runs=sensitivity.at_centre(runs, grid) if grid else runs)


def replace_block(text: str, table: str) -> str:
    if text.count(START) != 1 or text.count(END) != 1:
        raise ValueError(f"README.md must hold the markers {START} and {END} once each")
    before, rest = text.split(START)
    return before + START + "\n" + table + rest[rest.index(END):]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--synthetic", type=Path, required=True, help="the synthetic study folder (critique_sensitivity)")
    parser.add_argument("--real", type=Path, required=True, help="the real-model study folder (results/critique_real)")
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    args = parser.parse_args()
    real = study_findings(args.real)
    table = comparison_table([("SYNTHETIC world, sensitivity centre", study_findings(args.synthetic)), (real[0]["label"] if real else "real model", real)])
    args.readme.write_text(replace_block(args.readme.read_text(), table))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
