"""A run folder read back: typed records of manifest.json, episodes.jsonl, metrics.json and
the final memory snapshot, and the one reader the report and the findings use.

The runner writes the dataclasses of memrl_bench/types.py; these pydantic models read
them back, as inspect_ai reads its logs, so that a reader says `episode.phase`, not
`record["phase"]`, and a file that is not a run's fails with the file and the field
named instead of a KeyError deep in an analysis. Fields added later have the defaults
older logs imply. tests/test_records.py checks these models against the writers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memrl_bench.config import upgrade
from memrl_bench.runfolder import COMPLETE, EPISODES, MANIFEST, CorruptRunFolderError, RunFolder, UnreadableJSONError, duplicate_ids, parse_json, regular_lines


class Record(BaseModel):
    """A record read from a run folder: unknown fields are kept (a newer writer), none is required twice."""

    model_config = ConfigDict(extra="allow", frozen=False)


class UsageRecord(Record):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    cache_hits: int = 0
    failures: int = 0
    latency_s: float = 0.0


class TurnRecord(Record):
    action: str
    observation: str
    reward: float = 0.0
    raw_output: str | None = None
    latency_s: dict[str, float] | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cache_hit: bool | None = None
    rewrite: dict[str, Any] | None = None
    format_failure: str | None = None


class RetrievedRecord(Record):
    item_id: str
    similarity: float
    q_value: float | None = None
    score: float | None = None
    source_task_id: str = ""
    source_episode_id: str = ""
    source_epoch: int = 0
    source_success: bool | None = None


class EpisodeRecord(Record):
    """One line of episodes.jsonl (memrl_bench.types.Episode as written)."""

    episode_id: str
    task_id: str
    split: str
    phase: str
    epoch: int
    batch_index: int = 0
    order_index: int = 0
    sample_index: int = 0
    success: bool
    reward: float = 0.0
    status: str = "ok"
    error: str | None = None
    turns: list[TurnRecord] = Field(default_factory=list)
    retrieved: list[RetrievedRecord] = Field(default_factory=list)
    candidates: int = 0
    injected_chars: int = 0
    act_usage: UsageRecord = Field(default_factory=UsageRecord)
    memory_usage: UsageRecord = Field(default_factory=UsageRecord)
    memory_op_errors: int = 0
    latency_s: dict[str, float] = Field(default_factory=dict)
    memory_items_after: int = 0
    memory_bytes_after: int = 0
    memory_groups_after: int = 0
    info: dict[str, Any] = Field(default_factory=dict)
    wall_time: float = 0.0

    @property
    def phase_name(self) -> str:
        """train, validation, or a test split's name (test phases are told apart by split)."""
        return self.split if self.phase == "test" else self.phase

    @property
    def played(self) -> bool:
        """Played and scored: not a memory fed to learn() unplayed (the poisoning experiment's)."""
        return self.status != "poison"


class ProvenanceRecord(Record):
    task_id: str
    split: str
    phase: str
    epoch: int
    episode_id: str
    success: bool


class MemoryItemRecord(Record):
    """One line of a memory snapshot's items.jsonl (memrl_bench.types.MemoryItem)."""

    id: str
    content: str
    provenance: ProvenanceRecord
    fields: dict[str, Any] = Field(default_factory=dict)


class EnvRecord(Record):
    name: str
    splits: dict[str, str] = Field(default_factory=dict)
    roles: dict[str, Any] = Field(default_factory=dict)
    excluded: dict[str, str] = Field(default_factory=dict)


