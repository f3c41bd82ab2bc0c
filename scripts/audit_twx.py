"""Audit the TextWorldExpress checker on real episodes by a route that shares none of its code (issue 27).

For every logged episode of the given run folders, the actions the env executed (the turns'
`action`, format failures left out: nothing ran for them) are replayed in a fresh
`textworld_express.TextWorldExpressEnv` started here with the package's own API (none of
`memrl_bench.envs.textworld_express`): the game and simulator properties the run's config asked
for (manifest.json `config.env.game` / `game_params`, which must match the task id), the task's
seed, and the package's fold of the task's split (train / dev / test; the seed must be one of
that fold's valid seeds). The verdict is the simulator's own `tasksuccess` after the last
action; its `score` (>= 1 on a win), `taskfailure` and every replayed observation are compared
too.

Each episode is then "agree" (the logged success equals the audit's), or listed with both
verdicts and the actions, for a person to read. Episodes that ended at the step limit are judged
too (a game won that the env did not stop would be a false negative); episodes cut by an error
are counted apart. An observation that differs from the logged one means the replay is not the
game the model played, and is listed as such.

With --gold, each audited task's gold action sequence (the package's getGoldActionSequence) is
also replayed afresh: the count of tasks won shows the route can see a win there.

    python scripts/audit_twx.py RUN_FOLDER [RUN_FOLDER ...] [--gold]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.audit_common import summary, tally  # noqa: E402 (run as a script or imported by the tests)

JUDGED_STATUSES = ("ok", "step_limit")
FOLD_OF_SPLIT = {"train": "train", "validation": "dev", "test": "test"}  # the package's fold names
_TASK_ID = re.compile(r"twx/(?P<game>[a-z]+)(?:\[(?P<params>[^\]]*)\])?/(?P<split>[a-z_]+)/(?P<seed>\d+)")


@dataclass(frozen=True)
class Game:
    name: str
    params: str  # the simulator's "key=value,..." form
    fold: str
    seed: int


@dataclass
class Replay:
    success: bool  # tasksuccess after the last action
    score: float
    failure: bool  # taskfailure after the last action
    success_at: int | None  # the first action (0-based) after which tasksuccess held
    observations: list[str] = field(default_factory=list)


def params_text(game_params: dict[str, Any]) -> str:
    """The config's mapping as the simulator's property string, in the config's order."""
    return ",".join(f"{key}={int(value) if isinstance(value, bool) else value}" for key, value in game_params.items())


def game_of(task_id: str, env_config: dict[str, Any]) -> Game:
    """The game of a task id, with the properties from the run's config (checked against the id)."""
    match = _TASK_ID.fullmatch(task_id)
    if match is None:
        raise ValueError(f"not a TextWorldExpress task id: {task_id!r}")
    params = params_text(env_config.get("game_params") or {})
    if env_config.get("game", "twc") != match["game"] or set(filter(None, params.split(","))) != set(
        filter(None, (match["params"] or "").split(","))
    ):
        raise ValueError(f"{task_id}: the id's game does not match the run's config {env_config.get('game')} [{params}]")
    return Game(match["game"], params, FOLD_OF_SPLIT[match["split"]], int(match["seed"]))


