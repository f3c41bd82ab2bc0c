"""TextWorldExpress: fast text games (coin, twc, cookingworld, ...) served by a Java simulator.

Each instance owns one JVM (py4j gateway). `spawn()` starts another JVM rather than
sharing a gateway: a JVM starts in ~0.5-1 s once per pool slot, and nothing on the Java
side is shared between concurrent episodes (see BENCHMARKS.md "## TextWorldExpress").

Drift (protocol.drift): after the change every task is the same seed of the same fold
generated with other simulator properties (`drift.game_params` over the env's own; by
default doors appear in twc and vanish in coin), so the goal is the same kind and the
room layout is not: remembered routes and moves go stale.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Task
from memrl_bench.envs.base import Env
from memrl_bench.envs.settings import EnvSettings
from memrl_bench.protocols.drift import DriftSettings

GAMES = ("cookingworld", "twc", "coin", "mapreader", "arithmetic", "sorting", "simonsays", "peckingorder")
# The package's built-in seed folds, named by this env's splits.
FOLD_OF_SPLIT = {"train": "train", "validation": "dev", "test": "test"}
# The default change of layout under protocol.drift, per game (the simulator's defaults: twc without doors, coin with them).
DRIFT_VARIANT: dict[str, dict[str, Any]] = {"twc": {"includeDoors": 1}, "coin": {"includeDoors": 0}}
# The Python wrapper ends an episode after this many moves; the actor owns the step limit.
_NO_WRAPPER_STEP_LIMIT = 10**9
# py4j logs each gateway's start, each failure of a shutdown the simulator repeats (its
# __del__ closes the gateway again) and, on Ctrl-C, its broken connections (that one on
# the root logger): noise on every exit. A failure that matters reaches the caller as an
# exception anyway.
logging.getLogger("py4j").setLevel(logging.CRITICAL)
logging.getLogger().addFilter(lambda record: f"{os.sep}py4j{os.sep}" not in record.pathname)


def _params_string(game_params: dict[str, Any]) -> str:
    """The simulator's `key=value,...` form, sorted so task ids are stable."""
    return ",".join(f"{key}={int(value) if isinstance(value, bool) else value}" for key, value in sorted(game_params.items()))


class TextWorldExpressSettings(EnvSettings):
    game: str = Field("twc", min_length=1, description="The TextWorldExpress game.")
    game_params: dict[str, int | float | bool | str] = Field(default_factory=dict, description="Simulator properties of the game.")
    tasks_per_split: int = Field(50, ge=1, description="The first N seeds of each fold.")


