"""The env checker: each named check finds its own breach of the Env contract and raises its own error."""

from __future__ import annotations

from typing import Any

import pytest

from memrl_bench.core.schema import Task
from memrl_bench.envs.base import Env
from memrl_bench.envs.checker import CHECKS, EnvCheckError, EpisodeError, ExcludedError, SpawnError, SplitsError, TaskListError, check_env
from memrl_bench.envs.synthetic import SyntheticEnv


class Coin(Env):
    """A valid env: guess the side of a coin in one step."""

    name = "coin"

    def splits(self) -> dict[str, str]:
        return {"train": "two coins", "test": "one coin"}

    def tasks(self, split: str) -> list[Task]:
        ids = {"train": ["coin/1", "coin/2"], "test": ["coin/3"]}[split]
        return [Task(i, split, "heads or tails?") for i in ids]

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        return "A coin is tossed.", {}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        return "It is heads.", float(action == "heads"), True, {"success": action == "heads"}


def broken(**methods) -> Coin:
    return type("Broken", (Coin,), methods)({})


@pytest.mark.parametrize(
    "env, error, message",
    [
        (broken(splits=lambda self: {}), SplitsError, "splits\\(\\) must be a non-empty dict"),
        (
            broken(tasks=lambda self, split: [Task("coin/1", split, "x"), Task("coin/1", split, "x")]),
            TaskListError,
            "coin/1 is twice in split 'train'",
        ),
        (broken(tasks=lambda self, split: [Task("coin/1", split, "x")]), TaskListError, "coin/1 is in splits 'train' and 'test'"),
        (
            broken(tasks=lambda self, split: [Task("coin/9", "train", "x")] if split == "test" else []),
            TaskListError,
            "says split 'train' but is listed in 'test'",
        ),
        (broken(tasks=lambda self, split: [{"id": "coin/1"}]), TaskListError, "must return Task records, got a dict"),
        (broken(excluded=lambda self: {"coin/1": "its gold fails"}), ExcludedError, "coin/1 is excluded but still listed"),
        (broken(spawn=lambda self: SyntheticEnv({})), SpawnError, "spawn\\(\\) must return another Broken"),
        (broken(reset=lambda self, task: "A coin."), EpisodeError, "reset\\(\\) must return \\(observation: str, info: dict\\)"),
        (
            broken(step=lambda self, action: ("heads", 1.0, "yes", {})),
            EpisodeError,
            "step\\(\\) must return \\(str, float, bool, dict\\), got \\(str, float, str, dict\\)",
        ),
        (broken(step=lambda self, action: ("heads", 1.0, True, {})), EpisodeError, "info\\['success'\\] \\(a bool\\) is missing"),
    ],
)
def test_each_check_raises_its_own_error_naming_the_env(env, error, message):
    with pytest.raises(error, match=message) as raised:
        check_env(env)
    assert isinstance(raised.value, EnvCheckError) and str(raised.value).startswith("coin: ")


def test_a_valid_env_passes_every_check():
    check_env(Coin({}))
    check_env(SyntheticEnv({"tasks": {"train": 4, "validation": 2, "test_in_distribution": 2, "test_out_of_distribution": 2}}))
    assert [c.__name__ for c in CHECKS] == ["check_splits", "check_task_lists", "check_excluded", "check_spawn", "check_episode"]