class Simulator:
    """One JVM of the package, loaded with each episode's game and reset to its seed."""

    def __init__(self) -> None:
        from textworld_express import TextWorldExpressEnv

        self.env = TextWorldExpressEnv(envStepLimit=10**9)
        self._seeds: dict[tuple[str, str, str], set[int]] = {}

    def start(self, game: Game, gold: bool = False) -> tuple[str, dict[str, Any]]:
        self.env.load(game.name, game.params)
        key = (game.name, game.params, game.fold)
        if key not in self._seeds:
            seeds = {"train": self.env.getValidSeedsTrain, "dev": self.env.getValidSeedsDev, "test": self.env.getValidSeedsTest}[game.fold]
            self._seeds[key] = {int(s) for s in seeds()}
        if game.seed not in self._seeds[key]:
            raise ValueError(f"seed {game.seed} is not one of the package's '{game.fold}' seeds of {game.name} [{game.params}]")
        return self.env.reset(seed=game.seed, gameFold=game.fold, generateGoldPath=gold)

    def replay(self, game: Game, actions: list[str]) -> Replay:
        _, info = self.start(game)
        success_at, observations = None, []
        for index, action in enumerate(actions):
            observation, _, _, info = self.env.step(action)
            observations.append(observation)
            if info["tasksuccess"] and success_at is None:
                success_at = index
        return Replay(bool(info["tasksuccess"]), float(info["score"]), bool(info["taskfailure"]), success_at, observations)

    def gold(self, game: Game) -> list[str]:
        """The package's gold action sequence of the game."""
        self.start(game, gold=True)
        return list(self.env.getGoldActionSequence())

    def close(self) -> None:
        self.env.close()


def executed_actions(episode: dict[str, Any]) -> list[tuple[str, str]]:
    """(action, logged observation) of the turns the env executed."""
    return [(turn["action"], turn["observation"]) for turn in episode["turns"] if not turn.get("format_failure")]


def audit_episode(simulator: Simulator, episode: dict[str, Any], env_config: dict[str, Any]) -> tuple[bool, list[str]]:
    """The audit's verdict and notes (the replay differed from the log, won before its end, ...)."""
    steps = executed_actions(episode)
    result = simulator.replay(game_of(episode["task_id"], env_config), [action for action, _ in steps])
    notes = []
    for index, ((action, logged), replayed) in enumerate(zip(steps, result.observations)):
        if logged.strip() != replayed.strip():
            notes.append(f"observation {index} ({action!r}) differs: logged {logged.strip()[:120]!r}, replayed {replayed.strip()[:120]!r}")
            break
    if result.success_at is not None and result.success_at < len(steps) - 1:
        notes.append(f"won after action {result.success_at}, yet the episode went on to {len(steps)} actions")
    if result.success != (result.score >= 1.0):
        notes.append(f"the simulator's tasksuccess {result.success} and score {result.score} disagree")
    if result.failure:
        notes.append("the simulator set taskfailure")
    return result.success, notes


def gold_won(simulator: Simulator, task_id: str, env_config: dict[str, Any]) -> bool:
    """Whether the package's gold action sequence of the task, replayed afresh, wins it."""
    game = game_of(task_id, env_config)
    return simulator.replay(game, simulator.gold(game)).success


def episodes_of(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--gold", action="store_true", help="also play each audited task's gold in the route's game (it must win)")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    gold_seen: set[str] = set()
    simulator = Simulator()
    try:
        for run in args.runs:
            env_config = json.loads((run / "manifest.json").read_text())["config"]["env"]
            for episode in episodes_of(run):
                if not tally(counts, episode, JUDGED_STATUSES, len(executed_actions(episode))):
                    continue
                verdict, notes = audit_episode(simulator, episode, env_config)
                logged = bool(episode["success"])
                counts["logged success"] += logged
                counts["audit success"] += verdict
                counts["replay notes"] += bool(notes)
                agree = verdict == logged
                counts["agree" if agree else "disagree"] += 1
                if args.gold and episode["task_id"] not in gold_seen:
                    gold_seen.add(episode["task_id"])
                    won = gold_won(simulator, episode["task_id"], env_config)
                    counts["gold won"] += won
                    if not won:
                        print(f"GOLD NOT WON {episode['task_id']}")
                if not agree or notes:
                    print(
                        f"{'DISAGREE' if not agree else 'NOTE'} {run.name} {episode['episode_id']} {episode['task_id']} "
                        f"({episode['status']}): logged {logged}, audit {verdict}"
                    )
                    for note in notes:
                        print(f"    note: {note}")
                    for action, _ in executed_actions(episode):
                        print(f"    > {action}")
    finally:
        simulator.close()
    print(json.dumps(dict(sorted(counts.items()))))
    print(summary(counts, len(gold_seen) if args.gold else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
