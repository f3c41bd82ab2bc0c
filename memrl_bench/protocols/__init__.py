"""Evaluation protocols, one module each (`base.py`: the interface; a module assigning
`PROTOCOL` and its `conf/protocol/<name>.yaml` is a protocol, found by memrl_bench.core.registry)."""

from typing import Any

from memrl_bench.core import registry
from memrl_bench.core.config import ConfigError, validated
from memrl_bench.protocols.base import (
    EPISODE_TAGS,
    FLIPPED,
    Batch,
    Protocol,
    ProtocolSettings,
    ProtocolViolation,
    epoch_order,
    name_of,
    role_splits,
    split_hash,
)

__all__ = [
    "EPISODE_TAGS",
    "FLIPPED",
    "Batch",
    "Protocol",
    "ProtocolSettings",
    "ProtocolViolation",
    "build",
    "epoch_order",
    "name_of",
    "named",
    "role_splits",
    "split_hash",
]


def named(settings: dict[str, Any]) -> type[Protocol]:
    """The protocol class a config's `protocol` group names (built in, installed, or package.module:Class)."""
    return registry.get("protocol", name_of(settings))


def build(settings: dict[str, Any]) -> Protocol:
    """The protocol a config's `protocol` group names (held_out if none), its settings checked by its own model;
    a key of another protocol's is one line naming the protocols it belongs to."""
    name = name_of(settings)
    protocol_cls = named(settings)
    for key in settings:
        if key not in protocol_cls.Settings.model_fields:
            owners = [n for n in registry.names("protocol") if key in registry.get("protocol", n).Settings.model_fields]
            raise ConfigError(
                f"protocol.{key}: not a setting of protocol={name}" + (f"; it belongs to protocol={' / '.join(owners)}" if owners else "")
            )
    return protocol_cls(validated(protocol_cls.Settings, settings, "protocol"))
