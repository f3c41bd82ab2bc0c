"""The evaluation protocol: the schedule of batches, and the guards that enforce fairness.

held_out (default): learn on the train split only; validate after every epoch and
test at the end with memory frozen.
runtime_learning (MemRL's main tables): learn on and score the same tasks; labelled
in every output, never the default.
streaming, replay, repair: memrl_bench.streams (their rules and metrics).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from memrl_bench import streams
from memrl_bench.config import InputError, ProtocolConfig
from memrl_bench.types import MemoryItem, Task


class ProtocolViolation(InputError, RuntimeError):
    """The run broke a rule of the fair protocol; it is stopped, not reported."""


EPISODE_TAGS = ("train", "validation", "replay", "poison")  # how an episode id starts, but a test episode's (its split)


@dataclass(frozen=True)
class Batch:
    """A mini-batch of the schedule: these episodes share one memory state."""

    phase: str  # train, validation, test
    split: str
    epoch: int
    index: int
    tasks: tuple[Task, ...]
    first_order_index: int
    samples: int = 1
    poison: bool = False  # adversarial memories fed to learn(), not played
    flipped: frozenset[str] = frozenset()  # task ids whose success learn() sees flipped (repair)

    @property
    def key(self) -> tuple:
        return (self.phase, self.split, self.epoch, self.index)

    @property
    def size(self) -> int:
        return len(self.tasks) * self.samples

    def episode_id(self, position: int, sample: int) -> str:
        tag = "poison" if self.poison else self.split if self.phase == "test" else self.phase
        return f"{tag}-e{self.epoch:02d}-{self.first_order_index + position:05d}-s{sample}"


def epoch_order(tasks: list[Task], task_order_seed: int, epoch: int, epoch_order_seeds: list[int] | None) -> list[Task]:
    """The training order of one epoch, fixed by the task-order seed (not the method's)."""
    seed = epoch_order_seeds[epoch - 1] if epoch_order_seeds and epoch - 1 < len(epoch_order_seeds) else task_order_seed
    rng = np.random.default_rng([seed, epoch])
    return [tasks[i] for i in rng.permutation(len(tasks))]


def _chunks(phase: str, split: str, epoch: int, tasks: list[Task], size: int, samples: int = 1) -> Iterable[Batch]:
    per_batch = max(1, size // samples)
    for index, start in enumerate(range(0, len(tasks), per_batch)):
        yield Batch(phase, split, epoch, index, tuple(tasks[start : start + per_batch]), start, samples)


def build_schedule(config: ProtocolConfig, roles: dict[str, Any], tasks: dict[str, list[Task]], task_order_seed: int) -> list[Batch]:
    """Every batch of the run, in order. Deterministic: resume relies on it."""
    schedule: list[Batch] = []
    train_split = roles["train"]
    for epoch in range(1, config.epochs + 1):
        order = epoch_order(tasks[train_split], task_order_seed, epoch, config.epoch_order_seeds)
        if config.poison_share > 0 and epoch == config.poison_epoch:
            # Poison comes from the training tasks, so it passes the provenance audit as
            # logged training input: the experiment measures what a method does with it.
            n_poison = max(1, round(config.poison_share * len(order)))
            schedule.append(Batch("train", train_split, epoch, -1, tuple(order[:n_poison]), 0, poison=True))
        flipped = streams.corrupted_tasks(order, config, epoch)
        train = [dataclasses.replace(b, flipped=flipped & {t.id for t in b.tasks}) for b in _chunks("train", train_split, epoch, order, config.batch_size)]
        schedule.extend(_with_replay(train, config) if config.replay_every else train)
        if config.validate_every_epoch and roles.get("validation"):
            schedule.extend(_chunks("validation", roles["validation"], epoch, tasks[roles["validation"]], config.batch_size, config.eval_samples))
    if config.test_at_end:
        for split in roles.get("test") or []:
            schedule.extend(_chunks("test", split, config.epochs, tasks[split], config.batch_size, config.eval_samples))
    return schedule


def _with_replay(train: list[Batch], config: ProtocolConfig) -> list[Batch]:
    """The stream's batches with a replay phase after the batch in which every
    replay_every-th task is learned: a sample of the tasks learned so far, memory frozen."""
    out: list[Batch] = []
    learned: list[Task] = []
    for batch in train:
        out.append(batch)
        before = len(learned) // config.replay_every
        learned += batch.tasks
        for point in range(before + 1, len(learned) // config.replay_every + 1):
            out.extend(_chunks("replay", batch.split, point, streams.replay_sample(learned[: point * config.replay_every], config, point), config.batch_size))
    return out


def schedule_size(config: ProtocolConfig, roles: dict[str, Any], split_sizes: dict[str, int]) -> int:
    """The episodes of a run's whole schedule, from its roles and split sizes (as its manifest records them)."""
    tasks = {split: [Task(id=f"{split}/{i}", split=split, description="") for i in range(n)] for split, n in split_sizes.items()}
    return sum(b.size for b in build_schedule(config, roles, tasks, 0))


def split_hash(tasks: list[Task]) -> str:
    return hashlib.sha256("\n".join(sorted(t.id for t in tasks)).encode()).hexdigest()


def check_disjoint(tasks: dict[str, list[Task]]) -> None:
    """Refuse splits that share a task id.

    Descriptions are not compared: benchmarks hold different tasks with the same text
    (ALFWorld's games differ in their rooms, not their goal sentence)."""
    seen: dict[str, str] = {}
    for split, split_tasks in tasks.items():
        for task in split_tasks:
            if task.id in seen and seen[task.id] != split:
                raise ProtocolViolation(f"splits {seen[task.id]!r} and {split!r} overlap: task {task.id!r} is in both; held-out evaluation needs disjoint splits")
            seen[task.id] = split


def check_backbone(llm_cfg: dict, config: ProtocolConfig) -> list[str]:
    """Refuse a backbone declared fine-tuned on the env's data unless allowed; return labels."""
    finetuned_on = llm_cfg.get("finetuned_on")
    if not finetuned_on:
        return []
    if not config.allow_finetuned:
        raise ProtocolViolation(
            f"llm.finetuned_on={finetuned_on!r}: the backbone was fine-tuned on environment data, so 'runtime learning' "
            "would be measured on a model that already learned the tasks; set protocol.allow_finetuned=true to run it anyway (labelled)"
        )
    return ["finetuned_backbone"]


def audit_provenance(items: list[MemoryItem], train_episode_ids: set[str], train_split: str) -> None:
    """Every memory item must come from a training episode of this run."""
    for item in items:
        p = item.provenance
        if p.phase != "train" or p.split != train_split or p.episode_id not in train_episode_ids:
            raise ProtocolViolation(
                f"memory item {item.id!r} has provenance phase={p.phase!r} split={p.split!r} episode={p.episode_id!r}, "
                f"not a training episode of split {train_split!r}: evaluation data leaked into memory"
            )
