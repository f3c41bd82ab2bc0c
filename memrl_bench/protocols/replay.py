"""replay (conf/protocol/replay.yaml): a stream where after every `replay_every` learned tasks
`replay_tasks` tasks sampled from those already learned are re-tested with memory frozen
(AgentMemoryBench's replay mode), logged in phase "replay" with epoch = the replay point."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from pydantic import Field

from memrl_bench.core.schema import Episode, MemoryItem, Task
from memrl_bench.protocols.base import Batch, chunks
from memrl_bench.protocols.streaming import Streaming, StreamingSettings, stream


class ReplaySettings(StreamingSettings):
    replay_every: int = Field(
        10, ge=1, description="m: after every m learned stream tasks, re-test replay_tasks of them with memory frozen."
    )
    replay_tasks: int = Field(
        5, ge=1, description="n: tasks sampled (replay_seed) from those already learned, re-tested at each replay point."
    )
    replay_seed: int = Field(0, ge=0, description="Seed of the replay samples.")


def replay_sample(learned: list[Task], settings: ReplaySettings, point: int) -> list[Task]:
    """The tasks re-tested at replay point `point` (1-based): replay_tasks of the learned
    ones (all when fewer), drawn without replacement by (replay_seed, point)."""
    rng = np.random.default_rng([settings.replay_seed, point])
    chosen = rng.choice(len(learned), size=min(settings.replay_tasks, len(learned)), replace=False)
    return [learned[i] for i in chosen]


def replay_metrics(records: list[Episode], replay_every: int) -> dict[str, Any]:
    """The replay protocol's metrics.

    A task's immediate score is its success when the stream first attempted it. At each
    replay point k (after k * replay_every learned tasks): the re-tested tasks' SR and
    forgotten, the share of the re-tested tasks solved immediately that fail now (None
    when none was). forgetting_rate (AgentMemoryBench, calculate_replay_metrics.py, on
    binary scores): over the tasks solved immediately and re-tested at least once, the
    mean of each task's share of failed re-tests; 0 no forgetting, 1 all forgotten.
    """
    immediate = {r.task_id: r.success for r in stream(records)}
    by_point: dict[int, list[Episode]] = defaultdict(list)
    for r in records:
        if r.phase == "replay":
            by_point[r.epoch].append(r)
    points = {}
    failed_retests: dict[str, list[bool]] = defaultdict(list)
    for k, retested in sorted(by_point.items()):
        solved_before = [r for r in retested if immediate.get(r.task_id)]
        for r in solved_before:
            failed_retests[r.task_id].append(not r.success)
        points[k] = {
            "after_tasks": k * replay_every,
            "retested": len(retested),
            "success_rate": float(np.mean([r.success for r in retested])),
            "forgotten": float(np.mean([not r.success for r in solved_before])) if solved_before else None,
        }
    rates = [float(np.mean(v)) for v in failed_retests.values()]
    return {"points": points, "forgetting_rate": float(np.mean(rates)) if rates else None, "tasks_with_replays": len(rates)}


class Replay(Streaming):
    Settings = ReplaySettings
    labels = ("streaming", "replay")
    metrics_keys = ("streaming", "replay")
    report_columns = {**Streaming.report_columns, "replay_forgetting_rate": ("replay forgetting rate %", 100, 1)}
    settings: ReplaySettings

    @classmethod
    def report_numbers(cls, blocks: dict[str, Any]) -> dict[str, float | None]:
        return {**super().report_numbers(blocks), "replay_forgetting_rate": blocks["replay"]["forgetting_rate"]}

    def epoch_batches(self, order: list[Task], split: str, epoch: int) -> list[Batch]:
        """The stream's batches with a replay phase after the batch in which every
        replay_every-th task is learned: a sample of the tasks learned so far, memory frozen."""
        s = self.settings
        out: list[Batch] = []
        learned: list[Task] = []
        for batch in super().epoch_batches(order, split, epoch):
            out.append(batch)
            before = len(learned) // s.replay_every
            learned += batch.tasks
            for point in range(before + 1, len(learned) // s.replay_every + 1):
                out.extend(chunks("replay", batch.split, point, replay_sample(learned[: point * s.replay_every], s, point), s.batch_size))
        return out

    def metrics(self, records: list[Episode], items: list[MemoryItem], roles: dict[str, Any]) -> dict[str, Any]:
        return {**super().metrics(records, items, roles), "replay": replay_metrics(records, self.settings.replay_every)}


PROTOCOL = Replay
