"""Registries of methods and environments, found by file name.

A method is the module `memrl_bench/methods/<name>.py` exposing `METHOD` (its class);
an environment is `memrl_bench/envs/<name>.py` exposing `ENV`. Modules are imported
only when asked for, so an environment's heavy dependencies (Java, alfworld) load
only for runs that use it. The runner never names a method or an environment.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from memrl_bench.config import InputError

_KINDS = {
    "method": ("memrl_bench.methods", "METHOD"),
    "env": ("memrl_bench.envs", "ENV"),
}
_NOT_ENTRIES = {"base", "llm_ops"}  # helper modules, not methods


class UnknownNameError(InputError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def names(kind: str) -> list[str]:
    """The valid names of one kind, sorted."""
    package, _ = _KINDS[kind]
    pkg = importlib.import_module(package)
    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_") and m.name not in _NOT_ENTRIES)


def get(kind: str, name: str) -> Any:
    """The class registered as `name`, or an error listing the valid names."""
    if kind not in _KINDS:
        raise UnknownNameError(f"unknown registry kind {kind!r}; valid: {', '.join(sorted(_KINDS))}")
    valid = names(kind)
    if name not in valid:
        raise UnknownNameError(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(valid)}")
    package, attribute = _KINDS[kind]
    module = importlib.import_module(f"{package}.{name}")
    return getattr(module, attribute)
