"""A controlled simulation with known ground truth: the true usefulness of every memory.

SYNTHETIC: results from this environment are a simulation, never LLM results; every
run and report row using it is labelled "synthetic".

The world: K latent task types, each with a centre in R^d. A task has an intent
vector (its type's centre plus noise) and a base success probability. Every played
episode leaves a lesson with a latent quality q: successful episodes teach better
lessons on average, and a share of lessons is harmful. A memory method stores
lessons and injects some of them into later episodes; the outcome model is

    P(success | task, injected) = sigmoid(logit(base) + sum_m match(type_m, type_task) * q_m)

match is 1 for the same type, `ood_match` between an out-of-distribution type and
the training type it derives from, and `cross_type_match` otherwise.

`outcome_temperature` stands in for the LLM's sampling temperature: at 0 the outcome
is a fixed function of (task, injected memory set), as a temperature-0 LLM gives the
same answer to the same prompt; above 0 every episode draws anew. `reward_flip_share`
is reward noise: that share of training episodes (a seeded hash of the episode id) is
learned from with its success flipped — the method's value signal and stored outcome are
wrong, the logged success and the lesson the episode actually wrote stay true. Lesson qualities
are a fixed function of (world seed, source episode id, its success), so nothing
here needs state, and a resumed run sees the same world.

Steps (`steps_per_task` n > 1; default 1, the world above): a task is n steps played in order,
and the episode succeeds when every step does (it ends at the first failed step). Step s has a
type of its own: the task's type at s = 0, after that a seeded uniform draw among the training
types (per task and step). Before step s >= 1 the agent observes its type's scene (words fixed
per type, the same for every step of that type: observations of one type cluster together, of
two types do not) and its position. Step s succeeds with

    P = sigmoid(logit(base) + sum_m match(source step type of m, type of step s) * q_m)

over the memories m shown at that step: the episode's (task-level) retrieval at every step, or
with step-level retrieval (Job.step_retrieval) the step's own from s = 1 on. An episode's memory
holds its whole trajectory, so its source step for step s is its source task's step s; a step
memory (RetrievedItem.source_step) is the step it recorded, with a lesson quality of its own (drawn
as an episode's, keyed by episode and step). So a task-level memory of a similar task helps step
0 and later steps only where the two tasks' step types agree by chance, while a step memory
found by the observation matches its step's type: the ground truth of step-level retrieval.
With `drift_scenes` (default off) a drift change redraws every type's scene: the step types and
their outcomes stay, the observations that found their memories do not.
info["p_success"] is the product of the played steps' P (the episode's P(success) when it
succeeded), info["p_steps"] each.

Drift (protocol=drift, memrl_bench/protocols/drift.py): after the change, the lessons written
before it about a flipped type (a seeded share `drift.flip_share` of the training types)
have the opposite effect, q -> -q (helpful <-> harmful); lessons written after the
change are the new world's and keep their sign. A memory is STALE when it was written
before the change, its type flipped and its lesson helped before (q > 0): it is wrong
now. Each episode after the change logs, per injected memory, whether it is stale.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

import numpy as np
from pydantic import Field, field_validator, model_validator

from memrl_bench.actors.base import Actor, EnvPool, Job
from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Outcome, RetrievedItem, StepRetrieval, Task, Turn
from memrl_bench.envs.base import Env
from memrl_bench.envs.settings import EnvSettings
from memrl_bench.protocols.drift import STALE, DriftSettings, written_before

_STANDARD_NORMAL = NormalDist()
MAX_TASKS_PER_SPLIT = 1_000_000


def _unit_hash(*parts: object) -> float:
    """A uniform number in [0, 1) fixed by `parts`."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2.0**64


def _sigmoid(x: np.ndarray | float) -> np.ndarray | float:
    return 1.0 / (1.0 + np.exp(-x))


