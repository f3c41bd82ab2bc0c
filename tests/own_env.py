"""An environment of one's own, outside the package (tests/contracts/test_own_env.py): "is N even?", one
question and one answer per episode, played by the harness's single-turn actor. Selected by
conf `env/parity.yaml`, whose name is this class: `tests.own_env:Parity`."""

from __future__ import annotations

from typing import Any, ClassVar

from memrl_bench.core.schema import Task
from memrl_bench.envs.base import Env


class Parity(Env):
    name = "parity"
    default_roles: ClassVar[dict[str, Any]] = {"train": "train", "validation": "validation", "test": ["test"]}
    default_actor = "single_turn"
    SIZES: ClassVar[dict[str, range]] = {"train": range(0, 12), "validation": range(100, 104), "test": range(200, 208)}

    def splits(self) -> dict[str, str]:
        return {split: f"numbers {r.start}-{r.stop - 1}" for split, r in self.SIZES.items()}

    def tasks(self, split: str) -> list[Task]:
        return [Task(f"{split}/{n}", split, f"Is {n} even? Answer yes or no.", data={"n": n}) for n in self.SIZES[split]]

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._even = task.data["n"] % 2 == 0
        return task.description, {}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        success = action.strip().lower().startswith("yes" if self._even else "no")
        return ("right" if success else "wrong"), float(success), True, {"success": success}