class ManifestRecord(Record):
    """manifest.json (written by memrl_bench.runner)."""

    config: dict[str, Any]
    config_hash: str
    git_commit: str | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    labels: list[str] = Field(default_factory=list)
    env: EnvRecord | None = None
    split_hashes: dict[str, str] = Field(default_factory=dict)
    split_sizes: dict[str, int] = Field(default_factory=dict)
    schedule_episodes: int | None = None  # the whole schedule's episodes (a COMPLETE run without it is refused)
    manifest_sha256: str | None = None  # its digest, checked by RunFolder.read_manifest
    model: dict[str, Any] | str | None = None
    embedder: dict[str, Any] | str | None = None
    started: str | None = None

    @field_validator("config")
    @classmethod
    def _as_written_now(cls, config: dict[str, Any]) -> dict[str, Any]:
        """An older version's config read as this version writes it (config.upgrade); the file keeps what was written."""
        return upgrade(config)

    @model_validator(mode="after")
    def _names_its_method(self) -> ManifestRecord:
        if not isinstance(self.config.get("method"), dict) or not self.config["method"].get("name"):
            raise ValueError("no 'method.name'")
        return self

    @property
    def method(self) -> str:
        return str(self.config["method"]["name"])

    @property
    def overrides(self) -> list[str]:
        """The command's overrides, as .hydra/overrides.yaml has them."""
        return list((self.config.get("hydra") or {}).get("overrides") or [])


class MetricsRecord(Record):
    """metrics.json (memrl_bench.metrics.compute); the readers use these parts of it."""

    episodes: int | None = None
    labels: list[str] = Field(default_factory=list)
    success_rate: dict[str, dict[int, float]] = Field(default_factory=dict)
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    memory_final: dict[str, Any] = Field(default_factory=dict)
    poison: dict[str, Any] | None = None
    synthetic: dict[str, Any] | None = None
    drift: dict[str, Any] | None = None  # the drift protocol's block (memrl_bench/protocols/drift.py)


class RunRecords(BaseModel):
    """Everything a reader needs of one run folder."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    manifest: ManifestRecord
    episodes: list[EpisodeRecord]
    metrics: MetricsRecord | None  # None until the run completes
    items: list[MemoryItemRecord]  # the final snapshot's memories ([] until the run completes)
    complete: bool  # COMPLETE is there, and the folder passed RunFolder.verify_complete

    @property
    def played(self) -> list[EpisodeRecord]:
        return [e for e in self.episodes if e.played]


def _parsed(model: type[Record], data: Any, where: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise CorruptRunFolderError(f"{where}: {field}: {message}" if field else f"{where}: {message}") from None


def episode_records(raw: list[dict], where: Path | str = EPISODES) -> list[EpisodeRecord]:
    """Episode log lines (as RunFolder.read_episodes returns them) as typed records."""
    return [_parsed(EpisodeRecord, r, f"{where} line {n}") for n, r in enumerate(raw, start=1)]


def memory_items(snapshot: Path | None) -> list[MemoryItemRecord]:
    """The items of a memory snapshot folder ([] if it holds none)."""
    path = None if snapshot is None else Path(snapshot) / "items.jsonl"
    if path is None or not path.exists():
        return []
    items = []
    for n, line in regular_lines(path):
        if not line.strip():
            continue
        try:
            data = parse_json(line)
        except UnreadableJSONError as err:
            raise CorruptRunFolderError(f"{path} line {n} is not valid JSON ({err})") from None
        items.append(_parsed(MemoryItemRecord, data, f"{path} line {n}"))
    return items


def read_run(path: Path | str, require_complete: bool = False) -> RunRecords:
    """Read one run folder; CorruptRunFolderError naming the file and what failed if it is not a whole, readable run.

    Nothing is taken on trust: the manifest is checked against its config hash and its
    digest (RunFolder.read_manifest), and a run marked COMPLETE as the runner checks one
    (RunFolder.verify_complete: a whole log of its schedule's size without duplicate ids,
    metrics.json counting it, a final snapshot matching its SHA256SUMS), so a damaged run
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
        raise CorruptRunFolderError(f"{folder.episodes_path} logs {len(twice)} episode ids more than once (e.g. {twice[0]}): two processes wrote this run")
    if complete:
        folder.verify_complete(raw_manifest, log)
    raw_metrics = folder.read_metrics()
    metrics = _parsed(MetricsRecord, raw_metrics, str(folder.path / "metrics.json")) if raw_metrics is not None else None
    items = memory_items(folder.snapshot_path("final")) if complete else []
    return RunRecords(path=folder.path, manifest=manifest, episodes=episode_records(raw, folder.episodes_path), metrics=metrics, items=items, complete=complete)
