"""The protocol interface: how a run's episodes are scheduled, what learn() is told, what is
measured beyond the episode, and the guards that keep evaluation fair.

A protocol is a module of this package assigning `PROTOCOL` (a `Protocol` subclass) and a
YAML `conf/protocol/<name>.yaml`; `protocol=<name>` selects it and its `Settings` model
checks the `protocol` group. The base class is the held-out protocol's skeleton: training
epochs over the train split (`epoch_batches`), validation after each epoch and the test at
the end with memory frozen. Protocols change it by overriding the hooks below; none of the
runner, the metrics, the report or the findings tests a protocol's settings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from memrl_bench.core.config import ConfigError, InputError, Settings
from memrl_bench.core.schema import Episode, MemoryItem, Task


class ProtocolViolation(InputError, RuntimeError):
    """The run broke a rule of the fair protocol; it is stopped, not reported."""


EPISODE_TAGS = ("train", "validation", "replay", "poison")  # how an episode id starts, but a test episode's (its split)
FLIPPED = "reward_flipped"  # info key of a logged episode whose success learn() saw flipped (Batch.flipped)


@dataclass(frozen=True)
class Batch:
    """A mini-batch of the schedule: these episodes share one memory state."""

    phase: str  # train, validation, test, replay
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


def chunks(phase: str, split: str, epoch: int, tasks: list[Task], size: int, samples: int = 1) -> Iterable[Batch]:
    """`tasks` cut into batches of `size` episodes (`samples` episodes per task)."""
    per_batch = max(1, size // samples)
    for index, start in enumerate(range(0, len(tasks), per_batch)):
        yield Batch(phase, split, epoch, index, tuple(tasks[start : start + per_batch]), start, samples)


DEFAULT = "held_out"  # the protocol of a config that names none
# A run's schedule is built whole before it plays: `protocol.epochs=2**31` ended the CLI in a segfault (twentieth round).
MAX_EPOCHS = 10_000
MAX_EVAL_SAMPLES = 1_000
MAX_SCHEDULE_EPISODES = 10_000_000


def name_of(settings: dict[str, Any]) -> str:
    """The protocol a config's `protocol` group names."""
    return str(settings.get("name", DEFAULT))


def role_splits(roles: dict[str, Any], role: str) -> list[str]:
    """The splits playing `role` (a role names one split or a list of them)."""
    splits = roles.get(role)
    return [splits] if isinstance(splits, str) else list(splits or [])


