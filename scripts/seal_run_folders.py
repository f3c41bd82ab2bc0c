"""Add the digests readers check to run folders written before they carried them (a one-time migration).

    python scripts/seal_run_folders.py results/critique_real

Every run folder below FOLDER whose manifest.json has no `manifest_sha256` gets two fields,
nothing else changed (the file is written in the runner's format, so a diff shows only them):
`schedule_episodes`, the size of the run's schedule computed from the manifest's own
protocol, roles and split sizes (as the runner checked a COMPLETE run before the field
existed), and `manifest_sha256`, the digest readers check (memrl_bench.core.runfolder). Every
COMPLETE without the sha256 of metrics.json, episodes.jsonl, the final snapshot's SHA256SUMS or manifest.json gets them (COMPLETE is
written as the runner writes it). Seal only folders you trust: the digests say the manifest, the
metrics and the log were not edited after this moment. A manifest whose config hash does not match its config is refused, as every reader
refuses it, and so is a run with a memory snapshot written before snapshots carried SHA256SUMS
(readers refuse a snapshot without one): rebuild its memory first (delete memory/ and COMPLETE,
and re-run the run's command: memory is rebuilt from the episode log).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from memrl_bench import protocols
from memrl_bench.core.config import config_hash, upgrade
from memrl_bench.core.runfolder import CHECKSUMS, COMPLETE, COMPLETE_DIGESTS, DIGEST, MANIFEST, SCHEDULE_EPISODES, RunFolder, run_folders


def seal_manifest(folder: Path) -> bool:
    """Seal one run folder's manifest; False if it already has a digest."""
    path = folder / MANIFEST
    manifest = json.loads(path.read_text())
    if DIGEST in manifest:
        return False
    if manifest.get("config_hash") != config_hash(manifest.get("config") or {}):
        raise SystemExit(f"seal_run_folders: {path}: its config_hash does not match its config; not sealed")
    protocol = protocols.build(upgrade(manifest["config"]).get("protocol") or {})
    snapshots = sorted(p for p in (folder / "memory").glob("*") if p.is_dir() and not p.name.startswith("."))
    unchecked = [p.name for p in snapshots if not (p / CHECKSUMS).is_file()]
    if unchecked:
        raise SystemExit(
            f"seal_run_folders: {folder}: memory/{unchecked[0]} has no {CHECKSUMS}; rebuild its memory first "
            f"(delete memory/ and {COMPLETE}, and re-run its command); not sealed"
        )
    roles, sizes = (manifest.get("env") or {}).get("roles"), manifest.get("split_sizes")
    if not roles or not sizes:
        raise SystemExit(f"seal_run_folders: {path} records no roles or split sizes: its schedule's size is unknown; not sealed")
    RunFolder(folder).write_manifest({**manifest, SCHEDULE_EPISODES: protocol.schedule_size(roles, sizes)})
    return True


def seal_complete(folder: Path) -> bool:
    """Add the digests readers check (COMPLETE_DIGESTS) to one run folder's COMPLETE; False if it is not complete or has them."""
    run = RunFolder(folder)
    if not run.is_complete() or set(COMPLETE_DIGESTS.values()) <= set(run.completion_digests()):
        return False
    run.mark_complete()
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="a results folder (searched for run folders) or one run folder")
    args = parser.parse_args()
    folders = run_folders(args.folder)
    manifests = [f for f in folders if seal_manifest(f)]
    completes = [f for f in folders if seal_complete(f)]
    print(f"sealed {len(manifests)} of {len(folders)} manifests and {len(completes)} COMPLETE markers below {args.folder}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
