"""The transfer protocol (issue 17): learn in one env, test in another.

protocol=transfer (conf/protocol/transfer.yaml) trains nothing. The method starts from the
final memory of a complete source run, `protocol.transfer_from` (that run's folder, or a
folder of runs holding exactly one with this run's method settings, embedder, seed and task
order, and the env settings `protocol.transfer_source_env` names), and plays this run's test
splits with memory frozen. AgentMemoryBench's transfer mode: the transfer gain
P_transfer - P_baseline, where P_baseline is the zero-shot agent on the target's tasks; the
report pairs each transfer run with the `none` run of the same command (transfer_gain) and
sets the source's own held-out gain beside it (the diagonal of the transfer matrix).

Guards (ProtocolViolation or an input error, before anything is played): the source is
complete and its final snapshot matches its checksums; it has this run's method settings and
embedder (its memory keys live in this run's key space); it learned (a transfer run has no
training episodes to trace memories to); none of this run's test tasks was one of its
training tasks. After the run: every memory is one of the source's final memories, with the
provenance of a training episode of the source. On resume the source's memory must be the
one the run started from.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, runtime_checkable
from typing import Protocol as Capability

from pydantic import Field, model_validator

from memrl_bench.core.config import ConfigError, ConfigMismatchError, canonical
from memrl_bench.core.records import RunRecords, read_run
from memrl_bench.core.runfolder import CHECKSUMS, CorruptRunFolderError, RunFolder, run_folders
from memrl_bench.core.schema import Episode, MemoryItem, Task
from memrl_bench.protocols.base import Protocol, ProtocolSettings, ProtocolViolation, role_splits

_MISSING = "???"  # OmegaConf's mark of a mandatory value not given


class TransferSettings(ProtocolSettings):
    transfer_from: str | None = Field(
        None, description="The source run's folder, or a folder of runs holding exactly one source for this run."
    )
    transfer_source_env: dict[str, Any] = Field(
        default_factory=dict, description="Env settings the source run's env must have, to choose among the runs of transfer_from."
    )

    # Its YAML marks it mandatory (???, given on the command line); merged over a composed null, that mark would be lost.
    unlisted = (*ProtocolSettings.unlisted, "transfer_from")

    @model_validator(mode="after")
    def _consistent(self) -> TransferSettings:  # replaces the base rule: a transfer run has 0 epochs
        if self.transfer_from in (None, "", _MISSING):
            raise ValueError(
                "protocol.transfer_from is required for protocol=transfer: the source run's folder, or a folder of runs holding one for "
                "this run"
            )
        if self.epochs != 0 or not self.test_at_end:
            raise ValueError(
                "protocol=transfer tests a source run's memory frozen, with no training here: needs protocol.epochs=0 and "
                "protocol.test_at_end=true"
            )
        return self


@runtime_checkable
class ReadsSourceMemories(Capability):
    """An env that values memories by their source task (the synthetic world): it is told the source run's env."""

    def memories_from(self, env_config: dict[str, Any], seed: int) -> None: ...


class TransferViolation(ConfigError):
    """The source run cannot give this run its memory (another method, another embedder, it
    learned on this run's test tasks, or it never learned); the message says why."""


@dataclass(frozen=True)
class Source:
    """The run whose final memory a transfer run starts from."""

    records: RunRecords
    final: Path  # its final memory snapshot
    memory_sha256: str  # of that snapshot's checksums: the memory the transfer run starts from

    @property
    def path(self) -> Path:
        return self.records.path

    @property
    def config(self) -> dict[str, Any]:
        return self.records.manifest.config

    @property
    def train_split(self) -> str:
        roles = self.records.manifest.env.roles if self.records.manifest.env else {}
        return str(roles.get("train", "train"))

    @property
    def train_episodes(self) -> list[Episode]:
        return [r for r in self.records.episodes if r.phase == "train"]

    def identity(self) -> dict[str, str]:
        """What the transfer run's manifest records of its source (and a resume checks)."""
        return {
            "source_run": str(self.path),
            "source_config_hash": self.records.manifest.config_hash,
            "source_memory_sha256": self.memory_sha256,
        }


def _same(a: Any, b: Any) -> bool:
    return canonical(a) == canonical(b)


