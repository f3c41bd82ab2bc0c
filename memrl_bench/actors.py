"""The actor interface: turns (task, memory block, env) into an Outcome.

LLM actors (memrl_bench/agent.py) are async so that the episodes of a mini-batch
keep several requests in flight against one server; each episode gets its own env
instance from an EnvPool. The synthetic env brings its own, vectorised actor.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass

from memrl_bench.envs.base import Env
from memrl_bench.types import Outcome, Retrieval, Task


@dataclass
class Job:
    """One episode to play."""

    task: Task
    retrieval: Retrieval
    episode_id: str
    phase: str = "train"
    epoch: int = 0
    sample_index: int = 0


class EnvPool:
    """Env instances for concurrent episodes, spawned lazily up to `size`."""

    def __init__(self, first: Env, size: int):
        self.size = max(1, size)
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
            if env is not self._all[0]:
                env.close()


class Actor(ABC):
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