class SyntheticSettings(EnvSettings):
    """The synthetic world (conf/env/synthetic.yaml)."""

    # Keys its YAML never listed (world knobs added later; +env.task_types=... sets one), and roles.
    unlisted = ("roles", "task_logit_std", "task_types", "type_logit_range", "steps_per_task", "drift_scenes")

    # upper bounds: the world holds a (types x types) match matrix and a (types x dim) centre matrix; 10**8 of either ended
    # the run in numpy's MemoryError traceback (the thirty-first round)
    n_types: int = Field(8, ge=1, le=10_000, description="K latent task types seen in training.")
    n_ood_types: int = Field(4, ge=0, le=10_000, description="Extra types only in test_out_of_distribution.")
    intent_dim: int = Field(32, ge=2, le=65_536, description="Dimension of intent vectors.")
    intent_noise: float = Field(
        0.35, ge=0, le=1000, description="Std of a task's intent around its unit type centre (at 1e39 float32 intents overflowed)."
    )
    type_logit_range: list[float] = Field(
        [-2.0, 0.0], min_length=2, max_length=2, description="Per-type base logit drawn uniformly from [low, high]."
    )
    task_logit_std: float = Field(0.5, ge=0, description="Per-task spread of the base logit.")
    tasks: dict[str, int] = Field(
        default_factory=lambda: {"train": 200, "validation": 100, "test_in_distribution": 100, "test_out_of_distribution": 100},
        description="Tasks per split.",
    )
    quality_success: float = Field(0.8, description="Mean lesson quality of a successful episode.")
    quality_failure: float = Field(0.1, description="Mean lesson quality of a failed episode.")
    quality_std: float = Field(0.4, ge=0, description="Spread of lesson quality.")
    harmful_share: float = Field(0.1, ge=0, le=1, description="Share of lessons that are harmful.")
    harmful_early_share: float | None = Field(None, ge=0, le=1, description="Harmful share of epoch-1 lessons (null: harmful_share).")
    harmful_quality: float = Field(-1.5, description="Quality of a harmful lesson.")
    cross_type_match: float = Field(0.0, ge=0, le=1, description="Match between different training types.")
    ood_match: float = Field(0.5, ge=0, le=1, description="Match between an OOD type and its parent training type.")
    outcome_temperature: float = Field(
        0.0, ge=0, description="0: deterministic outcome per (task, injected set); > 0: resampled per episode."
    )
    reward_flip_share: float = Field(
        0.0,
        ge=0,
        le=1,
        description=(
            "Reward noise: share of training episodes whose success the method learns flipped (seeded; the logged success stays true)."
        ),
    )
    steps_per_task: int = Field(
        1, ge=1, description="Steps of a task, each with its own type (module docstring); 1: one outcome per task, as before."
    )
    drift_scenes: bool = Field(
        False,
        description=(
            "protocol=drift with steps_per_task > 1: after the change every step type shows another scene (the same types, new words), "
            "so observations seen before it match none after it; false: scenes never change."
        ),
    )
    task_types: list[int] | None = Field(
        None,
        min_length=1,
        description=(
            "The training types this world's train, validation and in-distribution test tasks are drawn from (null: all n_types); worlds "
            "of one seed with other type sets share their types' centres (the transfer protocol)."
        ),
    )

    @field_validator("tasks")
    @classmethod
    def _counts(cls, tasks: dict[str, int]) -> dict[str, int]:
        odd = next((split for split, n in tasks.items() if not 0 <= n <= MAX_TASKS_PER_SPLIT), None)
        if odd is not None:  # 10**11 tasks ended the CLI in a MemoryError traceback (twentieth round)
            raise ValueError(f"tasks.{odd} must be in 0..{MAX_TASKS_PER_SPLIT:,}, got {tasks[odd]}")
        return tasks

    @field_validator("type_logit_range")
    @classmethod
    def _ordered(cls, bounds: list[float]) -> list[float]:
        if bounds[0] > bounds[1]:
            raise ValueError(f"must be [low, high] with low <= high, got {bounds}")
        return bounds

    @model_validator(mode="after")
    def _types_exist(self) -> SyntheticSettings:
        if self.task_types is not None and (
            len(set(self.task_types)) != len(self.task_types) or not all(0 <= t < self.n_types for t in self.task_types)
        ):
            raise ValueError(
                f"env.task_types must be distinct types in 0..{self.n_types - 1} (env.n_types={self.n_types}), got {self.task_types}"
            )
        return self

    @model_validator(mode="after")
    def _ood_types_exist(self) -> SyntheticSettings:
        if self.n_ood_types == 0 and self.tasks.get("test_out_of_distribution", 0) > 0:  # a ZeroDivisionError traceback before
            raise ValueError(
                "env.n_ood_types=0 leaves test_out_of_distribution no type to draw from: set env.n_ood_types >= 1 or "
                "env.tasks.test_out_of_distribution=0"
            )
        return self

    @model_validator(mode="after")
    def _scenes_to_change(self) -> SyntheticSettings:
        if self.drift_scenes and self.steps_per_task == 1:
            raise ValueError("env.drift_scenes changes the scenes of later steps: it needs env.steps_per_task > 1 (got 1)")
        return self


