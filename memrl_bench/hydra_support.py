"""What the harness takes from Hydra besides `@hydra.main`: composing conf/ from code,
and a sweep's jobs as Hydra's basic sweeper expands them.

The only module that reaches below Hydra's documented API (it swaps the global Hydra
state aside so that compose runs inside the running app, and it repeats the basic
sweeper's expansion with the public override parser instead of importing
hydra._internal). tests/test_hydra_support.py checks both against Hydra itself, so a
Hydra upgrade that changes them fails there, loudly, and nowhere else.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

from memrl_bench import CONF_DIR


@contextmanager
def composing() -> Iterator[None]:
    """Hydra's compose API on conf/, also inside the running `memrl-bench` app (whose global
    Hydra is set aside meanwhile: compose refuses to start while one is initialised)."""
    state = GlobalHydra.instance()
    outer, state.hydra = state.hydra, None
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base=None):
            yield
    finally:
        state.hydra = outer


def compose(overrides: list[str], hydra_config: bool = False) -> Any:
    """conf/config.yaml composed with `overrides` (call inside `composing()`)."""
    return hydra_compose("config", overrides=overrides, return_hydra_config=hydra_config)


def parsed(overrides: list[str]) -> list[Any]:
    """Hydra's Override objects of command-line overrides."""
    return OverridesParser.create().parse_overrides(overrides)


def fixed(overrides: list[str]) -> list[str]:
    """The overrides that are not sweeps (`a=1,2` is a sweep, `a=1` is not)."""
    return [o.input_line for o in parsed(overrides) if not o.is_sweep_override()]


def sweep_jobs(arguments: list[str]) -> list[list[str]]:
    """Every job's overrides for `arguments` (the sweeper's params first, then the command's),
    as Hydra's basic sweeper expands them: a later value of a key replaces an earlier one
    in its place, and jobs are the product of the swept values in order."""
    by_key: dict[str, list[str]] = {}
    for override in parsed(arguments):
        key = override.get_key_element()
        if not override.is_sweep_override():
            by_key[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            by_key[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            raise HydraException(f"{override.input_line}: range and interval sweeps are not supported by the basic sweeper")
    return [list(job) for job in itertools.product(*by_key.values())]