class ProtocolSettings(Settings):
    """The settings every protocol has (conf/protocol/held_out.yaml); a protocol's own model adds its keys."""

    name: str = Field("held_out", description="The protocol (a module of memrl_bench/protocols; conf/protocol/<name>.yaml).")
    epochs: int = Field(10, ge=0, le=MAX_EPOCHS, description="Training epochs over the train split (0 only for transfer: no training).")
    batch_size: int = Field(32, ge=1, description="Episodes played against one memory state before learn() (MemRL: 32).")
    validate_every_epoch: bool = Field(True, description="Play the validation split after each epoch, memory frozen.")
    test_at_end: bool = Field(True, description="Play every test split once after training, memory frozen.")
    eval_samples: int = Field(1, ge=1, le=MAX_EVAL_SAMPLES, description="Samples per evaluation task, for pass@k.")
    allow_finetuned: bool = Field(False, description="Run a backbone declared fine-tuned on this env's data (then labelled).")
    checkpoint_interval_s: float = Field(
        30, ge=0, description="Seconds between memory checkpoints (resume replays learn() after the last one)."
    )
    max_tasks: dict[Literal["train", "validation", "test"], int | None] = Field(
        default_factory=dict, description="Per role: use only the first N tasks (N >= 1; null: all)."
    )
    skip_tasks: dict[Literal["train", "validation", "test"], int] = Field(
        default_factory=dict,
        description=(
            "Per role: leave out the first N tasks of each split, before max_tasks (a pilot on tasks a study that takes the first ones "
            "never sees)."
        ),
    )
    epoch_order_seeds: list[int] | None = Field(
        None, description="Per-epoch task-order seeds, overriding task_order_seed (order counterfactuals)."
    )

    # Reflexion-style retry within a task (memrl_bench/protocols/retry.py): extra attempts, not memory.
    retries: int = Field(
        0, ge=0, description="After a failure verdict, play the task again up to this many more times within its batch (0: no retry)."
    )
    reflection: Literal["note", "reflexion"] = Field(
        "note",
        description=(
            "What a retry is shown: note, the previous attempt and its verdict (MemRL's baseline_mode=reflection); reflexion, the "
            "writer model's reflections on the last 3 failed attempts (Reflexion)."
        ),
    )
    verdict: Literal["ground_truth", "llm_judge"] = Field(
        "ground_truth",
        description=(
            "What decides a retry: the environment's success (as MemRL and Reflexion do; at evaluation a scoring leak, labelled) or "
            "the writer model's judgement of the attempt (it never reads the env's grading)."
        ),
    )
    retry_phases: list[Literal["train", "validation", "test"]] = Field(
        default_factory=lambda: ["train", "validation", "test"], description="The phases whose episodes are retried."
    )

    # set with +protocol.<key>=...: absent keys compose the config (and its hash) as before they existed
    unlisted = ("skip_tasks", "retries", "reflection", "verdict", "retry_phases")

    @field_validator("skip_tasks")
    @classmethod
    def _skips(cls, skips: dict[str, int]) -> dict[str, int]:
        for role, skip in skips.items():
            if skip < 0:
                raise ValueError(f"{role} must be >= 0, got {skip}")
        return skips

    @field_validator("max_tasks")
    @classmethod
    def _positive_limits(cls, limits: dict[str, int | None]) -> dict[str, int | None]:
        for role, limit in limits.items():
            if limit is not None and limit < 1:
                raise ValueError(f"{role} must be null (all tasks) or >= 1, got {limit}")
        return limits

    @field_validator("epoch_order_seeds")
    @classmethod
    def _seeds(cls, seeds: list[int] | None) -> list[int] | None:
        if seeds is not None and any(s < 0 for s in seeds):
            raise ValueError(f"seeds must be >= 0, got {seeds}")
        return seeds

    @model_validator(mode="after")
    def _retry_keys(self) -> ProtocolSettings:
        given = sorted({"reflection", "verdict", "retry_phases"} & self.model_fields_set)
        if given and self.retries == 0:
            raise ValueError(f"protocol.{given[0]} has no effect without retries: set protocol.retries >= 1")
        return self

    @model_validator(mode="after")
    def _consistent(self) -> ProtocolSettings:
        if self.epochs == 0:
            raise ValueError("protocol.epochs=0 trains nothing: only protocol=transfer tests memory learned elsewhere; set epochs >= 1")
        if self.epoch_order_seeds is not None and len(self.epoch_order_seeds) > self.epochs:
            raise ValueError(f"protocol.epoch_order_seeds has {len(self.epoch_order_seeds)} entries for {self.epochs} epochs")
        return self


