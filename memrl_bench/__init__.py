"""memrl-bench: a fair, measured re-evaluation of memory methods for LLM agents.

The public API. Each name is imported on first use, so `import memrl_bench` loads nothing
heavy (pandas only for the episode tables, Hydra only for the commands).

The package's folders are its layers (ARCHITECTURE.md): `core/` (records and rules),
`actors/`, `envs/`, `llm/`, `methods/`, `protocols/` (the parts), `runner/`, and the
commands `cli/`, `report/`, `findings/`; this module sits above them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> the module that defines it
_API = {
    # run, and read what a run wrote
    "run": "memrl_bench.runner.loop",
    "read_run": "memrl_bench.core.records",
    "load_episodes": "memrl_bench.core.export",
    "load_retrievals": "memrl_bench.core.export",
    "InputError": "memrl_bench.core.errors",
    "CONF_DIR": "memrl_bench.core.config",
    # the interfaces a user's own part implements
    "MemoryMethod": "memrl_bench.methods.base",
    "Env": "memrl_bench.envs.base",
    "Protocol": "memrl_bench.protocols.base",
    "ProtocolSettings": "memrl_bench.protocols.base",
    "Actor": "memrl_bench.actors.base",
    "claim": "memrl_bench.findings.claim",
    "Finding": "memrl_bench.findings.claim",
    "Row": "memrl_bench.findings.claim",
    # the contract checks a part must pass
    "check_method": "memrl_bench.cli.contracts",
    "check_env": "memrl_bench.cli.contracts",
}

__all__ = [  # the keys of _API (a test holds them equal), spelled out for linters and IDEs
    "CONF_DIR",
    "Actor",
    "Env",
    "Finding",
    "InputError",
    "MemoryMethod",
    "Protocol",
    "ProtocolSettings",
    "Row",
    "__version__",
    "check_env",
    "check_method",
    "claim",
    "load_episodes",
    "load_retrievals",
    "read_run",
    "run",
]

if TYPE_CHECKING:
    from memrl_bench.actors.base import Actor
    from memrl_bench.cli.contracts import check_env, check_method
    from memrl_bench.core.config import CONF_DIR
    from memrl_bench.core.errors import InputError
    from memrl_bench.core.export import load_episodes, load_retrievals
    from memrl_bench.core.records import read_run
    from memrl_bench.envs.base import Env
    from memrl_bench.findings.claim import Finding, Row, claim
    from memrl_bench.methods.base import MemoryMethod
    from memrl_bench.protocols.base import Protocol, ProtocolSettings
    from memrl_bench.runner.loop import run


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'memrl_bench' has no attribute {name!r}")
    return getattr(importlib.import_module(_API[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)
