"""The actor interface: turns (task, memory block, env) into an Outcome.

An actor is found by name (memrl_bench.core.registry: the env's `default_actor` unless
actor.kind says otherwise) and built as `Actor(llm, settings, transcripts)`. LLM actors
(memrl_bench/actors/llm_actors.py) are async so that the episodes of a mini-batch keep several
requests in flight against one server; each episode gets its own env instance from an
EnvPool. The synthetic env models the agent itself, with its own vectorised actor.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

from memrl_bench.core.config import Settings, validated
from memrl_bench.core.schema import Outcome, Retrieval, Task
from memrl_bench.envs.base import Env
from memrl_bench.llm import ChatModel
from memrl_bench.llm.settings import GenerationSettings


class ActorSettings(Settings):
    """The actor group (conf/actor/*.yaml); each actor reads its own keys."""

    kind: Literal["react", "single_turn"] | None = Field(None, description="null: the env's choice.")
    max_steps: int = Field(30, ge=1, description="Episode step limit.")
    history_turns: int = Field(10, ge=0, description="Past (action, observation) steps shown in each prompt.")
    fuzzy_cutoff: float = Field(0.75, ge=0, le=1, description="difflib similarity needed to map an action onto an admissible command.")
    fuzzy_margin: float = Field(0.1, ge=0, le=1, description="How much closer than every other command the fuzzy match must be.")
    show_admissible: bool = Field(True, description="List the env's admissible commands in the prompt.")
    prompt: Literal["harness", "memrl_alfworld"] = Field(
        "harness", description="harness: this project's ReAct prompt; memrl_alfworld: the official MemRL ALFWorld agent's."
    )
    memrl_official: str | None = Field(
        None,
        description=(
            "prompt=memrl_alfworld: the official MemRL repository (null: $MEMRL_OFFICIAL_DIR, then ../shared/reference/memrl_official)."
        ),
    )
    stop_sequences: list[str] | None = Field(
        ["\nObservation:"],
        description=(
            "ReAct: sent as `stop` with every call, so that a model starting to write the env's reply ends its action (generation.stop "
            "overrides them; null: none)."
        ),
    )
    generation: GenerationSettings = Field(
        default_factory=GenerationSettings, description="Overrides of the llm group's generation settings."
    )
    answer_constraint: Literal["none", "json_schema"] = Field(
        "none",
        description=(
            "Single-turn multiple choice: json_schema asks, after the free completion, for the final letter in a reply the server holds to "
            "a JSON schema (memrl_bench.core.answers), so that no reading decides it."
        ),
    )

    unlisted = ("answer_constraint",)


@dataclass
class Job:
    """One episode to play."""

    task: Task
    retrieval: Retrieval
    episode_id: str
    phase: str = "train"
    epoch: int = 0
    sample_index: int = 0
    # retrieval_granularity=step: (observation, step) -> that step's Retrieval, asked before each
    # step after the first (the method's retrieve_step for this episode); None: the episode's retrieval serves every step.
    step_retrieval: Callable[[str, int], Retrieval] | None = None


class EnvPool:
    """Env instances for concurrent episodes, spawned lazily up to `size`."""

    def __init__(self, first: Env, size: int):
        self.size = max(1, size)
        self.first = first  # the caller's instance
        self._all = [first]
        self._free: list[Env] = [first]
        self._available = asyncio.Condition()  # binds to the runner's one event loop on first use

    async def acquire(self) -> Env:
        async with self._available:
            while not self._free and len(self._all) >= self.size:
                await self._available.wait()
            if self._free:
                return self._free.pop()
            env = await asyncio.to_thread(self._all[0].spawn)
            self._all.append(env)
            return env

    async def release(self, env: Env) -> None:
        async with self._available:
            self._free.append(env)
            self._available.notify()

    def close(self) -> None:
        """Close the spawned instances (the first belongs to the caller)."""
        for env in self._all[1:]:
            if env is not self.first:
                env.close()


class Actor(ABC):
    """Plays episodes. `llm` is the run's ChatModel (None with llm=none), `settings` the actor
    group checked by `Settings` (a mapping is checked here), `transcripts` whether to keep every prompt."""

    Settings: ClassVar[type[Settings]] = ActorSettings  # the built-in actors share one group; an actor of one's own may bring its own
    needs_llm: ClassVar[bool] = True  # an LLM plays (the runner refuses llm=none for it)

    def __init__(self, llm: ChatModel | None = None, settings: Settings | Mapping[str, Any] | None = None, transcripts: bool = False):
        self.llm = llm
        self.cfg: Any = settings if isinstance(settings, self.Settings) else validated(self.Settings, dict(settings or {}), "actor")
        self.transcripts = transcripts

    @property
    def generation(self) -> dict[str, Any]:
        """The generation settings this actor overrides in its LLM calls (actor.generation, as given)."""
        return self.cfg.generation.model_dump(exclude_unset=True)

    @abstractmethod
    async def play(self, job: Job, env: Env) -> Outcome:
        """Play one episode of `job.task` in `env` with `job.retrieval` in the prompt."""

    async def play_batch(self, jobs: list[Job], pool: EnvPool) -> list[Outcome]:
        """Play a mini-batch concurrently; outcomes in the order of `jobs`."""

        async def one(job: Job) -> Outcome:
            env = await pool.acquire()
            try:
                return await self.play(job, env)
            finally:
                await pool.release(env)

        return list(await asyncio.gather(*(one(job) for job in jobs)))
