"""A run folder read back: manifest.json, episodes.jsonl, metrics.json and the final memory
snapshot as the records of memrl_bench/core/schema.py (the classes the runner writes), and the
one reader the report and the findings use.

As inspect_ai reads its logs, a reader says `episode.phase`, not `record["phase"]`, and a
file that is not a run's fails with the file, the line and the field named instead of a
KeyError deep in an analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from memrl_bench.core.runfolder import (
    COMPLETE,
    EPISODES,
    MANIFEST,
    CorruptRunFolderError,
    RunFolder,
    UnreadableJSONError,
    duplicate_ids,
    parse_json,
    regular_lines,
)
from memrl_bench.core.schema import Episode, ManifestRecord, MemoryItem, MetricsRecord, read_record


@dataclass
class RunRecords:
    """Everything a reader needs of one run folder (its parts validated as read_run read them)."""

    path: Path
    manifest: ManifestRecord
    episodes: list[Episode]
    metrics: MetricsRecord | None  # None until the run completes
    items: list[MemoryItem]  # the final snapshot's memories ([] until the run completes)
    complete: bool  # COMPLETE is there, and the folder passed RunFolder.verify_complete

    @property
    def played(self) -> list[Episode]:
        """The scheduled episodes played and scored: not poison, not a retry (protocol.retries), so every rate read from them is SR@1."""
        return [e for e in self.episodes if e.played and e.first_attempt]


def _parsed(record: type, data: Any, where: str) -> Any:
    """`data` as a `record` (a schema dataclass or pydantic model); CorruptRunFolderError naming `where` and the field."""
    try:
        return record.model_validate(data) if issubclass(record, BaseModel) else read_record(record, data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise CorruptRunFolderError(f"{where}: {field}: {message}" if field else f"{where}: {message}") from None


def episode_records(raw: list[dict], where: Path | str = EPISODES) -> list[Episode]:
    """Episode log lines (as RunFolder.read_episodes returns them) as typed records."""
    return [_parsed(Episode, r, f"{where} line {n}") for n, r in enumerate(raw, start=1)]


def memory_items(snapshot: Path | None) -> list[MemoryItem]:
    """The items of a memory snapshot folder ([] if it holds none)."""
    path = None if snapshot is None else Path(snapshot) / "items.jsonl"
    if path is None or not path.exists():
        return []
    items = []
    for n, line in regular_lines(path):
        if not line.strip():
            continue
        try:
            data = parse_json(line, strict=True)
        except UnreadableJSONError as err:
            raise CorruptRunFolderError(f"{path} line {n} is not valid JSON ({err})") from None
        items.append(_parsed(MemoryItem, data, f"{path} line {n}"))
    return items


def read_run(path: Path | str, require_complete: bool = False) -> RunRecords:
    """Read one run folder; CorruptRunFolderError naming the file and what failed if it is not a whole, readable run.

    Nothing is taken on trust: the manifest is checked against its config hash and its
    digest (RunFolder.read_manifest), and a run marked COMPLETE as the runner checks one
    (RunFolder.verify_complete: a whole log of its schedule's size without duplicate ids,
    metrics.json counting it, both matching the digests COMPLETE records, a final snapshot
    matching its SHA256SUMS), so a damaged run
    is refused, never read as whole. A run without COMPLETE still reads (its whole lines
    so far; no final memory) unless `require_complete`. A log that is empty, missing
    beside COMPLETE, or holds an episode id twice (two writers) is refused.
    """
    folder = RunFolder(Path(path))
    raw_manifest = folder.read_manifest()
    if raw_manifest is None:
        raise CorruptRunFolderError(f"{folder.path} has no {MANIFEST}")
    manifest = _parsed(ManifestRecord, raw_manifest, str(folder.path / MANIFEST))
    complete = folder.is_complete()
    if require_complete and not complete:
        raise CorruptRunFolderError(f"{folder.path}: incomplete (no {COMPLETE})")
    if complete and not folder.episodes_path.exists():
        raise CorruptRunFolderError(f"{folder.path} is marked {COMPLETE} but has no {EPISODES}")
    log = folder.read_log()
    raw = log[0]
    if not raw:
        raise CorruptRunFolderError(f"{folder.episodes_path}: no episodes yet")
    twice = duplicate_ids(raw)
    if twice:
        raise CorruptRunFolderError(
            f"{folder.episodes_path} logs {len(twice)} episode ids more than once (e.g. {twice[0]}): two processes wrote this run"
        )
    episodes = episode_records(raw, folder.episodes_path)  # first: a damaged line is named with its field
    if complete:
        folder.verify_complete(raw_manifest, log)
    raw_metrics = folder.read_metrics() if complete else None  # checked against the log only when COMPLETE
    metrics = _parsed(MetricsRecord, raw_metrics, str(folder.path / "metrics.json")) if raw_metrics is not None else None
    items = memory_items(folder.snapshot_path("final")) if complete else []
    return RunRecords(
        path=folder.path,
        manifest=manifest,
        episodes=episodes,
        metrics=metrics,
        items=items,
        complete=complete,
    )
