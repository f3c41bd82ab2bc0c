"""Audit the ALFWorld checker on real episodes by a route that shares none of its code (issue 27).

For every logged episode of the given run folders, the actions the env executed (the turns'
`action`, format failures left out: nothing ran for them) are replayed in a fresh game built here
from the ALFWorld package's own parts, the way its `alfworld-play-tw` script builds one: the
source game's PDDL problem (`json_2.1.1/<folder>/<game>/<trial>/game.tw-pddl`) with the 2.1.2
domain and grammar shipped inside the alfworld package (`alfworld/data/alfred.{pddl,twl2}`, the
goal sentence put in by alfworld's `add_task_to_grammar`), started with `textworld.start` and
alfworld's `AlfredDemangler` (the object names). None of `memrl_bench.envs.alfworld` or its
2.1.1 -> 2.1.2 grammar conversion (`memrl_bench.envs.alfworld_grammar`) is used. The verdict is
TextWorld's `won` (the PDDL goal holds) after the last executed action.

Each episode is then "agree" (the logged success equals the audit's), or listed with both
verdicts and the actions, for a person to read. Episodes that ended at the step limit are judged
too (a game won that the env did not stop would be a false negative); episodes cut by an error
are counted apart. Every replayed observation is compared with the logged one: a difference means
the replay is not the game the model played, and is listed as such.

With --gold, each audited game is also played by alfworld's handcoded expert in the route's game
(at most 60 steps, its ties seeded by the task id) and its actions replayed afresh: the count of
games won shows the route can see a win there (the expert is no oracle: BENCHMARKS.md "ALFWorld
expert").

    python scripts/audit_alfworld.py RUN_FOLDER [RUN_FOLDER ...] [--data ../shared/data/alfworld] [--gold]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.audit_common import summary, tally  # noqa: E402 (run as a script or imported by the tests)

JUDGED_STATUSES = ("ok", "step_limit")
WELCOME = "-= Welcome to TextWorld, ALFRED! =-"


def default_data() -> Path:
    """$ALFWORLD_DATA (read before alfworld's import sets it), else ../shared/data/alfworld."""
    if os.environ.get("ALFWORLD_DATA"):
        return Path(os.environ["ALFWORLD_DATA"])
    candidates = [Path.cwd().parent / "shared/data/alfworld", Path(__file__).resolve().parents[2] / "shared/data/alfworld"]
    return next((p for p in candidates if p.is_dir()), candidates[0])


def _alfworld() -> tuple[Any, Any, Any, Any]:
    was_set = "ALFWORLD_DATA" in os.environ
    import alfworld.info
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredExpert
    from alfworld.agents.utils.misc import add_task_to_grammar

    if not was_set:
        os.environ.pop("ALFWORLD_DATA", None)
    return textworld, alfworld.info, (AlfredDemangler, AlfredExpert), add_task_to_grammar


def game_folder(data: Path, task_id: str) -> Path:
    """`alfworld/<folder>/<game>/<trial>` -> `<data>/json_2.1.1/<folder>/<game>/<trial>`."""
    prefix, folder, game, trial = task_id.split("/")
    if prefix != "alfworld":
        raise ValueError(f"not an ALFWorld task id: {task_id!r}")
    return data / "json_2.1.1" / folder / game / trial


def build_game(source: Path, into: Path) -> Path:
    """A 2.1.2 game file in `into`, from the source's PDDL problem and the package's logic files."""
    _, info, _, add_task_to_grammar = _alfworld()
    original = json.loads((source / "game.tw-pddl").read_text())
    traj_data = json.loads((source / "traj_data.json").read_text())
    game = {
        "pddl_domain": Path(info.ALFRED_PDDL_PATH).read_text(),
        "grammar": add_task_to_grammar(Path(info.ALFRED_TWL2_PATH).read_text(), traj_data),
        "pddl_problem": original["pddl_problem"],
        "solvable": original.get("solvable"),
    }
    into.mkdir(parents=True, exist_ok=True)
    (into / "game.tw-pddl").write_text(json.dumps(game))
    (into / "traj_data.json").write_text(json.dumps(traj_data))  # the handcoded expert reads it beside the game
    return into / "game.tw-pddl"


@dataclass
class Replay:
    won: bool  # after the last action
    won_at: int | None  # the first action (0-based) after which the game was won
    observations: list[str] = field(default_factory=list)


def replay(source: Path, actions: list[str]) -> Replay:
    """Play `actions` in a fresh game of `source`; `won` after the last one."""
    textworld, _, (demangler, _), _ = _alfworld()
    with tempfile.TemporaryDirectory(prefix="audit-alfworld-") as folder:
        game = textworld.start(str(build_game(source, Path(folder))), textworld.EnvInfos(won=True), wrappers=[demangler(shuffle=False)])
        try:
            state = game.reset()
            won, won_at, observations = bool(state["won"]), None, []
            for index, action in enumerate(actions):
                state, _, _ = game.step(action)
                won = bool(state["won"])
                if won and won_at is None:
                    won_at = index
                observations.append(state["feedback"].strip())
        finally:
            game.close()
    return Replay(won, won_at, observations)


def expert_plan(source: Path, max_steps: int = 60, seed: str = "audit") -> list[str]:
    """The actions of alfworld's handcoded expert in this route's game, up to its win (the gold)."""
    textworld, _, (demangler, expert), _ = _alfworld()
    random.seed(seed)  # the expert breaks ties with the global random
    with tempfile.TemporaryDirectory(prefix="audit-alfworld-") as folder:
        request = textworld.EnvInfos(won=True, admissible_commands=True, extras=["expert_plan"])
        game = textworld.start(
            str(build_game(source, Path(folder))), request, wrappers=[demangler(shuffle=False), expert(expert_type="handcoded")]
        )
        try:
            state, plan = game.reset(), []
            while not state["won"] and len(plan) < max_steps:
                plan.append(state["extra.expert_plan"][0])
                state, _, _ = game.step(plan[-1])
        finally:
            game.close()
    return plan


def executed_actions(episode: dict[str, Any]) -> list[tuple[str, str]]:
    """(action, logged observation) of the turns the env executed."""
    return [(turn["action"], turn["observation"]) for turn in episode["turns"] if not turn.get("format_failure")]


def audit_episode(episode: dict[str, Any], data: Path) -> tuple[bool, list[str]]:
    """The audit's verdict and notes (the replay differed from the log, or won before its end)."""
    steps = executed_actions(episode)
    result = replay(game_folder(data, episode["task_id"]), [action for action, _ in steps])
    notes = []
    for index, ((action, logged), replayed) in enumerate(zip(steps, result.observations)):
        if logged.strip() != replayed:
            notes.append(f"observation {index} ({action!r}) differs: logged {logged.strip()[:120]!r}, replayed {replayed[:120]!r}")
            break
    if result.won_at is not None and result.won_at < len(steps) - 1:
        notes.append(f"won after action {result.won_at}, yet the episode went on to {len(steps)} actions")
    return result.won, notes


def gold_won(task_id: str, data: Path) -> bool:
    """Whether alfworld's handcoded expert, played in this route's game, wins it (replayed afresh)."""
    source = game_folder(data, task_id)
    return replay(source, expert_plan(source, seed=f"0/{task_id}")).won


def episodes_of(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--gold", action="store_true", help="also play each audited task's gold in the route's game (it must win)")
    parser.add_argument("--data", type=Path, default=None, help="the ALFWorld data folder (holding json_2.1.1)")
    args = parser.parse_args()
    data = (args.data or default_data()).resolve()
    counts: Counter[str] = Counter()
    gold_seen: set[str] = set()
    for run in args.runs:
        for episode in episodes_of(run):
            if not tally(counts, episode, JUDGED_STATUSES, len(executed_actions(episode))):
                continue
            verdict, notes = audit_episode(episode, data)
            logged = bool(episode["success"])
            counts["logged success"] += logged
            counts["audit success"] += verdict
            counts["replay notes"] += bool(notes)
            agree = verdict == logged
            counts["agree" if agree else "disagree"] += 1
            if args.gold and episode["task_id"] not in gold_seen:
                gold_seen.add(episode["task_id"])
                won = gold_won(episode["task_id"], data)
                counts["gold won"] += won
                if not won:
                    print(f"GOLD NOT WON {episode['task_id']}")
            if not agree or notes:
                print(
                    f"{'DISAGREE' if not agree else 'NOTE'} {run.name} {episode['episode_id']} {episode['task_id']} ({episode['status']}): "
                    f"logged {logged}, audit {verdict}"
                )
                for note in notes:
                    print(f"    note: {note}")
                for action, _ in executed_actions(episode):
                    print(f"    > {action}")
    print(json.dumps(dict(sorted(counts.items()))))
    print(summary(counts, len(gold_seen) if args.gold else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