class SyntheticEnv(Env):
    name = "synthetic"
    grades_in_observation = True
    Settings = SyntheticSettings
    labels = ("synthetic",)
    default_actor = "synthetic"  # SyntheticActor: the outcome model plays, no LLM
    settings: SyntheticSettings

    def __init__(self, settings: SyntheticSettings | Mapping[str, Any], seed: int = 0):
        super().__init__(settings, seed)
        c = self.settings
        rng = np.random.default_rng(self.seed)
        k, k_ood, d = int(c.n_types), int(c.n_ood_types), int(c.intent_dim)
        centres = rng.normal(size=(k, d))
        self.parent = np.concatenate([np.arange(k), rng.integers(0, k, size=k_ood)])
        # An OOD type's centre leans towards its parent's, so retrieval finds related memories.
        ood = 0.6 * centres[self.parent[k:]] + 0.8 * rng.normal(size=(k_ood, d))
        centres = np.concatenate([centres, ood])
        self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        low, high = c.type_logit_range
        self.type_logit = rng.uniform(low, high, size=k + k_ood)
        self.match = np.full((k + k_ood, k + k_ood), float(c.cross_type_match))
        np.fill_diagonal(self.match, 1.0)
        for t in range(k, k + k_ood):
            self.match[t, self.parent[t]] = self.match[self.parent[t], t] = float(c.ood_match)
        self._tasks: dict[str, list[Task]] = {}
        in_distribution = np.array(c.task_types) if c.task_types is not None else np.arange(k)
        for split, n in c.tasks.items():
            types = np.arange(k, k + k_ood) if split == "test_out_of_distribution" else in_distribution
            self._tasks[split] = [self._make_task(split, i, int(types[i % len(types)]), rng) for i in range(int(n))]
        self._by_id = {t.id: t for tasks in self._tasks.values() for t in tasks}
        train_types = np.array([t.data["task_type"] for t in self._tasks.get("train", [])])
        train_logits = np.array([t.data["base_logit"] for t in self._tasks.get("train", [])])
        # For true utility: the base logits of the training tasks of each type.
        self._logits_by_type = {t: train_logits[train_types == t] for t in range(k)}
        self._base_p_by_type = {t: _sigmoid(logits) for t, logits in self._logits_by_type.items()}
        # A lesson's quality is a pure function of its episode; memories are injected many times.
        self.lesson_quality = functools.lru_cache(maxsize=1 << 16)(self.lesson_quality)
        self._current: Task | None = None
        self._writer: SyntheticEnv = self  # the world the memories were written in (another one under the transfer protocol)
        self._shared_types = True  # whether the writer's type t is this world's type t

    def memories_from(self, env_config: dict[str, Any], seed: int) -> None:
        """Memories come from another synthetic world (the transfer protocol): a memory's lesson is
        valued in the world that wrote it, and its source type matches this world's types as this
        world's match does when both worlds draw their types alike (same seed, n_types,
        n_ood_types, intent_dim: same centres), else as unrelated types (cross_type_match)."""
        if env_config.get("name") != self.name:
            raise ConfigError(
                "protocol.transfer_from: the synthetic world values a memory by the synthetic world that wrote it; the source run's env "
                f"is {env_config.get('name')!r}"
            )
        writer = SyntheticEnv({k: v for k, v in env_config.items() if k not in ("name", "roles", "seed")}, seed=seed)
        universe = ("n_types", "n_ood_types", "intent_dim")
        self._writer = writer
        self._shared_types = writer.seed == self.seed and all(
            getattr(writer.settings, key) == getattr(self.settings, key) for key in universe
        )

    def _make_task(self, split: str, index: int, task_type: int, rng: np.random.Generator) -> Task:
        intent = self.centres[task_type] + self.settings.intent_noise * rng.normal(size=self.centres.shape[1]) / np.sqrt(
            self.centres.shape[1]
        )
        base_logit = float(self.type_logit[task_type] + self.settings.task_logit_std * rng.normal())
        return Task(
            id=f"synthetic/{split}/{index:05d}",
            split=split,
            description=f"synthetic task of type {task_type} (#{index} of {split})",
            intent=tuple(float(x) for x in intent),
            data={"task_type": task_type, "base_logit": base_logit},
        )

    def splits(self) -> dict[str, str]:
        k = self.settings.n_types
        return {
            split: (
                f"{n} tasks drawn from the {k} training types"
                if split != "test_out_of_distribution"
                else f"{n} tasks of {self.settings.n_ood_types} held-out types"
            )
            + f", world seed {self.seed}"
            for split, n in self.settings.tasks.items()
        }

    def tasks(self, split: str) -> list[Task]:
        if split not in self._tasks:
            raise KeyError(f"synthetic env has no split {split!r}; valid: {', '.join(self._tasks)}")
        return list(self._tasks[split])

    # The lesson an episode leaves, as a pure function of its identity.
    def lesson_quality(self, episode_id: str, success: bool, epoch: int) -> float:
        c = self.settings
        if episode_id.startswith("poison-"):
            return float(c.harmful_quality)
        harmful_share = c.harmful_early_share if (epoch == 1 and c.harmful_early_share is not None) else c.harmful_share
        if _unit_hash(self.seed, "harmful", episode_id) < harmful_share:
            return float(c.harmful_quality)
        u = min(max(_unit_hash(self.seed, "quality", episode_id), 1e-12), 1 - 1e-12)
        mean = c.quality_success if success else c.quality_failure
        return float(mean + c.quality_std * _STANDARD_NORMAL.inv_cdf(u))

    def lesson_utility(self, task_type: int, quality: float) -> float:
        """True utility: mean gain in P(success) when injected alone into tasks of its type."""
        logits = self._logits_by_type.get(task_type)
        if logits is None or len(logits) == 0:
            return 0.0
        return float(np.mean(_sigmoid(logits + quality) - self._base_p_by_type[task_type]))

    def learned_success(self, episode_id: str, success: bool) -> bool:
        flipped = _unit_hash(self.seed, "reward_flip", episode_id) < self.settings.reward_flip_share
        return success != flipped

    def item_effect(self, item: RetrievedItem, task_type: int, drift: dict[str, Any] | None = None, step: int | None = None) -> float:
        """The true logit shift one injected memory gives a task (or, `step` given, a step) of
        `task_type`; after a drift change (`drift`: a changed task's data["drift"]) flipped lessons
        count negated. At a step the memory's type is its source step's (module docstring)."""
        source = self._writer._by_id.get(item.source_task_id)
        if source is None:  # a memory this world did not write (e.g. injected poison) has no effect
            return 0.0
        quality = self._writer._true_quality(item)
        if drift is not None and self._flipped(item, source, drift):
            quality = -quality
        source_type = source.data["task_type"]
        if step is not None:
            source_type = self._writer.step_type(source, step if item.source_step is None else item.source_step)
        match = self.match[source_type, task_type] if self._shared_types else self.settings.cross_type_match
        return float(match * quality)

    def step_type(self, task: Task, step: int) -> int:
        """The type of a task's step: the task's own at step 0, then a seeded draw among the training types."""
        if step == 0:
            return int(task.data["task_type"])
        return int(_unit_hash(self.seed, "step_type", task.id, step) * self.settings.n_types)

    def step_observation(self, task: Task, step: int) -> str:
        """What the agent sees before step `step` (>= 1): its type's scene (drift_scenes: the changed world's after a drift
        change), then where it is."""
        scene = "scene-drifted" if self.settings.drift_scenes and "drift" in task.data else "scene"
        words = (self._scene_word(scene, self.step_type(task, step), j) for j in range(12))
        return f"You see {' '.join(words)} (step {step + 1} of {self.settings.steps_per_task})"

    def _scene_word(self, scene: str, step_type: int, position: int) -> str:
        """A five-letter word fixed by the world seed, the scene's world, a step type and its position in the scene."""
        draws = (_unit_hash(self.seed, scene, step_type, position, i) for i in range(5))
        return "".join(chr(ord("a") + int(26 * u)) for u in draws)

    def step_outcome(self, task: Task, step: int, injected: list[RetrievedItem], episode_id: str) -> tuple[bool, float]:
        """(success, P) of one step with these memories shown (steps_per_task > 1)."""
        step_type, drift = self.step_type(task, step), task.data.get("drift")
        p = float(_sigmoid(task.data["base_logit"] + sum(self.item_effect(item, step_type, drift, step) for item in injected)))
        injected_key = ",".join(sorted(item.item_id for item in injected))
        drawn = (episode_id,) if self.settings.outcome_temperature > 0 else ()
        return _unit_hash(self.seed, "step_outcome", task.id, step, injected_key, *drawn) < p, p

    @staticmethod
    def _flipped(item: RetrievedItem, source: Task, drift: dict[str, Any]) -> bool:
        return source.data["task_type"] in drift["flipped_types"] and written_before(item.source_epoch, drift["epoch"])

    def is_stale(self, item: RetrievedItem, drift: dict[str, Any]) -> bool:
        """Written before the change about a flipped type, and helpful before it (so harmful now)."""
        source = self._by_id.get(item.source_task_id)
        if source is None or not self._flipped(item, source, drift):
            return False
        return self._true_quality(item) > 0

    def _true_quality(self, item: RetrievedItem) -> float:
        """The quality of the lesson as written. `item.source_success` is the success its method
        learned; the reward flip is its own inverse, so learned_success gives back the true one."""
        true_success = self.learned_success(item.source_episode_id, bool(item.source_success))
        lesson = item.source_episode_id if item.source_step is None else f"{item.source_episode_id}/step{item.source_step}"
        return self.lesson_quality(lesson, true_success, item.source_epoch)

    def flipped_types(self, drift: DriftSettings) -> list[int]:
        """The training types whose old lessons flip at the change: a seeded draw of round(flip_share * n_types)."""
        k = int(self.settings.n_types)
        order = np.random.default_rng([self.seed, drift.seed]).permutation(k)
        return sorted(int(t) for t in order[: round(drift.flip_share * k)])

    def drifted(self, task: Task, drift: DriftSettings) -> Task:
        """The same task in the changed world: its data names the change's epoch and the flipped types."""
        return Task(
            task.id,
            task.split,
            task.description,
            task.intent,
            {**task.data, "drift": {"epoch": drift.epoch, "flipped_types": self.flipped_types(drift)}},
        )

    def p_success(self, task: Task, injected: list[RetrievedItem]) -> float:
        """P(success) of `task` with these memories injected: pure, for any set (e.g. an oracle's)."""
        task_type, drift = task.data["task_type"], task.data.get("drift")
        return float(_sigmoid(task.data["base_logit"] + sum(self.item_effect(item, task_type, drift) for item in injected)))

    def outcome(self, task: Task, injected: list[RetrievedItem], episode_id: str) -> tuple[bool, float]:
        """(success, P(success)) of one episode."""
        p = self.p_success(task, injected)
        injected_key = ",".join(sorted(item.item_id for item in injected))
        if self.settings.outcome_temperature > 0:
            u = _unit_hash(self.seed, "outcome", task.id, injected_key, episode_id)
        else:
            u = _unit_hash(self.seed, "outcome", task.id, injected_key)
        return u < p, p

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._current = task
        return task.description, {}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self._current is None:
            raise RuntimeError("step() before reset()")
        success, p = self.outcome(self._current, [], episode_id=action)
        return ("success" if success else "failure"), float(success), True, {"success": success, "p_success": p}

    def spawn(self) -> Env:
        return self


