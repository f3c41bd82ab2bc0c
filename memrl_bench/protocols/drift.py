"""The drift protocol: the environment changes under the agent, and memory written before
is partly wrong afterwards (protocol=drift, conf/protocol/drift.yaml).

The change comes at the start of training epoch `drift.epoch`: every batch of that epoch
and after (training, validation, the test at the end) plays each task as the env's
changed version of it (`Env.drifted`: the synthetic world flips the utility of old
lessons for a share of task types, LLB-DB renames the table and its columns,
TextWorldExpress plays another variant of the game). Task ids stay the same, so a task
before and after the change is compared as one task. A memory is written before the
change when its source episode's epoch is below `drift.epoch`.

The metrics (`metrics`, metrics.json's "drift" block) read the log alone. Windows are
consecutive runs of `drift.window` played training episodes in log order: the window
before the change is the last `window` training episodes before it; the windows after
it start at the change (a last window shorter than `window` is left out).

- pre_sr: SR over the window before the change.
- sr_dip: pre_sr minus the lowest SR of a window after the change.
- tasks_until_recovery: 0 when no window after the change falls below pre_sr - tolerance;
  otherwise the training episodes played from the change to the end of the first window,
  after the first window that fell below, whose SR is back at or above pre_sr - tolerance;
  None (shown "-") when none is.
- post_sr, post_expected_sr: SR and mean P(success) (synthetic) over every training
  episode after the change.
- pre_epoch_sr: SR over the training epoch before the change; sr_change: post_sr minus it
  (what the change cost over the rest of training, net of the method's level before).
- stale (synthetic ground truth, envs/synthetic.py): a memory is stale when it was written
  before the change and its lesson is wrong after it. stale_share: stale injections /
  injections over the training episodes after the change; stale_share_by_window: the
  same per window after the change; last_stale_episode: the position (0 = the first
  training episode after the change) of the last training episode that injected a stale
  memory, None if none did; test_stale_share: the same share over the test phases.
"""

from __future__ import annotations

import dataclasses
from typing import Any, runtime_checkable
from typing import Protocol as Capability

import numpy as np
from pydantic import Field, model_validator

from memrl_bench.core.config import ConfigError, Settings
from memrl_bench.core.schema import Episode, MemoryItem, Task
from memrl_bench.protocols.base import Batch, Protocol, ProtocolSettings

STALE = "stale"  # episode info key: one bool per retrieved memory, whether it is stale (synthetic)
REPORTED = ("sr_dip", "tasks_until_recovery", "sr_change", "post_sr", "stale_share", "last_stale_episode")  # the report's drift table


class DriftSettings(Settings):
    """protocol.drift: the environment changes under the agent at the start of one training epoch."""

    epoch: int = Field(
        3,
        ge=2,
        description=(
            "The training epoch at whose start the environment changes; it and everything after (validation, test) play the changed world."
        ),
    )
    seed: int = Field(0, ge=0, description="Which task types flip (synthetic).")
    flip_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="synthetic: the share of task types whose lessons written before the change flip (helpful <-> harmful).",
    )
    game_params: dict[str, int | float | bool | str] | None = Field(
        None, description="textworld_express: the simulator properties after the change (null: the env's own variant of the game)."
    )
    window: int = Field(10, ge=1, description="Training episodes per window of the drift metrics.")
    tolerance: float = Field(
        0.05, ge=0, le=1, description="Recovered: a window's SR within this of the SR of the window before the change."
    )


class DriftingSettings(ProtocolSettings):
    drift: DriftSettings = Field(default_factory=DriftSettings, description="The change (conf/protocol/drift.yaml).")

    @model_validator(mode="after")
    def _changes_in_training(self) -> DriftingSettings:
        if self.drift.epoch > self.epochs:
            raise ValueError(
                f"protocol.drift.epoch={self.drift.epoch} is after the last epoch (protocol.epochs={self.epochs}): the environment would "
                "never change"
            )
        return self


@runtime_checkable
class Drifts(Capability):
    """An env with a changed world (synthetic, llb_db, textworld_express)."""

    def drifted(self, task: Task, drift: DriftSettings) -> Task:
        """`task` as the env plays it after the change: the same id, a changed world that keeps it solvable."""
        ...


def after_change(batch: Batch, drift: DriftSettings) -> bool:
    """Whether the batch plays the changed environment (its epoch is the change's or later)."""
    return batch.epoch >= drift.epoch


