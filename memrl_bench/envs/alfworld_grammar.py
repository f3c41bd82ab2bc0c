"""Convert ALFWorld games from the 2.1.1 grammar to 2.1.2, into a cache, never in place.

The alfworld 0.4.x handcoded expert plays the 2.1.2 grammar: `move {o} to {r}` instead
of `put {o} in/on {r}`, the fixed "You arrive at {r.name}." feedback, and a `help`
action. A game.tw-pddl file is JSON whose `grammar` and `pddl_domain` strings embed
that logic, so converting is three text replacements plus appending the help action,
taken from the 2.1.2 logic files shipped inside the installed alfworld package.

Each converted game lives in `<cache>/alfworld-2.1.2/<sha256 of the source file>/`
with a copy of traj_data.json (the expert reads it next to the game file) and
meta.json (the goal text and solvable flag, so listing tasks reads no game file twice).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memrl_bench.core import config
from memrl_bench.core.runfolder import MAX_SMALL_FILE_BYTES, CorruptRunFolderError, read_regular
from memrl_bench.envs.base import DataFileError, DataRecord, data_bytes, read_data_file

GRAMMAR_VERSION = "2.1.2"
GRAMMAR_REPLACEMENTS = (
    ("You arrive at {lend.name}.", "You arrive at {r.name}."),
    ("put {o} in/on {r}", "move {o} to {r}"),
    ("You put the {o.name} in/on the {r.name}.", "You move the {o.name} to the {r.name}."),
)
_GOAL_RULE = re.compile(r'"task":\s*\[\s*\{\s*"rhs":\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ConvertedGame:
    game_file: Path
    goal: str  # "Your task is to: ..."
    solvable: bool


def cache_root(configured: str | None = None) -> Path:
    """The converted games' folder: under `configured`, else the harness's cache root."""
    return (Path(configured).expanduser() if configured else config.cache_root()) / f"alfworld-{GRAMMAR_VERSION}"


def _packaged_logic_file(name: str) -> Path:
    # Located without importing alfworld: its import sets $ALFWORLD_DATA as a side effect.
    spec = importlib.util.find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("converting ALFWorld games needs the pip package alfworld==0.4.2")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / name
    if not path.is_file():
        raise FileNotFoundError(f"the installed alfworld package has no {path}; expected alfworld==0.4.2")
    return path


def _balanced_block(text: str, start: int, opening: str, closing: str) -> str:
    """The text from `start` up to the bracket that closes the first `opening` after it."""
    depth = 0
    for index in range(text.index(opening, start), len(text)):
        depth += {opening: 1, closing: -1}.get(text[index], 0)
        if depth == 0:
            return text[start : index + 1]
    raise ValueError(f"unbalanced {opening}{closing} block at offset {start}")


@lru_cache(maxsize=1)
def help_action() -> tuple[str, str]:
    """The 2.1.2 `help` action as (PDDL domain action, grammar action), from the package's logic files."""
    pddl = _packaged_logic_file("alfred.pddl").read_text()
    grammar = _packaged_logic_file("alfred.twl2").read_text()
    pddl_action = _balanced_block(pddl, pddl.index("(:action help"), "(", ")")
    grammar_action = _balanced_block(grammar, grammar.index("action help {"), "{", "}")
    return pddl_action, grammar_action


def convert_logic(game: dict) -> dict:
    """A 2.1.2 copy of a game.tw-pddl document; games already in 2.1.2 come back unchanged."""
    pddl_action, grammar_action = help_action()
    converted = dict(game)
    grammar = game["grammar"]
    for old, new in GRAMMAR_REPLACEMENTS:
        grammar = grammar.replace(old, new)
    if "action help {" not in grammar:
        grammar = f"{grammar}\n\n{grammar_action}\n"
    converted["grammar"] = grammar
    if "(:action help" not in game["pddl_domain"]:
        # The domain is one `(define ...)` form: the action goes inside its last parenthesis.
        body, tail = game["pddl_domain"].rsplit(")", 1)
        converted["pddl_domain"] = f"{body}\n{pddl_action}\n){tail}"
    return converted


def goal_text(game: dict, source: Path) -> str:
    """The goal sentence the game prints after its first observation ("Your task is to: ...")."""
    match = _GOAL_RULE.search(game["grammar"])
    if match is None:
        raise ValueError(f"{source}: no 'task' rule in the game grammar, cannot read the goal")
    return json.loads(f'"{match.group(1)}"')


def _write_atomically(path: Path, data: bytes) -> None:
    """Write via a rename, so a concurrent reader (another process) never sees half a file."""
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, suffix=".part") as handle:
        handle.write(data)
    os.replace(handle.name, path)


class GameDocument(DataRecord):
    """What the conversion reads of a game.tw-pddl document (the rest is copied as it is)."""

    grammar: str
    pddl_domain: str


class ConvertedMeta(DataRecord):
    """meta.json of a converted game: written last, its presence means the folder is complete."""

    goal: str
    solvable: bool


def convert_game(source_dir: Path, cache: Path) -> ConvertedGame:
    """The converted copy of the game in `source_dir`, made on first use and then reused; DataFileError naming a game file
    that is no regular file, no JSON object of a grammar and a domain, or without its goal (tracebacks before: the
    thirty-sixth round)."""
    source_file = source_dir / "game.tw-pddl"
    raw = data_bytes(source_file)
    target = cache / hashlib.sha256(raw).hexdigest()[:24]
    meta_file = target / "meta.json"
    meta = _converted_meta(meta_file)
    if meta is None:  # not converted yet, or the cache's copy damaged: converted again
        game = read_data_file(source_file, GameDocument)
        try:
            goal = goal_text(game, source_file)
        except ValueError as err:
            raise DataFileError(str(err)) from None
        meta = ConvertedMeta(goal=goal, solvable=bool(game.get("solvable", False)))
        target.mkdir(parents=True, exist_ok=True)
        _write_atomically(target / "game.tw-pddl", json.dumps(convert_logic(game)).encode())
        _write_atomically(target / "traj_data.json", data_bytes(source_dir / "traj_data.json"))
        _write_atomically(meta_file, json.dumps({**meta.model_dump(), "source": str(source_file)}).encode())
    return ConvertedGame(game_file=target / "game.tw-pddl", goal=meta.goal, solvable=meta.solvable)


def _converted_meta(path: Path) -> ConvertedMeta | None:
    """A converted game's meta.json, or None if there is none or it cannot be read as one."""
    try:
        return ConvertedMeta.model_validate_json(read_regular(path, MAX_SMALL_FILE_BYTES))
    except (OSError, ValueError, CorruptRunFolderError):
        return None
