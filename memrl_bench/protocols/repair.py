"""repair (conf/protocol/repair.yaml): the held-out protocol whose first `corrupt_epochs` epochs
feed learn() the flipped success of a seeded share of the training episodes (the corrupted
phase); the later epochs feed the true one (the repair phase). Only the learning signal is
wrong: the log keeps the true success and marks the episode `reward_flipped`. A clean twin
(the same command with corrupt_share=0) gives error robustness and net recovery."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from memrl_bench.core.schema import Episode, MemoryItem, Task
from memrl_bench.protocols.base import FLIPPED, Batch, Protocol, ProtocolSettings


class RepairSettings(ProtocolSettings):
    corrupt_share: float = Field(
        0.3,
        ge=0,
        le=1,
        description="Share of the training episodes of each corrupted epoch whose success learn() sees flipped (0: the clean twin).",
    )
    corrupt_epochs: int = Field(
        2, ge=1, description="Epochs 1..corrupt_epochs are the corrupted phase, the rest the repair phase (true rewards)."
    )
    corrupt_seed: int = Field(0, ge=0, description="Seed choosing the corrupted episodes of each epoch.")

    @model_validator(mode="after")
    def _has_a_repair_phase(self) -> RepairSettings:
        if self.corrupt_share > 0 and (self.corrupt_epochs >= self.epochs or not self.validate_every_epoch):
            raise ValueError(
                "protocol.corrupt_share>0 needs a repair phase and held-out SR after each phase: protocol.corrupt_epochs "
                f"({self.corrupt_epochs}) "
                f"< protocol.epochs ({self.epochs}) and protocol.validate_every_epoch=true"
            )
        return self


def corrupted_tasks(order: list[Task], settings: RepairSettings, epoch: int) -> frozenset[str]:
    """The training tasks of `epoch` whose success learn() sees flipped: round(corrupt_share * n)
    of them, drawn by (corrupt_seed, epoch), in the corrupted phase only."""
    if settings.corrupt_share <= 0 or epoch > settings.corrupt_epochs:
        return frozenset()
    ids = sorted(t.id for t in order)  # by id: the choice is the corrupt seed's alone, not the task order's
    rng = np.random.default_rng([settings.corrupt_seed, epoch])
    return frozenset(ids[i] for i in rng.choice(len(ids), size=round(settings.corrupt_share * len(ids)), replace=False))


def repair_metrics(records: list[Episode], corrupt_epochs: int) -> dict[str, Any]:
    """The repair protocol's metrics from the held-out (validation) SR after each epoch.

    sr_after_corruption: validation SR after the last corrupted epoch; sr_after_repair:
    after the last epoch; repair_gain: their difference. flipped: the training episodes
    whose success learn() saw flipped (logged with their true success). Error robustness
    and net recovery need a clean run of the same config: see against_clean.
    """
    sr: dict[int, list[bool]] = defaultdict(list)
    for r in records:
        if r.phase == "validation":
            sr[r.epoch].append(r.success)
    curve = {e: float(np.mean(v)) for e, v in sorted(sr.items())}
    train = [r for r in records if r.phase == "train" and r.played]
    flipped = sum(bool(r.info.get(FLIPPED)) for r in train)
    after_corruption = curve.get(corrupt_epochs)
    after_repair = curve[max(curve)] if curve and max(curve) > corrupt_epochs else None
    return {
        "corrupt_epochs": corrupt_epochs,
        "flipped": flipped,
        "flipped_share_of_corrupted_phase": flipped / max(1, sum(r.epoch <= corrupt_epochs for r in train)),
        "validation_success": curve,
        "sr_after_corruption": after_corruption,
        "sr_after_repair": after_repair,
        "repair_gain": after_repair - after_corruption if after_repair is not None and after_corruption is not None else None,
    }


def against_clean(corrupted: dict[str, Any], clean: dict[str, Any]) -> dict[str, float | None]:
    """Error robustness and net recovery of a corrupted run's repair metrics against a clean
    run's (the same config with corrupt_share 0, whose repair metrics are computed with the
    same corrupt_epochs): the issue's definitions, as differences of held-out SR.

    error_robustness: SR after the corrupted phase minus the clean run's SR after the same
    epochs (0: the corruption did no harm; negative: it did). net_recovery: SR after the
    repair phase minus the clean run's SR after as many epochs (0: fully recovered).
    """

    def diff(key: str) -> float | None:
        a, b = corrupted.get(key), clean.get(key)
        return a - b if a is not None and b is not None else None

    return {"error_robustness": diff("sr_after_corruption"), "net_recovery": diff("sr_after_repair")}


class Repair(Protocol):
    Settings = RepairSettings
    metrics_keys = ("repair",)
    report_columns = {
        "sr_after_corruption": ("held-out SR after the corrupted phase %", 100, 1),
        "sr_after_repair": ("held-out SR after repair %", 100, 1),
        "repair_gain": ("repair gain pp", 100, 1),
        "error_robustness": ("error robustness (vs clean twin) pp", 100, 1),
        "net_recovery": ("net recovery (vs clean twin) pp", 100, 1),
    }
    settings: RepairSettings

    @classmethod
    def report_numbers(cls, blocks: dict[str, Any]) -> dict[str, float | None]:
        return {k: blocks["repair"][k] for k in ("sr_after_corruption", "sr_after_repair", "repair_gain")}

    def run_labels(self) -> list[str]:
        return ["corrupted_rewards"] if self.settings.corrupt_share > 0 else []

    def epoch_batches(self, order: list[Task], split: str, epoch: int) -> list[Batch]:
        flipped = corrupted_tasks(order, self.settings, epoch)
        return [dataclasses.replace(b, flipped=flipped & {t.id for t in b.tasks}) for b in super().epoch_batches(order, split, epoch)]

    def learning_signal(self, episode: Episode) -> bool:
        return episode.success != bool(episode.info.get(FLIPPED))

    def metrics(self, records: list[Episode], items: list[MemoryItem], roles: dict[str, Any]) -> dict[str, Any]:
        return {"repair": repair_metrics(records, self.settings.corrupt_epochs)}


PROTOCOL = Repair
