"""Check that two results trees hold the same runs with the same episode logs, measured parts stripped.

For a restructuring that must not change what runs compute: run the same presets with two
versions of the harness, then

    python scripts/compare_episode_logs.py results-before results-after

Runs are matched by their command-line overrides (their folder names may differ between
versions); each pair's episodes.jsonl must be equal line by line after
memrl_bench.core.schema.strip_measured (latencies and timings differ from run to run). Exit 1
naming the first run that differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from memrl_bench.core.config import NOT_RESULTS, role_of
from memrl_bench.core.schema import strip_measured


def runs(root: Path) -> dict[tuple[str, ...], Path]:
    """Run folder by its overrides that can change results."""
    out: dict[tuple[str, ...], Path] = {}
    for log in sorted(root.rglob("episodes.jsonl")):
        overrides = json.loads((log.parent / "manifest.json").read_text())["config"]["hydra"]["overrides"]
        key = tuple(sorted(o for o in overrides if role_of(o) not in NOT_RESULTS))
        if key in out:
            sys.exit(f"{root}: two runs of {key}: {out[key]} and {log.parent}")
        out[key] = log.parent
    return out


def stripped(folder: Path) -> list[str]:
    return [json.dumps(strip_measured(json.loads(line))) for line in (folder / "episodes.jsonl").read_text().splitlines()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    before, after = runs(args.before), runs(args.after)
    if before.keys() != after.keys():
        print(f"different runs: only before {sorted(before.keys() - after.keys())}, only after {sorted(after.keys() - before.keys())}")
        return 1
    same_hash = 0
    for key in sorted(before):
        if stripped(before[key]) != stripped(after[key]):
            print(f"episode logs differ: {before[key]} vs {after[key]}")
            return 1
        same_hash += (
            json.loads((before[key] / "manifest.json").read_text())["config_hash"]
            == json.loads((after[key] / "manifest.json").read_text())["config_hash"]
        )
    episodes = sum(len(stripped(f)) for f in before.values())
    print(
        f"{len(before)} runs, {episodes} episodes: episode logs identical once measured parts are stripped; config hash equal in "
        f"{same_hash} of {len(before)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
