"""A protocol of one's own, outside the package (tests/contracts/test_own_protocol.py): the held-out protocol
with learn() never told that an episode succeeded (memory without success labels), its own
metrics block, report column and findings kind. Selected by
conf `protocol/unlabelled.yaml`, whose name is this class: `tests.own_protocol:Unlabelled`."""

from __future__ import annotations

from typing import Any

import numpy as np

from memrl_bench.core.schema import Episode, MemoryItem
from memrl_bench.protocols.held_out import HeldOut


class Unlabelled(HeldOut):
    labels = ("unlabelled",)
    metrics_keys = ("unlabelled",)
    report_columns = {"hidden_successes": ("training successes learn() was not told %", 100, 1)}

    @classmethod
    def kind(cls, settings: dict[str, Any]) -> str:
        return "unlabelled"

    def learning_signal(self, episode: Episode) -> bool:
        return False

    def metrics(self, records: list[Episode], items: list[MemoryItem], roles: dict[str, Any]) -> dict[str, Any]:
        train = [r.success for r in records if r.phase == "train" and r.played]
        return {"unlabelled": {"hidden_successes": float(np.mean(train))}}

    @classmethod
    def report_numbers(cls, blocks: dict[str, Any]) -> dict[str, float | None]:
        return {"hidden_successes": blocks["unlabelled"]["hidden_successes"]}
