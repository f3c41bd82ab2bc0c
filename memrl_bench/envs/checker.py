"""Check that an environment keeps the Env contract, as Gymnasium's env_checker does.

`check_env(env)` runs every named check below in order; each raises its own subclass of
EnvCheckError with a message naming the env, the check and what is wrong. Run it on a
new environment before its first run (tests/*/test_env_*.py run it on every shipped one).
"""

from __future__ import annotations

from typing import Any

from memrl_bench.core.schema import Task
from memrl_bench.envs.base import Env


class EnvCheckError(Exception):
    """An environment breaks the Env contract."""


class SplitsError(EnvCheckError):
    """splits() is empty or not a mapping of split names to descriptions."""


class TaskListError(EnvCheckError):
    """tasks(split) is not a deterministic list of Tasks with unique ids, each in one split."""


class ExcludedError(EnvCheckError):
    """excluded() is not a mapping of known task ids to reasons."""


class SpawnError(EnvCheckError):
    """spawn() does not give another instance of the same env."""


class EpisodeError(EnvCheckError):
    """reset() / step() break the gymnasium-like contract."""


def check_splits(env: Env) -> None:
    splits = env.splits()
    if not isinstance(splits, dict) or not splits:
        raise SplitsError(f"{env.name}: splits() must be a non-empty dict of split name -> how it was made, got {splits!r}")
    wrong = next((k for k, v in splits.items() if not isinstance(k, str) or not isinstance(v, str)), None)
    if wrong is not None:
        raise SplitsError(f"{env.name}: splits() must map names to descriptions (str -> str); {wrong!r} does not")


def check_task_lists(env: Env) -> None:
    seen: dict[str, str] = {}
    for split in env.splits():
        tasks = env.tasks(split)
        wrong = next((t for t in tasks if not isinstance(t, Task)), None)
        if wrong is not None:
            raise TaskListError(f"{env.name}: tasks({split!r}) must return Task records, got a {type(wrong).__name__}")
        if [t.id for t in tasks] != [t.id for t in env.tasks(split)]:
            raise TaskListError(f"{env.name}: tasks({split!r}) is not deterministic (two calls give other ids or another order)")
        for task in tasks:
            if task.split != split:
                raise TaskListError(f"{env.name}: task {task.id} says split {task.split!r} but is listed in {split!r}")
            if task.id in seen:
                where = "twice in split" if seen[task.id] == split else f"in splits {seen[task.id]!r} and"
                raise TaskListError(f"{env.name}: task {task.id} is {where} {split!r}: task ids must be unique and splits disjoint")
            seen[task.id] = split


def check_excluded(env: Env) -> None:
    excluded = env.excluded()
    if not isinstance(excluded, dict) or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in excluded.items()):
        raise ExcludedError(f"{env.name}: excluded() must be a dict of task id -> a non-empty reason, got {excluded!r}")
    listed = {t.id for split in env.splits() for t in env.tasks(split)}
    if listed & set(excluded):
        raise ExcludedError(f"{env.name}: task {sorted(listed & set(excluded))[0]} is excluded but still listed by tasks()")


def check_spawn(env: Env) -> None:
    twin = env.spawn()
    try:
        if type(twin) is not type(env) or twin.splits() != env.splits():
            raise SpawnError(
                f"{env.name}: spawn() must return another {type(env).__name__} with the same splits, got {type(twin).__name__}"
            )
    finally:
        if twin is not env:
            twin.close()


def check_episode(env: Env, max_steps: int = 5, action: str = "look") -> None:
    """Play the first task with `action` until done or `max_steps`: the types of reset and step, and info['success'] at the end."""
    task = env.tasks(next(iter(env.splits())))[0]
    result: Any = env.reset(task)
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str) and isinstance(result[1], dict)):
        raise EpisodeError(f"{env.name}: reset() must return (observation: str, info: dict), got {result!r:.200}")
    for _ in range(max_steps):
        result = env.step(action)
        if not (isinstance(result, tuple) and len(result) == 4):
            raise EpisodeError(f"{env.name}: step() must return (observation, reward, done, info), got {result!r:.200}")
        observation, reward, done, info = result
        if (
            not isinstance(observation, str)
            or not isinstance(done, bool)
            or not isinstance(info, dict)
            or not isinstance(reward, (int, float))
            or isinstance(reward, bool)
        ):
            raise EpisodeError(
                f"{env.name}: step() must return (str, float, bool, dict), got ({type(observation).__name__}, {type(reward).__name__}, "
                f"{type(done).__name__}, {type(info).__name__})"
            )
        if done:
            if not isinstance(info.get("success"), bool):
                raise EpisodeError(f"{env.name}: info['success'] (a bool) is missing when the episode ends")
            return


CHECKS = (check_splits, check_task_lists, check_excluded, check_spawn, check_episode)


def check_env(env: Env) -> None:
    """Run every check of CHECKS on `env`; the first that fails raises its EnvCheckError."""
    for check in CHECKS:
        check(env)
