"""The run folder: manifest, append-only episode log, memory snapshots, completion marker.

Crash safety: every file except the log is replaced atomically (write, fsync,
rename); the log gets whole batches in one write followed by fsync, and on resume a
torn last line or an incomplete last batch is cut off, so the log is always a prefix
of the run's schedule.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
METRICS = "metrics.json"
COMPLETE = "COMPLETE"


class CorruptRunFolderError(RuntimeError):
    """A run folder's files are damaged in a way no crash of the harness produces."""


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON so that a crash leaves either the old file or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def batch_key(record: dict) -> tuple:
    return (record["phase"], record["split"], record["epoch"], record["batch_index"])


class RunFolder:
    def __init__(self, path: Path):
        self.path = Path(path)

    @property
    def episodes_path(self) -> Path:
        return self.path / EPISODES

    def is_complete(self) -> bool:
        return (self.path / COMPLETE).exists()

    def has_manifest(self) -> bool:
        return (self.path / MANIFEST).exists()

    def read_manifest(self) -> dict | None:
        path = self.path / MANIFEST
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise CorruptRunFolderError(f"{path} is not valid JSON ({err.msg}); it is written atomically, so it was edited or damaged") from None

    def write_manifest(self, manifest: dict) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path / MANIFEST, manifest)

    def read_episodes(self) -> list[dict]:
        """Every whole line of the log (a torn last line, from a crash mid-write, is ignored)."""
        return self._read()[0]

    def _read(self) -> tuple[list[dict], bool]:
        """(records of the whole lines, whether a torn last line follows them)."""
        if not self.episodes_path.exists():
            return [], False
        records = []
        with open(self.episodes_path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                if not raw.endswith(b"\n"):
                    return records, True
                try:
                    records.append(json.loads(raw))
                except json.JSONDecodeError as err:
                    raise CorruptRunFolderError(f"{self.episodes_path} line {number} is not valid JSON ({err.msg}); only a torn last line comes from a crash, so this folder was edited or damaged") from None
        return records, False

    def truncate_to_batches(self, expected_size: Callable[[tuple], int | None]) -> list[dict]:
        """Cut the log to its complete batches; return their records.

        `expected_size(key)` gives the number of episodes a batch has in the schedule
        (None: the batch is not in the schedule, an error).
        """
        records, torn = self._read()
        keep: list[dict] = []
        current: list[dict] = []
        for record in records:
            if current and batch_key(record) != batch_key(current[0]):
                keep.extend(current)
                current = []
            current.append(record)
        if current:
            size = expected_size(batch_key(current[0]))
            if size is None:
                raise ValueError(f"{self.episodes_path}: batch {batch_key(current[0])} is not in this run's schedule")
            if len(current) == size:
                keep.extend(current)
        if torn or len(keep) != len(records):
            tmp = self.episodes_path.with_name(EPISODES + ".tmp")
            with open(tmp, "w") as f:
                f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in keep)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.episodes_path)
        return keep

    def append_episodes(self, records: list[dict]) -> None:
        """Append one batch's records in a single write, then fsync."""
        text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
        with open(self.episodes_path, "a") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    def save_snapshot(self, name: str, write: Callable[[Path], None], meta: dict | None = None) -> Path:
        """Write memory/<name>/ atomically via a temporary folder; `meta` goes to position.json."""
        target = self.path / "memory" / name
        tmp = self.path / "memory" / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        write(tmp)
        if meta is not None:
            (tmp / "position.json").write_text(json.dumps(meta, sort_keys=True))
        old = self.path / "memory" / f".{name}.old"
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
        return target

    def snapshot_path(self, name: str) -> Path | None:
        """memory/<name>, or its previous version if a crash interrupted the swap."""
        for candidate in (self.path / "memory" / name, self.path / "memory" / f".{name}.old"):
            if candidate.exists():
                return candidate
        return None

    def write_metrics(self, metrics: dict) -> None:
        write_json_atomic(self.path / METRICS, metrics)

    def read_metrics(self) -> dict | None:
        path = self.path / METRICS
        return json.loads(path.read_text()) if path.exists() else None

    def mark_complete(self) -> None:
        (self.path / COMPLETE).write_text("complete\n")
