"""ALFWorld: household tasks as TextWorld text games (pip alfworld==0.4.2).

Games are read from `<data_dir>/json_2.1.1/<folder>/<game>/<trial>/game.tw-pddl` and played
in the 2.1.2 grammar, converted into a cache on first use (alfworld_grammar.py). Each
reset starts a TextWorld PDDL env on the converted file with ALFWorld's wrappers; the
handcoded expert wrapper is added only when `expert: true`, because it plans after every
step and so adds to the env latency that runs measure.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.schema import Task
from memrl_bench.envs.alfworld_grammar import cache_root, convert_game
from memrl_bench.envs.base import DataMissingError, Env, data_dir, hash_fraction
from memrl_bench.envs.settings import EnvSettings

# TextWorld's grammar and PDDL code keep module-level state: two games stepped in
# parallel threads (concurrent episodes) corrupt each other, so env calls take turns.
# The episodes' LLM calls still overlap.
_TEXTWORLD_LOCK = threading.Lock()

TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
FETCH_HINT = "scripts/fetch_alfworld.sh (runs the official alfworld-download; needs internet)"
VALIDATION_FRACTION = 0.5  # share of valid_seen games (by a fixed hash of the game folder) used for validation
_WELCOME_BANNER = "-= Welcome to TextWorld, ALFRED! =-"


def _alfworld_textworld() -> tuple[Any, tuple[Any, Any, Any]]:
    """textworld and ALFWorld's wrappers, imported on first use.

    Importing alfworld sets $ALFWORLD_DATA to ~/.cache/alfworld when unset; undo that so
    that later instances still resolve this env's data path the documented way.
    """
    was_set = "ALFWORLD_DATA" in os.environ
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredExpert, AlfredInfos

    if not was_set:
        os.environ.pop("ALFWORLD_DATA", None)
    return textworld, (AlfredDemangler, AlfredInfos, AlfredExpert)


class ALFWorldSettings(EnvSettings):
    data_dir: str | None = Field(None, description="Folder holding json_2.1.1/ (null: $ALFWORLD_DATA, then ../shared/data/alfworld).")
    cache_dir: str | None = Field(None, description="Where converted games are cached.")
    expert: bool = Field(False, description="Add the handcoded expert's next action to info.")


class AlfWorldEnv(Env):
    """The six ALFWorld task types; train / validation / test in- and out-of-distribution."""

    name = "alfworld"
    Settings = ALFWorldSettings
    settings: ALFWorldSettings
    default_roles: ClassVar[dict[str, Any]] = {
        "train": "train",
        "validation": "validation",
        "test": ["test_in_distribution", "test_out_of_distribution"],
    }

    def __init__(self, settings: ALFWorldSettings | Mapping[str, Any], seed: int = 0):
        super().__init__(settings, seed)
        self.games_root = data_dir(self.settings.data_dir, "ALFWORLD_DATA", "alfworld", FETCH_HINT) / "json_2.1.1"
        self.train_folder = "train" if (self.games_root / "train").is_dir() else "valid_train"
        for folder in (self.train_folder, "valid_seen", "valid_unseen"):
            if not (self.games_root / folder).is_dir():
                raise DataMissingError(
                    f"ALFWorld games not found at {self.games_root / folder}; set env.data_dir or $ALFWORLD_DATA, or fetch them with: "
                    f"{FETCH_HINT}"
                )
        self.cache = cache_root(self.settings.cache_dir)
        self.expert: bool = self.settings.expert
        self._tasks: dict[str, list[Task]] = {}
        self._game: Any = None
        self._done = True
        self._admissible: set[str] = set()  # the commands the game accepts at this step

    def splits(self) -> dict[str, str]:
        seen = (
            f"json_2.1.1/valid_seen, split by sha256 of the game folder name (memrl_bench.envs.base.hash_fraction < {VALIDATION_FRACTION})"
        )
        return {
            "train": f"json_2.1.1/{self.train_folder}: all solvable games of the six task types",
            "validation": f"{seen}: the games below the threshold (seen scenes)",
            "test_in_distribution": f"{seen}: the games at or above the threshold (seen scenes)",
            "test_out_of_distribution": "json_2.1.1/valid_unseen: all games (scenes never seen in training)",
        }

    def _source_folder(self, split: str) -> str:
        return {
            "train": self.train_folder,
            "validation": "valid_seen",
            "test_in_distribution": "valid_seen",
            "test_out_of_distribution": "valid_unseen",
        }[split]

    def _split_of(self, folder: str, game: str) -> str:
        if folder == "valid_seen":
            return "validation" if hash_fraction(game) < VALIDATION_FRACTION else "test_in_distribution"
        return "test_out_of_distribution" if folder == "valid_unseen" else "train"

    def tasks(self, split: str) -> list[Task]:
        if split not in self.splits():
            raise KeyError(f"unknown split {split!r} of {self.name}; valid: {', '.join(self.splits())}")
        if split not in self._tasks:
            self._tasks[split] = self._list_games(self._source_folder(split), split)
        return list(self._tasks[split])

    def _list_games(self, folder: str, split: str) -> list[Task]:
        listed = []
        for trial_dir in sorted((self.games_root / folder).glob("*/trial_*")):
            game = trial_dir.parent.name
            task_type = game.split("-")[0]
            # ALFWorld's own loader skips these variants and unsolvable games.
            if task_type not in TASK_TYPES or "movable" in game or "Sliced" in game or not (trial_dir / "game.tw-pddl").is_file():
                continue
            if self._split_of(folder, game) != split:
                continue
            converted = convert_game(trial_dir, self.cache)
            if not converted.solvable:
                continue
            game_id = f"{game}/{trial_dir.name}"
            data = {"game": game_id, "source": f"{folder}/{game_id}", "task_type": task_type, "category": task_type}
            listed.append(Task(id=f"alfworld/{folder}/{game_id}", split=split, description=converted.goal, data=data))
        return listed

    def _state_info(self, state: Any) -> dict[str, Any]:
        info = {"admissible_commands": list(state["admissible_commands"]), "won": bool(state["won"])}
        if self.expert:
            info["expert_plan"] = list(state["extra.expert_plan"])
        return info

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        with _TEXTWORLD_LOCK:
            return self._reset(task)

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        with _TEXTWORLD_LOCK:
            return self._step(action)

    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._close_game()
        converted = convert_game(self.games_root / task.data["source"], self.cache)
        textworld, (demangler, alfred_infos, alfred_expert) = _alfworld_textworld()
        extras = ["gamefile", "expert_plan"] if self.expert else ["gamefile"]
        wrappers = [demangler(shuffle=False), alfred_infos]
        if self.expert:
            # The expert breaks ties with the global `random`: seed it per task for repeatable sweeps.
            random.seed(f"{self.seed}/{task.id}")
            wrappers.append(alfred_expert(expert_type="handcoded"))
        request = textworld.EnvInfos(won=True, admissible_commands=True, extras=extras)
        self._game = textworld.start(str(converted.game_file), request, wrappers=wrappers)
        state = self._game.reset()
        self._done = False
        observation = state["feedback"].replace(_WELCOME_BANNER, "", 1).strip()
        info = self._state_info(state)
        self._admissible = set(info["admissible_commands"])
        return observation, info

    def _step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError(f"{self.name}: step() called before reset() or after the episode ended")
        state, _, done = self._game.step(action)
        won = bool(state["won"])
        self._done = bool(done) or won
        info = self._state_info(state)
        info.update(success=won, invalid_action=action not in self._admissible)
        self._admissible = set(info["admissible_commands"])
        return state["feedback"].strip(), 1.0 if won else 0.0, self._done, info

    def instructions(self) -> str:
        return prompts.render("alfworld_instructions")

    def _close_game(self) -> None:
        if self._game is not None:
            self._game.close()
            self._game = None

    def close(self) -> None:
        with _TEXTWORLD_LOCK:
            self._close_game()
        self._done = True


ENV = AlfWorldEnv
