"""Copy a finished study into the repository's results/ folder, with the response cache that replays it.

    python scripts/ship_study.py /work/runs/cr/critique_real results/critique_real --cache /work/runs/cr_cache.sqlite

Copies every run folder of the study (without its .lock), its findings.md / findings.html,
and the response cache as one SQLite file in rollback-journal mode (so that
llm.cache_mode=read_only reads it in place, creating nothing beside it). Refuses to write
into a destination that exists: a shipped study is replaced by deleting it first, by hand.
Prints the facts the study's README states: model, server settings, machine, sizes, and the
study's timing.json (not shipped: replaying the study rewrites it with the replay's times).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import sys
from pathlib import Path


def copy_cache(source: Path, target: Path) -> int:
    """The cache's entries into a new compact file (VACUUM INTO reads a consistent snapshot, WAL included)."""
    with sqlite3.connect(source) as db:
        db.execute("VACUUM INTO ?", (str(target),))
    with sqlite3.connect(target) as db:
        db.execute("PRAGMA journal_mode=DELETE")
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", type=Path, help="the study folder (holds findings.md and the presets' run folders)")
    parser.add_argument("dest", type=Path, help="where to ship it, e.g. results/critique_real (must not exist)")
    parser.add_argument("--cache", type=Path, required=True, help="the response cache the study wrote")
    args = parser.parse_args()
    if args.dest.exists():
        print(f"ship_study: {args.dest} exists; delete it by hand to replace it", file=sys.stderr)
        return 2
    if not (args.study / "findings.md").is_file():
        print(f"ship_study: {args.study} has no findings.md: not a finished study", file=sys.stderr)
        return 2
    shutil.copytree(args.study, args.dest, ignore=shutil.ignore_patterns(".lock", "report", "export", "timing.json"))
    entries = copy_cache(args.cache, args.dest / "llm_cache.sqlite")
    manifests = sorted(args.dest.rglob("manifest.json"))
    model = json.loads(manifests[0].read_text()).get("model") if manifests else None
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
        platform.processor(),
    )
    size = sum(f.stat().st_size for f in args.dest.rglob("*") if f.is_file())
    facts = {
        "runs": len(manifests),
        "cache_entries": entries,
        "cache_bytes": (args.dest / "llm_cache.sqlite").stat().st_size,
        "shipped_bytes": size,
        "model": model,
        "timing": json.loads((args.study / "timing.json").read_text()) if (args.study / "timing.json").is_file() else None,
        "machine": {
            "cpu": cpu,
            "cpus": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "platform": platform.platform(),
        },
    }
    print(json.dumps(facts, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
