"""What varies across the runs of a results folder, and where each variant sits on those axes.

A variant is one condition: the runs whose configs are equal but for the keys that tell
replicates apart or change no result (memrl_bench.core.config.KEY_ROLES), numbers compared as
numbers (epsilon=0 from a command line and 0.0 from a YAML are one condition). Its place:

- family: the method and its categorical settings that vary (memrl selection=softmax);
- parameter: the numeric method setting with the most values within its family (epsilon,
  softmax_temperature), and the variant's value of it; other numeric method settings that
  vary join the family;
- condition: every other setting that varies (env.outcome_temperature=0.7, protocol.name=...).

The report draws a colour per family and a shade per parameter value, marks the value 0
(MemRL's greedy epsilon = 0), draws small multiples per condition, and sorts numerically.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from memrl_bench.core.config import NOT_RESULTS, KeyRole, canonical, keys_with, role_of, without

_ABSENT = "–"  # the value of a key a variant's config does not have
BASELINE_METHOD = "none"  # the method the others are compared with


def _leaf(value: Any) -> Any:
    """A setting's value as compared (memrl_bench.core.config.canonical); a list as its JSON text, so that it can be counted and hashed."""
    value = canonical(value)
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (list, dict)) else value


def leaves(config: dict, prefix: str = "") -> dict[str, Any]:
    """The config's settings as dotted keys (without replicate, place and operation keys), values canonical."""
    if not prefix:
        config = without(config, keys_with(KeyRole.REPLICATE, KeyRole.PRESET, *NOT_RESULTS))
    out: dict[str, Any] = {}
    for key, value in config.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out |= leaves(value, f"{dotted}.")
        else:
            out[dotted] = _leaf(value)
    return out


def condition_key(config: dict) -> str:
    """Equal for the runs of one condition (replicates), different otherwise."""
    return json.dumps(leaves(config), sort_keys=True)


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else "null" if value is None else str(value)


def _short(key: str) -> str:
    return key.removeprefix("method.")


@dataclass(frozen=True)
class Place:
    """Where one variant sits on the folder's axes."""

    method: str
    family: str  # the method and its categorical settings that vary
    parameter: str | None  # the family's numeric axis (a dotted method key), if it has one
    value: float | None  # this variant's value on it
    condition: tuple[tuple[str, Any], ...]  # the other settings that vary, as (key, value)

    @property
    def condition_label(self) -> str:
        return ", ".join(f"{k}={_text(v)}" for k, v in self.condition)

    @property
    def arm(self) -> str:
        """The family and the parameter's value: "memrl selection=greedy epsilon=0.05"."""
        return self.family if self.parameter is None else f"{self.family} {_short(self.parameter)}={_text(self.value)}"

    @property
    def label(self) -> str:
        """The variant's name: "memrl selection=greedy epsilon=0.05 | env.outcome_temperature=0.7"."""
        return f"{self.arm} | {self.condition_label}" if self.condition else self.arm

    @property
    def marked(self) -> bool:
        """The parameter at 0: MemRL's greedy epsilon = 0, the critique's subject, always marked."""
        return self.parameter is not None and self.value == 0.0

    def sort_key(self) -> tuple:
        """The baseline first, then by method, family, condition and parameter value, numbers as numbers."""
        condition = tuple((k, isinstance(v, str) or v is None, v if isinstance(v, float) else 0.0, str(v)) for k, v in self.condition)
        return (self.method != BASELINE_METHOD, self.method, self.family, condition, self.value is None, self.value or 0.0)


def _varies(key: str, flats: list[dict[str, Any]]) -> bool:
    return len({json.dumps(f.get(key, _ABSENT)) for f in flats}) > 1


def places(configs: dict[str, dict]) -> dict[str, Place]:
    """Each variant's place (variant key -> Place), from one config per variant.

    A method setting varies when it differs between variants of the same method (rag has
    no epsilon: that is not a variation). A condition shows every condition key that
    varies and the variant has, and an evaluation key (KEY_ROLES) only where it is not
    the folder's usual value (protocol.name=runtime_learning, protocol.eval_samples=10).
    """
    flat = {v: leaves(c) for v, c in configs.items()}
    keys = sorted({k for f in flat.values() for k in f})
    by_method: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for f in flat.values():
        by_method[f.get("method.name")].append(f)
    method_keys = [
        k for k in keys if k.startswith("method.") and k != "method.name" and any(_varies(k, group) for group in by_method.values())
    ]
    categorical = [k for k in method_keys if not any(isinstance(f.get(k), float) for f in flat.values())]
    numeric = [k for k in method_keys if k not in categorical]
    conditions = [k for k in keys if not k.startswith("method.") and _varies(k, list(flat.values()))]
    usual = {
        k: Counter(json.dumps(f.get(k, _ABSENT)) for f in flat.values()).most_common(1)[0][0]
        for k in conditions
        if role_of(k) is KeyRole.EVALUATION
    }

    family_of = {
        v: " ".join([str(f.get("method.name")), *(f"{_short(k)}={_text(f[k])}" for k in categorical if k in f)]) for v, f in flat.items()
    }
    members: dict[str, list[str]] = defaultdict(list)
    for v, family in family_of.items():
        members[family].append(v)
    out = {}
    for family, variants in members.items():
        counts = {k: len({flat[v].get(k) for v in variants}) for k in numeric}
        moving = sorted((k for k in numeric if counts[k] > 1), key=lambda k: (-counts[k], k))
        parameter = moving[0] if moving else None
        for v in variants:
            extra = [f"{_short(k)}={_text(flat[v][k])}" for k in moving[1:] if k in flat[v]]
            condition = tuple((k, flat[v][k]) for k in conditions if k in flat[v] and usual.get(k) != json.dumps(flat[v][k]))
            out[v] = Place(
                str(flat[v].get("method.name")),
                " ".join([family, *extra]),
                parameter,
                flat[v].get(parameter) if parameter else None,
                condition,
            )
    return out
