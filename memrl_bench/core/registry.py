"""Every pluggable part of a run, found by kind and name: methods, envs, protocols, actors, embedders, LLM kinds.

`get(kind, name)` imports the module holding the part only when asked for, so an
environment's heavy dependencies (Java, alfworld) load only for runs that use it, and
an unknown name is one error listing the valid ones. The runner names no part.

A part is named in one of three ways:
- built in: a method is the module `memrl_bench/methods/<name>.py` assigning `METHOD`
  (its class), an environment `memrl_bench/envs/<name>.py` assigning `ENV`, a protocol
  `memrl_bench/protocols/<name>.py` assigning `PROTOCOL`; a module of those packages
  that assigns no such name (base.py, llm_ops.py, gold.py, ...) is a helper, not an
  entry, so adding a method, an env or a protocol is adding its file. Actors, embedders
  and LLM kinds are few and live beside the code they share, so they are named in PARTS
  below;
- installed: an entry point of another distribution in the group `memrl_bench.<kind>s`
  (`memrl_bench.methods`, `memrl_bench.envs`, `memrl_bench.protocols`, ...), as pytest and
  lm-eval find their plugins: `my_method = "my_pkg.my_method:MyMethod"` in its pyproject;
- directly, wherever a name is accepted: `package.module:Attribute`
  (`method.name=my_pkg.my_method:MyMethod`), as Gymnasium's `register(entry_point=...)`.

Every part declares the pydantic model of its settings as its `Settings` (a class attribute; a
function, an LLM kind's opener, gets one from `with_settings`), with which
memrl_bench.core.config.validate_config checks the config group naming it: an installed part
of any kind brings its own. A kind added to _PACKAGES or PARTS gets its entry-point group with
it. A name given twice (built in and by an entry point, or by two distributions) is an error
naming both, whenever that kind is looked up: which part runs must not depend on what else is
installed.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.metadata
import importlib.util
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any, TypeVar

from memrl_bench.core.errors import InputError

# Kinds found by file: the package, and the name each entry module assigns.
_PACKAGES = {
    "method": ("memrl_bench.methods", "METHOD"),
    "env": ("memrl_bench.envs", "ENV"),
    "protocol": ("memrl_bench.protocols", "PROTOCOL"),
}
# Kinds named here: name -> "module:attribute".
PARTS: dict[str, dict[str, str]] = {
    "actor": {
        "react": "memrl_bench.actors.llm_actors:ReActActor",
        "single_turn": "memrl_bench.actors.llm_actors:SingleTurnActor",
        "synthetic": "memrl_bench.envs.synthetic:SyntheticActor",
    },
    "embedder": {
        "env_intent": "memrl_bench.llm.embedders:EnvIntent",
        "minilm": "memrl_bench.llm.embedders:MiniLMOnnxEmbedder",
        "openai": "memrl_bench.llm.embedders:OpenAIEmbedder",
    },
    "llm": {
        "none": "memrl_bench.llm:no_model",
        "openai": "memrl_bench.llm.client:open_openai",
        "local": "memrl_bench.llm.client:open_local",
    },
}
KINDS = (*_PACKAGES, *PARTS)
# The entry-point group naming installed distributions' config folders (packages holding
# method/<name>.yaml, env/<name>.yaml), which memrl_bench.cli.hydra_support adds to Hydra's search path.
CONF_GROUP = "memrl_bench.conf"


class UnknownNameError(InputError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class NameClashError(InputError):
    """One name registered twice: built in and by an entry point, or by two distributions."""


@dataclass(frozen=True)
class Entry:
    target: str  # "module:attribute"
    source: str  # where it was registered, for errors


def entry_point_group(kind: str) -> str:
    """The entry-point group of a kind's installed parts: memrl_bench.methods for "method"."""
    return f"memrl_bench.{kind}s"