class Protocol:
    """One evaluation protocol (module doc). The defaults are the held-out protocol's."""

    Settings: ClassVar[type[ProtocolSettings]] = ProtocolSettings
    labels: ClassVar[tuple[str, ...]] = ()  # carried by every output of its runs
    metrics_keys: ClassVar[tuple[str, ...]] = ()  # the metrics.json blocks `metrics` writes
    # The report's protocols table: number -> (column title, scale, digits); `report_numbers` gives a run's
    # own numbers, the report adds those paired with a twin run (memrl_bench/report/aggregate.py).
    report_columns: ClassVar[dict[str, tuple[str, float, int]]] = {}

    def __init__(self, settings: ProtocolSettings):
        self.settings = settings

    # ---- what its runs are called -------------------------------------------------
    @classmethod
    def kind(cls, settings: dict[str, Any]) -> str:
        """What the findings call a run of it (runs of one kind are compared), from its config's `protocol` group."""
        return name_of(settings)

    def run_labels(self) -> list[str]:
        return list(self.labels)

    # ---- before anything is played ------------------------------------------------
    def start(self, config: dict[str, Any], recorded: dict[str, Any] | None) -> None:
        """Read what the run needs from outside its config (transfer: the source run); `recorded`: the
        run folder's manifest on a resume."""

    def manifest(self) -> dict[str, Any]:
        """Entries of the run's manifest beside the config (transfer: the source's identity)."""
        return {}

    def roles(self, roles: dict[str, Any]) -> dict[str, Any]:
        """The env's roles as this protocol plays them: no validation or test split when not scored."""
        roles = dict(roles)
        if not self.settings.validate_every_epoch:
            roles.pop("validation", None)
        if not self.settings.test_at_end:
            roles["test"] = []
        return roles

    def check_tasks(self, env: Any, tasks: dict[str, list[Task]], roles: dict[str, Any]) -> None:
        """Guards on the tasks before the schedule is built (transfer: its test tasks unseen by the source)."""

    # ---- the schedule ----------------------------------------------------------------
    def schedule(self, roles: dict[str, Any], tasks: dict[str, list[Task]], task_order_seed: int, env: Any) -> list[Batch]:
        """Every batch of the run, in order. Deterministic: resume relies on it."""
        s = self.settings
        validated = len(tasks[roles["validation"]]) if roles.get("validation") else 0
        tested = sum(len(tasks[split]) for split in roles.get("test") or [])
        trained = len(tasks[roles["train"]]) if roles.get("train") else 0  # transfer: no training
        planned = s.epochs * (trained + validated * s.eval_samples) + tested * s.eval_samples  # at most
        if planned > MAX_SCHEDULE_EPISODES:
            raise ConfigError(
                f"protocol.epochs={s.epochs} over these splits makes a schedule of up to {planned:,} episodes; a run holds at most "
                f"{MAX_SCHEDULE_EPISODES:,}: fewer epochs or tasks"
            )
        out: list[Batch] = []
        for epoch in range(1, s.epochs + 1):
            order = epoch_order(tasks[roles["train"]], task_order_seed, epoch, s.epoch_order_seeds)
            out.extend(self.epoch_batches(order, roles["train"], epoch))
            if s.validate_every_epoch and roles.get("validation"):
                out.extend(chunks("validation", roles["validation"], epoch, tasks[roles["validation"]], s.batch_size, s.eval_samples))
        if s.test_at_end:
            for split in roles.get("test") or []:
                out.extend(chunks("test", split, s.epochs, tasks[split], s.batch_size, s.eval_samples))
        return out

    def schedule_size(self, roles: dict[str, Any], split_sizes: dict[str, int]) -> int:
        """The episodes of the whole schedule, from the roles and split sizes a manifest records (no env:
        the base schedule, as a change of the world (drift) changes no batch's size). Used to seal old
        run folders' manifests (scripts/seal_run_folders.py)."""
        tasks = {split: [Task(id=f"{split}/{i}", split=split, description="") for i in range(n)] for split, n in split_sizes.items()}
        return sum(b.size for b in Protocol.schedule(self, roles, tasks, 0, None))

    def epoch_batches(self, order: list[Task], split: str, epoch: int) -> list[Batch]:
        """One training epoch's batches over `order`."""
        return list(chunks("train", split, epoch, order, self.settings.batch_size))

    # ---- while it runs ---------------------------------------------------------------
    def initial_memory(self) -> Path | None:
        """A memory snapshot the method starts from (transfer: the source's final memory)."""
        return None

    def unplayed_episodes(self, batch: Batch, env: Any) -> list[Episode]:
        """The episodes of a batch fed to learn() without being played (`Batch.poison`: the poison protocol's)."""
        raise NotImplementedError(f"protocol {self.settings.name!r} schedules no unplayed batch")

    def learning_signal(self, episode: Episode) -> bool:
        """The success learn() is told for a played training episode (the log keeps the true one)."""
        return episode.success

    # ---- after it ran --------------------------------------------------------------
    def audit(self, items: list[MemoryItem], train_episode_ids: set[str], roles: dict[str, Any]) -> None:
        """Every memory item must come from a training episode of this run."""
        train_split = roles["train"]
        for item in items:
            p = item.provenance
            if p.phase != "train" or p.split != train_split or p.episode_id not in train_episode_ids:
                raise ProtocolViolation(
                    f"memory item {item.id!r} has provenance phase={p.phase!r} split={p.split!r} episode={p.episode_id!r}, "
                    f"not a training episode of split {train_split!r}: evaluation data leaked into memory"
                )

    def metrics(self, records: list[Episode], items: list[MemoryItem], roles: dict[str, Any]) -> dict[str, Any]:
        """metrics.json's blocks of this protocol (`metrics_keys`), from the log and the final memory."""
        return {}

    @classmethod
    def report_numbers(cls, blocks: dict[str, Any]) -> dict[str, float | None]:
        """A run's own numbers of `report_columns`, from its metrics blocks."""
        return {}


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
                raise ProtocolViolation(
                    f"splits {seen[task.id]!r} and {split!r} overlap: task {task.id!r} is in both; held-out evaluation needs disjoint "
                    "splits"
                )
            seen[task.id] = split


def check_backbone(llm_cfg: dict, settings: ProtocolSettings, group: str = "llm") -> list[str]:
    """Refuse a backbone declared fine-tuned on the env's data unless allowed; return labels. `group`: the config
    group of the model (memory_llm: a writer fine-tuned on the env puts what it learned into memory)."""
    finetuned_on = llm_cfg.get("finetuned_on")
    if not finetuned_on:
        return []
    if not settings.allow_finetuned:
        raise ProtocolViolation(
            f"{group}.finetuned_on={finetuned_on!r}: the backbone was fine-tuned on environment data, so 'runtime learning' "
            "would be measured on a model that already learned the tasks; set protocol.allow_finetuned=true to run it anyway (labelled)"
        )
    return ["finetuned_backbone"]