def _mismatch(source: dict, cfg: dict, seeds: bool) -> str | None:
    """Why the run whose config is `source` cannot be this run's source (None: it can)."""
    for group in ("method", "embedder"):
        if not _same(source.get(group), cfg.get(group)):
            mine, theirs = cfg.get(group) or {}, source.get(group) or {}
            keys = sorted(k for k in {*mine, *theirs} if not _same(mine.get(k), theirs.get(k)))
            return (
                f"its {group} settings differ "
                f"({', '.join(f'{group}.{k}: {theirs.get(k)!r} there, {mine.get(k)!r} here' for k in keys[:3])})"
            )
    wanted = (cfg.get("protocol") or {}).get("transfer_source_env") or {}
    env = source.get("env") or {}
    off = [k for k, v in wanted.items() if not _same(env.get(k), v)]
    if off:
        return (
            f"its env has {', '.join(f'{k}={env.get(k)!r}' for k in off)}, protocol.transfer_source_env asks for "
            f"{', '.join(f'{k}={wanted[k]!r}' for k in off)}"
        )
    if seeds:
        for key in ("seed", "task_order_seed"):
            if not _same(source.get(key), cfg.get(key)):
                return f"its {key} is {source.get(key)!r}, this run's {cfg.get(key)!r}"
    return None


def find_source(cfg: dict) -> Path:
    """The source run's folder for a transfer run's config (see the module doc)."""
    root = Path(cfg["protocol"]["transfer_from"])
    if not root.is_dir():
        raise ConfigError(f"protocol.transfer_from: {root} is not a folder (a source run, or a folder of runs)")
    folders = run_folders(root)
    if not folders:
        raise ConfigError(f"protocol.transfer_from: {root} holds no run folder (manifest.json); run the source first")
    given_run = folders == [root]
    configs = {p: RunFolder(p).read_manifest() or {} for p in folders}
    why = {p: _mismatch(c.get("config") or {}, cfg, seeds=not given_run) for p, c in configs.items()}
    fitting = [p for p, reason in why.items() if reason is None]
    if given_run and not fitting:
        raise TransferViolation(f"protocol.transfer_from: {root} cannot be this run's source: {why[root]}")
    if not fitting:
        near = "; ".join(f"{p.name}: {reason}" for p, reason in list(why.items())[:3])
        raise TransferViolation(
            f"protocol.transfer_from: no run under {root} is this run's source (same method settings, embedder, seed and task "
            f"order{' and protocol.transfer_source_env' if (cfg['protocol'].get('transfer_source_env')) else ''}); e.g. {near}"
        )
    if len(fitting) > 1:
        names = ", ".join(str(p.relative_to(root)) for p in fitting[:4])
        raise TransferViolation(
            f"protocol.transfer_from: {len(fitting)} runs under {root} could be this run's source ({names}); name one folder, or tell them "
            "apart with protocol.transfer_source_env.<env key>=<value>"
        )
    return fitting[0]


def _memory_sha256(final: Path) -> str:
    return hashlib.sha256((final / CHECKSUMS).read_bytes()).hexdigest()


def load_source(cfg: dict) -> Source:
    """The source run of a transfer run's config, read and checked (see the module doc)."""
    path = find_source(cfg)
    folder = RunFolder(path)
    if not folder.is_complete():
        raise TransferViolation(
            f"protocol.transfer_from: the source run {path} is not complete; finish it first (its own command resumes it)"
        )
    records = read_run(path, require_complete=True)
    if (records.manifest.config.get("protocol") or {}).get("transfer_from"):
        raise TransferViolation(
            f"protocol.transfer_from: {path} is itself a transfer run (it learned nothing); use the run it started from, "
            f"{(records.manifest.config['protocol'])['transfer_from']}"
        )
    final = folder.snapshot_path("final")
    if final is None or not (final / CHECKSUMS).exists():
        raise CorruptRunFolderError(
            f"{path} has no checksummed final memory snapshot (memory/final/{CHECKSUMS}); re-run the source into a new folder"
        )
    folder.verify_snapshot(final)
    source = Source(records, final, _memory_sha256(final))
    if not source.train_episodes:
        raise TransferViolation(f"protocol.transfer_from: {path} has no training episodes: there is nothing learned to transfer")
    return source


def check_unchanged(source: Source, recorded: dict | None) -> None:
    """A resumed transfer run's source must still hold the memory the run started from."""
    if recorded and recorded != source.identity():
        raise ConfigMismatchError(
            f"the transfer source {source.path} changed since this run started (memory {recorded.get('source_memory_sha256', '?')[:12]} "
            "then, "
            f"{source.memory_sha256[:12]} now): refusing to mix two memories in one run; use another results_dir / experiment_name"
        )