def _assigns(module: str, attribute: str) -> bool:
    """Whether a module's source assigns `attribute` at its top level (read, not imported)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return False
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    return any(
        isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attribute for t in node.targets) for node in tree.body
    )


@functools.cache  # the package's own files do not change while it runs; a lookup per run read must not parse them again
def _built_in(kind: str) -> dict[str, Entry]:
    if kind in PARTS:
        return {name: Entry(target, f"built in ({target})") for name, target in PARTS[kind].items()}
    package, attribute = _PACKAGES[kind]
    found = (m.name for m in pkgutil.iter_modules(importlib.import_module(package).__path__) if not m.name.startswith("_"))
    folder = package.replace(".", "/")
    return {
        name: Entry(f"{package}.{name}:{attribute}", f"built in ({folder}/{name}.py)")
        for name in found
        if _assigns(f"{package}.{name}", attribute)
    }


def installed(group: str) -> list[tuple[str, Entry]]:
    """(name, entry) for every entry point of `group` in the installed distributions."""
    return _installed(group, tuple(sys.path))


@functools.lru_cache(maxsize=64)
def _installed(group: str, path: tuple[str, ...]) -> list[tuple[str, Entry]]:
    """installed(group) for this sys.path (distributions are found on it: another path, another answer)."""
    found = []
    for point in importlib.metadata.entry_points(group=group):
        dist = f"{point.dist.name} {point.dist.version}" if point.dist is not None else "an unnamed distribution"
        found.append((point.name, Entry(point.value, f"the entry point {point.name} = {point.value!r} of {dist} (group {group})")))
    return found


def _entries(kind: str) -> dict[str, Entry]:
    """name -> entry for every built-in and installed part of `kind`."""
    entries = dict(_built_in(kind))
    for name, entry in installed(entry_point_group(kind)):
        if name in entries:
            raise NameClashError(f"{kind} {name!r} is registered twice: {entries[name].source} and {entry.source}; rename one of them")
        entries[name] = entry
    return entries


def config_packages() -> list[str]:
    """The packages of installed distributions' config folders, for Hydra's search path: each entry
    point of CONF_GROUP names one (`my_pkg = "my_pkg.conf"`, a package holding method/<name>.yaml)."""
    packages = []
    for _, entry in installed(CONF_GROUP):
        try:
            spec = importlib.util.find_spec(entry.target)
        except (ModuleNotFoundError, ValueError):  # its parent package is missing; a malformed name
            spec = None
        if spec is None or spec.submodule_search_locations is None:
            raise InputError(f"{entry.source}: no package named {entry.target!r} (it must name the package holding the config folders)")
        if spec.origin is None:  # a folder without __init__.py: Hydra reads pkg:// configs only from a package
            raise InputError(
                f"{entry.source}: {entry.target!r} has no __init__.py; add an empty one (Hydra reads configs from packages only)"
            )
        packages.append(entry.target)
    return packages


def names(kind: str) -> list[str]:
    """The valid names of one kind, sorted: built-in and installed ones."""
    return sorted(_entries(kind))


def load(target: str, what: str) -> Any:
    """The object a "package.module:Attribute" reference names (imported now); `what` names it in errors."""
    module, _, attribute = target.partition(":")
    if not module or not attribute:
        raise UnknownNameError(f"{what}: {target!r} must have the form package.module:Attribute")
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is None or not (module == err.name or module.startswith(err.name + ".")):
            raise  # the module exists and an import inside it failed: its own traceback says where
        raise UnknownNameError(f"{what}: no module named {err.name!r} (is its package installed?)") from None
    try:
        return reduce(getattr, attribute.split("."), loaded)
    except AttributeError:
        raise UnknownNameError(f"{what}: module {module!r} has no attribute {attribute!r}") from None


Part = TypeVar("Part", bound=Callable[..., Any])


def with_settings(model: type) -> Callable[[Part], Part]:
    """Give a part that is a function (an LLM kind's opener) the model of its settings, as a class
    declares its `Settings`: memrl_bench.core.config.validate_config checks its config group with it."""

    def declare(part: Part) -> Part:
        part.Settings = model  # type: ignore[attr-defined]
        return part

    return declare


def get(kind: str, name: str) -> Any:
    """The part registered as `name`, or named by a "package.module:Attribute" reference (a class,
    or for LLM kinds the function opening one); an error listing the valid names for any other name."""
    if kind not in KINDS:
        raise UnknownNameError(f"unknown registry kind {kind!r}; valid: {', '.join(sorted(KINDS))}")
    if ":" in name:
        return load(name, f"{kind} {name!r}")
    entries = _entries(kind)
    if name not in entries:
        raise UnknownNameError(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(sorted(entries))} (or package.module:Attribute)")
    entry = entries[name]
    return load(entry.target, f"{kind} {name!r}, {entry.source}")