class SyntheticActor(Actor):
    """Plays synthetic episodes with the env's outcome model: no LLM, no env steps."""

    needs_llm = False

    def play_one(self, job: Job, env: SyntheticEnv) -> Outcome:
        task = job.task
        if env.settings.steps_per_task > 1:
            turns, p_steps = self._play_steps(job, env)
            success, p = turns[-1].reward > 0, float(np.prod(p_steps))
        else:
            success, p = env.outcome(task, job.retrieval.items, job.episode_id)
        quality = env.lesson_quality(job.episode_id, success, job.epoch)
        task_type = task.data["task_type"]
        info = {
            "synthetic": True,
            "task_type": task_type,
            "p_success": p,
            "lesson_quality": quality,
            "lesson_utility": env.lesson_utility(task_type, quality) if task_type < env.settings.n_types else 0.0,
            "lesson_harmful": quality == env.settings.harmful_quality,
        }
        if "drift" in task.data:
            info[STALE] = [env.is_stale(item, task.data["drift"]) for item in job.retrieval.items]
        if env.settings.steps_per_task > 1:
            info["p_steps"] = p_steps
            return Outcome(success=success, reward=float(success), turns=turns, info=info)
        turn = Turn(action="act with injected memories", observation="success" if success else "failure", reward=float(success))
        return Outcome(success=success, reward=float(success), turns=[turn], info=info)

    def _play_steps(self, job: Job, env: SyntheticEnv) -> tuple[list[Turn], list[float]]:
        """The steps of a task in order, up to the first failed one: each shown the episode's memories
        or (Job.step_retrieval) its own, chosen by its observation. Returns the turns and each step's P."""
        n, turns, p_steps = env.settings.steps_per_task, [], []
        for step in range(n):
            injected, record, latency = job.retrieval.items, None, None
            if step > 0 and job.step_retrieval is not None:
                start = time.perf_counter()
                found = job.step_retrieval(turns[-1].observation, step)
                latency = {"retrieve": time.perf_counter() - start}
                injected = found.items
                record = StepRetrieval(found.items, found.info.get("cluster"), found.candidates, len(found.prompt_block))
            success, p = env.step_outcome(job.task, step, injected, job.episode_id)
            p_steps.append(p)
            last = not success or step == n - 1
            observation = ("success" if success else "failure") if last else env.step_observation(job.task, step + 1)
            turns.append(Turn(f"act on step {step + 1}", observation, float(success and last), latency_s=latency, retrieval=record))
            if last:
                return turns, p_steps
        raise AssertionError("unreachable: the last step ends the loop")

    async def play(self, job: Job, env: Env) -> Outcome:
        return self.play_one(job, env)  # type: ignore[arg-type]

    async def play_batch(self, jobs: list[Job], pool: EnvPool) -> list[Outcome]:
        return [self.play_one(job, pool.first) for job in jobs]  # type: ignore[arg-type]


ENV = SyntheticEnv