def check_held_out(source: Source, test_tasks: dict[str, list[Task]]) -> None:
    """No test task of this run was a training task of the source (transfer is tested on unseen tasks)."""
    learned = {r.task_id for r in source.train_episodes}
    for split, tasks in test_tasks.items():
        seen = sorted(t.id for t in tasks if t.id in learned)
        if seen:
            raise ProtocolViolation(
                f"test split {split!r} holds {len(seen)} task(s) the source run {source.path} learned from (e.g. {seen[0]!r}): transfer is "
                "tested on tasks the source never saw"
            )


def audit(items: list[MemoryItem], source: Source) -> None:
    """Every memory the run ends with is a final memory of the source, written by a training episode of it."""
    inherited = {i.id: i.provenance for i in source.records.items}
    train_ids = {r.episode_id for r in source.train_episodes}
    for item in items:
        p = item.provenance
        origin = inherited.get(item.id)
        if (
            origin is None
            or (origin.episode_id, origin.split) != (p.episode_id, p.split)
            or p.phase != "train"
            or p.split != source.train_split
            or p.episode_id not in train_ids
        ):
            raise ProtocolViolation(
                f"memory item {item.id!r} (provenance phase={p.phase!r} split={p.split!r} episode={p.episode_id!r}) is not a memory the "
                "source run "
                f"{source.path} learned in training: a transfer run only reads the source's memory"
            )


def metrics(records: list[Episode], source: Source, items: list[MemoryItem], test_splits: list[str]) -> dict[str, Any]:
    """metrics.json's transfer block: where the memory came from, and what it did on this run's test splits.

    test_success: SR per test split (in the order of the run's roles; test_split, the first,
    is the headline the report pairs with `none`); test_injected_share: the share of test
    episodes that were given at least one memory (a memory never retrieved cannot transfer).
    """
    test = [r for r in records if r.phase == "test" and r.played]
    splits = [s for s in test_splits if any(r.split == s for r in test)]
    share = lambda values: sum(values) / len(values) if values else None  # noqa: E731
    return {
        **source.identity(),
        "source_env": source.config.get("env"),
        "source_method": source.records.manifest.method,
        "inherited_items": len(items),
        "test_split": splits[0] if splits else None,
        "test_success": {s: share([r.success for r in test if r.split == s]) for s in splits},
        "test_injected_share": {s: share([bool(r.retrieved) for r in test if r.split == s]) for s in splits},
    }


class Transfer(Protocol):
    Settings = TransferSettings
    labels = ("transfer",)
    metrics_keys = ("transfer",)
    report_columns = {
        "transfer_sr": ("transfer: test SR with the source's memory %", 100, 1),
        "transfer_injected_share": ("transfer: test episodes given a memory %", 100, 1),
        "transfer_gain": ("transfer gain (vs none on the target) pp", 100, 1),
    }
    settings: TransferSettings

    @classmethod
    def report_numbers(cls, blocks: dict[str, Any]) -> dict[str, float | None]:
        t = blocks["transfer"]
        return {"transfer_sr": t["test_success"][t["test_split"]], "transfer_injected_share": t["test_injected_share"][t["test_split"]]}

    source: Source

    def start(self, config: dict[str, Any], recorded: dict[str, Any] | None) -> None:
        self.source = load_source(config)
        check_unchanged(self.source, (recorded or {}).get("transfer"))

    def manifest(self) -> dict[str, Any]:
        return {"transfer": self.source.identity()}

    def roles(self, roles: dict[str, Any]) -> dict[str, Any]:
        return {**super().roles(roles), "train": None}  # it trains nothing here: its train split is not even loaded

    def check_tasks(self, env: Any, tasks: dict[str, list[Task]], roles: dict[str, Any]) -> None:
        check_held_out(self.source, {split: tasks[split] for split in role_splits(roles, "test")})
        if isinstance(env, ReadsSourceMemories):
            env.memories_from(self.source.config["env"], seed=int(self.source.config["env"].get("seed", 0) or 0))

    def initial_memory(self) -> Path | None:
        return self.source.final

    def audit(self, items: list[MemoryItem], train_episode_ids: set[str], roles: dict[str, Any]) -> None:
        audit(items, self.source)

    def metrics(self, records: list[Episode], items: list[MemoryItem], roles: dict[str, Any]) -> dict[str, Any]:
        return {"transfer": metrics(records, self.source, items, role_splits(roles, "test"))}


PROTOCOL = Transfer