def apply(schedule: list[Batch], drift: DriftSettings, env: Drifts) -> list[Batch]:
    """The schedule with each batch after the change playing the changed version of its tasks."""
    changed: dict[str, Task] = {}

    def version(task: Task) -> Task:
        if task.id not in changed:
            changed[task.id] = env.drifted(task, drift)
        return changed[task.id]

    return [dataclasses.replace(b, tasks=tuple(version(t) for t in b.tasks)) if after_change(b, drift) else b for b in schedule]


def written_before(source_epoch: int, change_epoch: int) -> bool:
    """Whether a memory whose source episode was played in `source_epoch` predates a change at the start of `change_epoch`."""
    return source_epoch < change_epoch


def _sr(episodes: list[Episode]) -> float | None:
    return float(np.mean([r.success for r in episodes])) if episodes else None


def _stale_counts(episodes: list[Episode]) -> tuple[int, int]:
    """(stale injections, injections with a ground truth) over these episodes."""
    flags = [bool(f) for r in episodes for f in r.info.get(STALE, [])]
    return sum(flags), len(flags)


def _share(counts: tuple[int, int]) -> float | None:
    return counts[0] / counts[1] if counts[1] else None


def recovery(pre_sr: float, window_srs: list[float], window: int, tolerance: float) -> int | None:
    """Training episodes after the change until the SR is back (module doc); None if never."""
    floor = pre_sr - tolerance
    fell = next((i for i, sr in enumerate(window_srs) if sr < floor), None)
    if fell is None:
        return 0
    back = next((i for i in range(fell + 1, len(window_srs)) if window_srs[i] >= floor), None)
    return None if back is None else (back + 1) * window


def metrics(records: list[Episode], drift: DriftSettings) -> dict[str, Any]:
    """The drift block of metrics.json (definitions: the module doc)."""
    train = [r for r in records if r.phase == "train" and r.played]
    before = [r for r in train if written_before(r.epoch, drift.epoch)]
    after = [r for r in train if not written_before(r.epoch, drift.epoch)]
    w = drift.window
    windows = [after[i : i + w] for i in range(0, len(after) - w + 1, w)]
    pre_sr = _sr(before[-w:])
    window_srs = [float(np.mean([r.success for r in chunk])) for chunk in windows]
    out: dict[str, Any] = {
        "epoch": drift.epoch,
        "window": w,
        "tolerance": drift.tolerance,
        "pre_sr": pre_sr,
        "sr_by_window": window_srs,
        "sr_dip": pre_sr - min(window_srs) if pre_sr is not None and window_srs else None,
        "tasks_until_recovery": recovery(pre_sr, window_srs, w, drift.tolerance) if pre_sr is not None and window_srs else None,
        "post_sr": _sr(after),
        "pre_epoch_sr": _sr([r for r in before if r.epoch == drift.epoch - 1]),
    }
    out["sr_change"] = out["post_sr"] - out["pre_epoch_sr"] if out["post_sr"] is not None and out["pre_epoch_sr"] is not None else None
    expected = [r.info["p_success"] for r in after if "p_success" in r.info]
    out["post_expected_sr"] = float(np.mean(expected)) if expected else None
    if any(STALE in r.info for r in records):
        stale_at = [i for i, r in enumerate(after) if any(r.info.get(STALE, []))]
        out["stale_share"] = _share(_stale_counts(after))
        out["stale_share_by_window"] = [_share(_stale_counts(chunk)) for chunk in windows]
        out["last_stale_episode"] = stale_at[-1] if stale_at else None
        out["test_stale_share"] = _share(_stale_counts([r for r in records if r.phase == "test"]))
    return out


class Drift(Protocol):
    Settings = DriftingSettings
    labels = ("drift",)
    metrics_keys = ("drift",)
    settings: DriftingSettings

    def schedule(self, roles: dict[str, Any], tasks: dict[str, list[Task]], task_order_seed: int, env: Any) -> list[Batch]:
        if not isinstance(env, Drifts):
            raise ConfigError(
                f"protocol=drift: env {env.name!r} has no drift (synthetic, llb_db and textworld_express do); use protocol=held_out"
            )
        return apply(super().schedule(roles, tasks, task_order_seed, env), self.settings.drift, env)

    def metrics(self, records: list[Episode], items: list[MemoryItem], roles: dict[str, Any]) -> dict[str, Any]:
        return {"drift": metrics(records, self.settings.drift)}


PROTOCOL = Drift