class TextWorldExpressEnv(Env):
    """One TextWorldExpress game; tasks are the first `tasks_per_split` seeds of each fold."""

    name = "textworld_express"
    Settings = TextWorldExpressSettings
    settings: TextWorldExpressSettings
    default_roles: ClassVar[dict[str, Any]] = {"train": "train", "validation": "validation", "test": ["test"]}

    def __init__(self, settings: TextWorldExpressSettings | Mapping[str, Any], seed: int = 0):
        super().__init__(settings, seed)
        self.game: str = self.settings.game
        if self.game not in GAMES:
            raise ValueError(f"env.game: unknown TextWorldExpress game {self.game!r}; valid: {', '.join(GAMES)}")
        self.params = _params_string(self.settings.game_params)
        self.tasks_per_split: int = self.settings.tasks_per_split
        self._simulator = self._start_simulator()
        self._loaded: tuple[str, str] | None = None
        try:
            self._load(self.game, self.params)
        except ValueError:
            self.close()
            raise
        self._tasks: dict[str, list[Task]] = {}
        self._done = True
        self._valid: set[str] = set()  # the simulator's valid actions at this step

    @staticmethod
    def _start_simulator() -> Any:
        from textworld_express import TextWorldExpressEnv as Simulator  # starts a JVM; imported lazily

        class QuietSimulator(Simulator):
            def __del__(self) -> None:
                """Nothing: the package's closes the gateway a second time (close() did it) and fails
                on an instance a Ctrl-C cut short. The JVM ends with this process (die_on_exit)."""

        return QuietSimulator(envStepLimit=_NO_WRAPPER_STEP_LIMIT)

    def _load(self, game: str, params: str) -> None:
        if self._loaded == (game, params):
            return
        try:
            self._simulator.load(game, params)
        except ValueError as error:
            raise ValueError(f"env.game_params {params!r} rejected by TextWorldExpress game {game!r}: {error}") from None
        self._loaded = (game, params)

    def _game_tag(self) -> str:
        return f"{self.game}[{self.params}]" if self.params else self.game

    def splits(self) -> dict[str, str]:
        described = {}
        for split, fold in FOLD_OF_SPLIT.items():
            seeds = self._fold_seeds(fold)
            described[split] = (
                f"game {self._game_tag()}: the first {len(seeds)} seeds ({seeds[0]}-{seeds[-1]}) of TextWorldExpress's built-in '{fold}' "
                "fold"
            )
        return described

    def _fold_seeds(self, fold: str) -> list[int]:
        seeds = {
            "train": self._simulator.getValidSeedsTrain,
            "dev": self._simulator.getValidSeedsDev,
            "test": self._simulator.getValidSeedsTest,
        }[fold]()
        return sorted(int(s) for s in seeds)[: self.tasks_per_split]

    def tasks(self, split: str) -> list[Task]:
        if split not in FOLD_OF_SPLIT:
            raise KeyError(f"unknown split {split!r} of {self.name}; valid: {', '.join(FOLD_OF_SPLIT)}")
        if split not in self._tasks:
            fold = FOLD_OF_SPLIT[split]
            self._load(self.game, self.params)
            listed = []
            for game_seed in self._fold_seeds(fold):
                # The goal text comes from the generated game (one reset, a few ms).
                _, info = self._simulator.reset(seed=game_seed, gameFold=fold, generateGoldPath=False)
                data = {"game": self.game, "game_params": self.params, "fold": fold, "seed": game_seed}
                listed.append(
                    Task(id=f"twx/{self._game_tag()}/{split}/{game_seed}", split=split, description=info["taskDescription"], data=data)
                )
            self._done = True
            self._tasks[split] = listed
        return list(self._tasks[split])

    def _start(self, task: Task, gold: bool) -> tuple[str, dict[str, Any]]:
        self._load(task.data["game"], task.data["game_params"])
        observation, info = self._simulator.reset(seed=task.data["seed"], gameFold=task.data["fold"], generateGoldPath=gold)
        self._done = False
        self._valid = set(info["validActions"])
        return observation, {"admissible_commands": list(info["validActions"]), "score": info["score"], "goal": info["taskDescription"]}

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        return self._start(task, gold=False)

    def drifted(self, task: Task, drift: DriftSettings) -> Task:
        """The task's seed generated with the changed simulator properties (module doc)."""
        variant = drift.game_params if drift.game_params is not None else DRIFT_VARIANT.get(self.game)
        if variant is None:
            raise ConfigError(
                f"protocol.drift.game_params: no default change for game {self.game!r} (defaults: {', '.join(DRIFT_VARIANT)}); name the "
                "simulator properties after the change"
            )
        params = _params_string({**self.settings.game_params, **variant})
        if params == self.params:
            raise ConfigError(
                f"protocol.drift.game_params={variant!r}: the game {self._game_tag()!r} already has these properties; the change would "
                "change nothing"
            )
        data = {**task.data, "game_params": params}
        self._load(self.game, params)
        _, info = self._simulator.reset(seed=data["seed"], gameFold=data["fold"], generateGoldPath=False)
        self._done = True
        return Task(task.id, task.split, info["taskDescription"], task.intent, data)

    def gold_actions(self, task: Task) -> list[str]:
        """The simulator's gold action sequence for `task` (for tests and oracle actors).

        It solves the game but is not unique: it can differ between JVMs for the same task.
        """
        self._start(task, gold=True)
        actions = list(self._simulator.getGoldActionSequence())
        self._done = True
        return actions

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError(f"{self.name}: step() called before reset() or after the episode ended")
        observation, reward, _, info = self._simulator.step(action)
        success = bool(info.get("tasksuccess"))
        self._done = success or bool(info.get("taskfailure"))
        step_info = {
            "admissible_commands": list(info.get("validActions", [])),
            "score": info.get("score", 0.0),
            "success": success,
            "invalid_action": action not in self._valid,
        }
        self._valid = set(step_info["admissible_commands"])
        return observation, float(reward), self._done, step_info

    def instructions(self) -> str:
        return prompts.render("textworld_express_instructions", game=self.game)

    def java_process(self) -> subprocess.Popen | None:
        """This instance's JVM (None once closed), so tests can check that close() ends it."""
        return None if self._simulator is None else self._simulator._gateway.java_process

    def close(self) -> None:
        if self._simulator is None:
            return
        process = self.java_process()
        self._simulator.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._simulator = None


ENV = TextWorldExpressEnv
