"""Every pluggable part of a run, found by kind and name: methods, envs, protocols, actors, embedders, LLM kinds.

`get(kind, name)` imports the module holding the part only when asked for, so an
environment's heavy dependencies (Java, alfworld) load only for runs that use it, and
an unknown name is one error listing the valid ones. The runner names no part.

A method is the module `memrl_bench/methods/<name>.py` assigning `METHOD` (its class);
an environment is `memrl_bench/envs/<name>.py` assigning `ENV`; a protocol is
`memrl_bench/protocols/<name>.py` assigning `PROTOCOL`. A module of those
packages that assigns no such name (base.py, llm_ops.py, gold.py, ...) is a helper,
not an entry: adding a method or an env is adding its file. Actors, embedders and LLM
kinds are few and live beside the code they share, so they are named in PARTS below.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
from typing import Any

from memrl_bench.config import InputError

# Kinds found by file: the package, and the name each entry module assigns.
_PACKAGES = {
    "method": ("memrl_bench.methods", "METHOD"),
    "env": ("memrl_bench.envs", "ENV"),
    "protocol": ("memrl_bench.protocols", "PROTOCOL"),
}
# Kinds named here: name -> "module:attribute".
PARTS: dict[str, dict[str, str]] = {
    "actor": {
        "react": "memrl_bench.agent:ReActActor",
        "single_turn": "memrl_bench.agent:SingleTurnActor",
        "synthetic": "memrl_bench.envs.synthetic:SyntheticActor",
    },
    "embedder": {
        "minilm": "memrl_bench.embed:MiniLMOnnxEmbedder",
        "openai": "memrl_bench.embed:OpenAIEmbedder",
    },
    "llm": {
        "none": "memrl_bench.llm:no_model",
        "openai": "memrl_bench.llm.client:open_openai",
        "local": "memrl_bench.llm.client:open_local",
    },
}
KINDS = (*_PACKAGES, *PARTS)


class UnknownNameError(InputError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def _assigns(module: str, attribute: str) -> bool:
    """Whether a module's source assigns `attribute` at its top level (read, not imported)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return False
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    return any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attribute for t in node.targets) for node in tree.body)


def _entries(kind: str) -> dict[str, str]:
    """name -> "module:attribute" for every entry of `kind`."""
    if kind in PARTS:
        return PARTS[kind]
    package, attribute = _PACKAGES[kind]
    found = (m.name for m in pkgutil.iter_modules(importlib.import_module(package).__path__) if not m.name.startswith("_"))
    return {name: f"{package}.{name}:{attribute}" for name in found if _assigns(f"{package}.{name}", attribute)}


def names(kind: str) -> list[str]:
    """The valid names of one kind, sorted."""
    return sorted(_entries(kind))


def get(kind: str, name: str) -> Any:
    """The part registered as `name` (a class, or for LLM kinds the function opening one), or an error listing the valid names."""
    if kind not in KINDS:
        raise UnknownNameError(f"unknown registry kind {kind!r}; valid: {', '.join(sorted(KINDS))}")
    entries = _entries(kind)
    if name not in entries:
        raise UnknownNameError(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(sorted(entries))}")
    module, attribute = entries[name].split(":")
    return getattr(importlib.import_module(module), attribute)
