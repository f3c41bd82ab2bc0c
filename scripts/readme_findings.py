"""Regenerate the README's findings table from the studies' run folders.

    python scripts/readme_findings.py --study "SYNTHETIC critique study=results/critique" \
        --study "SYNTHETIC sensitivity centre=results/critique_sensitivity" --study results/critique_real

Reads each study (a column; its title before `=`, else its findings' label) as its own
command computes its findings (the sensitivity study's claims at the centre of its grid),
renders memrl_bench.findings.comparison_table and replaces the
README's text between the markers `<!-- findings-table:start -->` and
`<!-- findings-table:end -->`; prints the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memrl_bench.findings import Finding, comparison_table, findings, load_runs
from memrl_bench.report import sensitivity

START, END = "<!-- findings-table:start -->", "<!-- findings-table:end -->"


def study_findings(study_dir: Path) -> list[Finding]:
    """The findings as `memrl-bench +experiment=<study>` computes them (memrl_bench.cli.study.run_study)."""
    runs = load_runs(study_dir)
    grid = sensitivity.phase_diagrams(runs)
    return findings(study_dir, runs=sensitivity.at_centre(runs, grid) if grid else runs)


def replace_block(text: str, table: str) -> str:
    if text.count(START) != 1 or text.count(END) != 1:
        raise ValueError(f"README.md must hold the markers {START} and {END} once each")
    before, rest = text.split(START)
    return before + START + "\n" + table + rest[rest.index(END) :]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--study", action="append", required=True, help="[TITLE=]FOLDER of a study, one column each, in order")
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    args = parser.parse_args()
    columns = []
    for spec in args.study:
        title, _, folder = spec.rpartition("=")
        found = study_findings(Path(folder))
        columns.append((title or (found[0].section.label if found else folder), found))
    table = comparison_table(columns)
    args.readme.write_text(replace_block(args.readme.read_text(), table))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
