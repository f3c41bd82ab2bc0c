"""The settings every environment shares (its env group's model starts from one of these):
EnvSettings (name, seed, the roles of its splits), DataEnvSettings (a benchmark data folder, a
quick run's tasks per split), GoldCheckedSettings (tasks whose gold answer fails left out) and
SandboxLimits (memrl_bench/envs/sandbox/). Each env's own model is in its module, as its `Settings`."""

from __future__ import annotations

import os
import resource
from typing import Literal

from pydantic import Field, field_validator

from memrl_bench.core.config import MAX_THREADS, Settings

MAX_OUTPUT_CHARS = 65_536
"""The most an observation keeps of a command's or a statement's output (as much as a completion keeps at least): an
episode's log line then stays far below what a reader of the log takes (1,000,000,000,000 set, 500 MB outputs were kept
whole, and the run refused its own log: 43b)."""


class EnvSettings(Settings):
    """Keys every environment has: its name, world seed and the roles of its splits."""

    name: str
    seed: int = Field(0, ge=0, description="The env's own seed (its world, for the synthetic env).")
    roles: dict[Literal["train", "validation", "test"], str | list[str] | None] | None = Field(
        None, description="Which split plays which role (null: the env's default)."
    )

    # Not in a composed config unless set (+env.roles=...); a data env's seed too (synthetic lists its own).
    unlisted = ("roles", "seed")

    @field_validator("roles")
    @classmethod
    def _one_train_split(cls, roles: dict | None) -> dict | None:
        if roles is not None and not isinstance(roles.get("train"), str):
            raise ValueError(f"train must name one split (got {roles.get('train')!r})")
        return roles


class DataEnvSettings(EnvSettings):
    data_dir: str | None = Field(None, description="The benchmark data folder (null: the env variable, then ../shared/data).")
    tasks_per_split: int | None = Field(None, ge=1, description="Quick runs: the first N tasks of each split (null: all).")


class GoldCheckedSettings(DataEnvSettings):
    exclude_gold_failures: bool = Field(True, description="Leave out tasks whose gold answer fails here.")


class SandboxLimits(GoldCheckedSettings):
    """Limits of the sandbox (memrl_bench/envs/sandbox/); below these minimums it cannot run a shell and its tools."""

    gold_workers: int = Field(2, ge=1, le=MAX_THREADS, description="Parallel sandboxes when checking gold answers.")
    max_output_chars: int = Field(
        4000, ge=1, le=MAX_OUTPUT_CHARS, description="Output kept per command or program (at most 64 Ki characters)."
    )
    memory_mb: int = Field(1024, ge=64, description="Memory cap (at least 64 MiB: a shell, the check's tools and Python).")
    max_processes: int = Field(
        256, ge=8, description="Live process cap (at least 8: the container's own processes and a command's pipeline)."
    )
    disk_mb: int = Field(512, ge=16, description="Size of the tmpfs holding what an episode writes (at least 16 MiB).")

    # Caps past what this machine has are no caps (2^63-1 MiB ran as if unlimited, without a word), and a process cap past
    # the host's hard RLIMIT_NPROC made every command fail to start, each episode an env error (the thirty-second round).
    @field_validator("memory_mb", "disk_mb")
    @classmethod
    def _within_the_machines_memory(cls, value: int) -> int:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
        if value > total:
            raise ValueError(f"more MiB than this machine's memory ({total} MiB): no cap at all")
        return value

    @field_validator("max_processes")
    @classmethod
    def _within_the_hosts_process_limit(cls, value: int) -> int:
        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        if hard != resource.RLIM_INFINITY and value > hard:
            raise ValueError(f"above this machine's process limit (RLIMIT_NPROC {hard}): no command could start")
        return value
