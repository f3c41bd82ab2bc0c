"""The rules of a run's config: the roles of its keys (one table: which keys change results,
which tell replicates apart, which only say where a run goes), the config hash, the naming of
results folders, and the check of every value (`validate_config`).

Each part brings the pydantic model of its settings beside its code, as its class's `Settings`
(an env's in memrl_bench/envs/, an actor's in memrl_bench/actors/base.py, an embedder's in
memrl_bench/llm/embedders.py, the LLM kinds' in memrl_bench/llm/settings.py, a method's and a
protocol's in their modules); `validate_config`, called by the runner before anything is built
or written, finds each part the config names through memrl_bench.core.registry, checks its
group with that model and hands the typed settings on; a wrong value raises ConfigError with
one line naming the key. The models only check: a valid config runs exactly as before.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from memrl_bench.core import registry
from memrl_bench.core.errors import InputError
from memrl_bench.core.redaction import redact_url_value, strip_url_secrets

# The Hydra configs ship inside the package, so an installed wheel runs from any directory.
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")


class ConfigError(InputError, ValueError):
    """A config value is wrong; the message names the key and the value."""


class ConfigMismatchError(InputError, RuntimeError):
    """The run folder holds a run of a different config."""


TOP_LEVEL_KEYS = (
    "env",
    "method",
    "llm",
    "memory_llm",
    "embedder",
    "protocol",
    "actor",
    "seed",
    "task_order_seed",
    "experiment_name",
    "results_dir",
    "progress",
    "transcripts",
    "hydra",
)


# ---- the roles of config keys -------------------------------------------------------------


class KeyRole(str, Enum):
    """What a config key (or command-line override) is to a run: the one table below
    decides the config hash, run folder names, the report's variants and the findings' arms."""

    CONDITION = "condition"  # what a run computes: hashed, named, part of the report's variant (every key not in the table)
    ARM = "arm"  # the memory method, its settings, its writer (method=..., method.epsilon=..., memory_llm): hashed, named; findings' arms
    EVALUATION = "evaluation"  # protocol keys that make another kind of evaluation, not another world (findings)
    REPLICATE = "replicate"  # seeds: hashed and named, aggregated over
    PRESET = "preset"  # a selection of other keys (+experiment=..., a study): its keys are hashed and named, not it
    PLACE = "place"  # where a run is written: neither hashed nor named
    OPERATION = (
        "operation"  # how a run goes, not what it computes: neither hashed nor named, so e.g. raising llm.max_concurrency resumes a run
    )


# A key's role covers what is below it (hydra: the whole group). Keys not listed are conditions.
KEY_ROLES: dict[str, KeyRole] = {
    "method": KeyRole.ARM,
    "memory_llm": KeyRole.ARM,  # the writer model: a variant of the method the findings compare (runs.Run.arm_key), not another world
    "seed": KeyRole.REPLICATE,
    "task_order_seed": KeyRole.REPLICATE,
    "experiment": KeyRole.PRESET,
    "study": KeyRole.PRESET,
    "results_dir": KeyRole.PLACE,
    "experiment_name": KeyRole.PLACE,
    "hydra": KeyRole.PLACE,
    "progress": KeyRole.OPERATION,
    "transcripts": KeyRole.OPERATION,
    "protocol.checkpoint_interval_s": KeyRole.OPERATION,
    **{  # the acting model's and the memory writer's (memory_llm: the same settings model) alike
        f"{group}.{key}": KeyRole.OPERATION
        for group in ("llm", "memory_llm")
        for key in ("max_concurrency", "timeout_s", "max_retries", "max_consecutive_failures", "cache_mode", "cache_path", "threads")
    },
    "env.worker_memory_mb": KeyRole.OPERATION,  # LLB-DB's SQL worker: a cap ordinary SQL stays far below (as llm.timeout_s)
    "protocol.name": KeyRole.EVALUATION,
    "protocol.validate_every_epoch": KeyRole.EVALUATION,
    "protocol.test_at_end": KeyRole.EVALUATION,
    "protocol.eval_samples": KeyRole.EVALUATION,
    "protocol.epoch_order_seeds": KeyRole.EVALUATION,
    "protocol.max_tasks": KeyRole.EVALUATION,
    "protocol.skip_tasks": KeyRole.EVALUATION,
    "protocol.stream_windows": KeyRole.EVALUATION,
    "protocol.replay_every": KeyRole.EVALUATION,
    "protocol.replay_tasks": KeyRole.EVALUATION,
    "protocol.replay_seed": KeyRole.EVALUATION,
    "protocol.transfer_from": KeyRole.PLACE,  # where the source run is read: the manifest records its identity, which a resume checks
    "protocol.transfer_source_env": KeyRole.EVALUATION,
}
NOT_RESULTS = (KeyRole.PLACE, KeyRole.OPERATION)  # roles of keys that cannot change a run's results


def override_key(override: str) -> str:
    """The dotted key of a command-line override ("+experiment=x" -> "experiment")."""
    return override.split("=", 1)[0].lstrip("+~")


def role_of(key: str) -> KeyRole:
    """The role of a dotted config key or an override ("llm.threads=2", "+experiment=demo"):
    its own in KEY_ROLES, else its nearest listed parent's (method.epsilon: the method's), else CONDITION."""
    parts = override_key(key).split(".")
    for end in range(len(parts), 0, -1):
        role = KEY_ROLES.get(".".join(parts[:end]))
        if role is not None:
            return role
    return KeyRole.CONDITION


def keys_with(*roles: KeyRole) -> tuple[str, ...]:
    """The dotted keys of the table that have one of `roles`."""
    return tuple(key for key, role in KEY_ROLES.items() if role in roles)


def without(config: dict, keys: tuple[str, ...]) -> dict:
    """A copy of a nested config without the nodes at these dotted keys (deep: the original is untouched)."""
    pruned = json.loads(json.dumps(config, default=str))
    for dotted in keys:
        *parents, leaf = dotted.split(".")
        node = pruned
        for p in parents:
            node = node.get(p, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(leaf, None)
    return pruned


def canonical(value: Any) -> Any:
    """Numbers as floats (bools stay bools), in dicts and lists too: epsilon=0 from a command
    line and 0.0 from a YAML are one setting when runs are grouped into conditions."""
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def config_hash(cfg: dict) -> str:
    """The sha256 of everything in `cfg` that can change a run's results (the keys whose role is not in NOT_RESULTS)."""
    return hashlib.sha256(json.dumps(without(cfg, keys_with(*NOT_RESULTS)), sort_keys=True).encode()).hexdigest()


def upgrade(config: dict) -> dict:
    """A run's config as this version writes it, from a folder an older version wrote.

    Until each protocol had its own settings model (issue 29) every protocol YAML listed the
    keys of all of them; those that only switched behaviour on are retired: `runtime_learning`
    and `streaming` (now the protocol's name) and `poison_share` / `poison_epoch` outside
    protocol=poison (0 there: no poison). What they switched on becomes the protocol's name, so
    an old run is read, resumed and grouped as the run this version would write."""
    old = config.get("protocol")
    if not isinstance(old, dict) or not {"runtime_learning", "streaming", "poison_share"} & set(old):
        return config
    protocol = dict(old)
    name = protocol.get("name", "held_out")
    if protocol.pop("runtime_learning", False) and name == "held_out":
        name = "runtime_learning"
    if protocol.pop("streaming", False) and name not in ("streaming", "replay"):
        name = "replay" if protocol.get("replay_every") else "streaming"
    if name != "poison" and "poison_share" in protocol:
        if protocol["poison_share"]:
            name = "poison" if name == "held_out" else name  # poison beside another protocol stays, and its model refuses it
        else:
            protocol.pop("poison_share")
            protocol.pop("poison_epoch", None)
    if name != protocol.get("name", "held_out"):  # a config that named no protocol keeps naming none while it is held_out
        protocol["name"] = name
    return {**config, "protocol": protocol}


NAME_MAX_BYTES = 255  # a file name's limit on Linux and macOS file systems
RUN_NAME_MAX_BYTES = 200  # run folder names past this keep their start and a hash
_NAMED_FIRST = ("method", "env")  # a run folder's name starts with its method and env when the command chose them


# ---- naming ---------------------------------------------------------------------------


def _cut_to_bytes(text: str, limit: int) -> str:
    return text.encode()[:limit].decode(errors="ignore")


def run_name(overrides: Iterable[str]) -> str:
    """A run folder's name: the command's overrides that can change results ("default" without any).

    The method's keys come first (method=..., then method.*=...), then the env's, then the
    other keys in sorted order; keys that cannot change results (PLACE, OPERATION) and
    presets are left out, as .hydra/overrides.yaml keeps the full list. URL userinfo
    (user:password@) and key-like query values (?api_key=...) never reach a name
    (memrl_bench.core.redaction, applied to each override). Names past 200 bytes keep their
    start (so the method and env) and a short hash of the whole, as file names are
    limited to 255 bytes.
    """
    named = [o for o in overrides if role_of(o) not in (*NOT_RESULTS, KeyRole.PRESET)]
    first = {key: i for i, key in enumerate(_NAMED_FIRST)}

    def place(override: str) -> tuple:  # the method's keys, then the env's (each group choice first), then the rest
        key = override_key(override)
        rank = first.get(key.split(".")[0], len(first))
        return (rank, rank < len(first) and "." in key, override)

    named.sort(key=place)
    name = ",".join(strip_url_secrets(o) for o in named).replace("/", "_").replace("+", "") or "default"
    if len(name.encode()) > RUN_NAME_MAX_BYTES:
        name = f"{_cut_to_bytes(name, 180)}...{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return name


def cache_root() -> Path:
    """Where the harness keeps what it can compute again (models, LLM responses, embeddings, gold checks):
    ${MEMRL_BENCH_CACHE:-~/.cache/memrl-bench}.
    """
    return Path(os.environ.get("MEMRL_BENCH_CACHE") or "~/.cache/memrl-bench").expanduser()


def results_folder(results_dir: Any, experiment_name: Any) -> Path:
    """results_dir/experiment_name, checked before anything is created there.

    experiment_name must stay inside results_dir (a relative path without '..') and
    each of its parts must fit a file name; results_dir must be, or be creatable as, a folder.
    """
    name = str(experiment_name)
    parts = PurePosixPath(name).parts
    if not name or PurePosixPath(name).is_absolute() or ".." in parts or "\0" in name:
        raise ConfigError(f"experiment_name: must be a relative folder name inside results_dir, without '..' (got {name!r})")
    long = next((p for p in parts if len(p.encode()) > NAME_MAX_BYTES), None)
    if long is not None:
        raise ConfigError(
            f"experiment_name: a folder name has at most {NAME_MAX_BYTES} bytes, got one of {len(long.encode())} ({long[:40]}...)"
        )
    if not str(results_dir) or "\0" in str(results_dir):
        raise ConfigError(f"results_dir: must name a folder (got {results_dir!r})")
    root = Path(str(results_dir)).expanduser()
    existing = next((p for p in (root, *root.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(f"results_dir: {existing} is a file, not a folder (results_dir={results_dir})")
    return root / name


# ---- errors from pydantic -------------------------------------------------------------

_SECRET_FIELDS = re.compile(r"api_key")  # their wrong values may be the key itself: never echoed


def _shown_value(key: str, value: Any) -> str:
    """A wrong value as an error message shows it: a URL key's without anything before its last '@'."""
    if key.endswith("url") and isinstance(value, str):
        return repr(redact_url_value(value))
    return strip_url_secrets(repr(value))


def config_error(err: ValidationError, prefix: str) -> ConfigError:
    """One line naming the key and the value, from a pydantic error."""
    first = err.errors()[0]
    key = ".".join(str(p) for p in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    if not key:  # a check across keys: its message names them
        return ConfigError(message)
    dotted = f"{prefix}.{key}" if prefix else key
    shown = "input" in first and not isinstance(first["input"], dict) and not _SECRET_FIELDS.search(key)
    got = f" (got {_shown_value(key, first['input'])})" if shown else ""
    return ConfigError(f"{dotted}: {message}{got}")


def validated(model: type[BaseModel], values: Any, prefix: str) -> BaseModel:
    if not isinstance(values, dict):
        raise ConfigError(f"{prefix}: must be a mapping of settings (got {values!r})")
    for key in values:
        if not isinstance(key, str):  # YAML's `1: 2` in a config file: `model(**values)` ended in a TypeError traceback (53b)
            raise ConfigError(f"{prefix}: a setting's name is text (got the key {key!r} of type {type(key).__name__})")
    try:
        return model(**values)
    except ValidationError as err:
        raise config_error(err, prefix) from None


MAX_SECONDS = 86_400.0  # the longest time limit or wait a setting may ask for: a day (Python's waits overflow near 1e10 s)
# the most CPU threads or parallel workers a setting may ask for: past a machine's cores they only contend, and onnxruntime
# ended in a traceback at 2^31 threads and in SIGSEGV at 100,000 (the thirty-second round)
MAX_THREADS = 256


def fits_64_bits(value: int) -> bool:
    """Whether an integer is one a run file's tables hold (a signed 64-bit integer)."""
    return -(1 << 63) <= value < 1 << 63


MAX_CONFIG_DEPTH = 64  # mappings and lists inside each other in a run's config (the harness's own go 3 deep)


def check_values(config: Any) -> None:
    """What no setting means, anywhere in a config: NaN or infinity; an integer past 64 bits (the run's own readers refuse
    its manifest then: `seed=10**24` ran to COMPLETE, twentieth round); text with a NUL byte or a lone surrogate, which no
    file name or file holds (YAML's "\\0" or "\\ud800" in a path setting ended in a traceback: 50b); nesting past
    MAX_CONFIG_DEPTH. The first found is a ConfigError naming its key."""
    todo = [(config, "", 0)]
    while todo:
        value, dotted, depth = todo.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{dotted}: must be a finite number (got {value})")
        if isinstance(value, int) and not fits_64_bits(value):
            raise ConfigError(f"{dotted}: must be a whole number that fits in 64 bits (got one of {value.bit_length()} bits)")
        if isinstance(value, str) and not _usable_text(value):
            raise ConfigError(f"{dotted or 'a key'}: holds a NUL byte or a lone surrogate, which no file name or file can hold")
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(f"{dotted.split('.', 1)[0]}: nested more than {MAX_CONFIG_DEPTH} deep")
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            if isinstance(key, str) and not _usable_text(key):
                raise ConfigError(f"{dotted or 'a key'}: a key holds a NUL byte or a lone surrogate")
            todo.append((item, f"{dotted}.{key}" if dotted else str(key), depth + 1))


def _usable_text(text: str) -> bool:
    """Text a file name (in the system's encoding, undecodable bytes kept as surrogates) or a UTF-8 file can hold."""
    if "\0" in text:
        return False
    try:
        os.fsencode(text)
    except UnicodeError:
        return False
    return True


# ---- the models -----------------------------------------------------------------------


class Settings(BaseModel):
    """A part's settings (a config group): unknown keys refused, types strict (no "3" for 3,
    no "0.1" for 0.1), numbers finite. Its defaults are the group's: a YAML of conf/ starts from
    them (`defaults_of`, served to Hydra by memrl_bench.cli.hydra_support) and holds what differs."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    # Keys a composed config holds only when set (`+env.task_types=[0,1]`), as when each YAML listed
    # its keys: the configs (and config hashes) of the runs written then are the ones composed now.
    unlisted: ClassVar[tuple[str, ...]] = ()


def defaults_of(model: type[BaseModel]) -> dict[str, Any]:
    """A settings model's defaults as its config group composes them: every key with a default but
    the model's `unlisted` ones, a nested model's as its own model composes them; required keys
    (an env's name) are the YAML's to give."""
    unlisted = getattr(model, "unlisted", ())
    composed: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        if field.is_required() or key in unlisted:
            continue
        value = field.get_default(call_default_factory=True)
        composed[key] = defaults_of(type(value)) if isinstance(value, BaseModel) else value
    return composed


class RunSettings(Settings):
    """The top-level keys of conf/config.yaml (the groups are checked by their own models)."""

    seed: int = Field(0, ge=0, description="The method's seed (exploration draws).")
    task_order_seed: int = Field(0, ge=0, description="Fixes the training order of every epoch.")
    experiment_name: str | int = Field("default", description="Results go to results_dir/experiment_name/<run name>.")
    results_dir: str = Field("results", description="The folder of all results.")
    progress: bool = Field(True, description="A progress bar on a terminal.")
    transcripts: bool = Field(True, description="Write every prompt and completion (acting and memory management) to transcripts.jsonl.gz.")

    @model_validator(mode="after")
    def _folder(self) -> RunSettings:
        results_folder(self.results_dir, self.experiment_name)
        return self


# ---- checking a run's config ----------------------------------------------------------

GROUPS = ("env", "method", "llm", "memory_llm", "embedder", "protocol", "actor")
NAMED_BY = {"actor": "kind"}  # the key of a group that names its part, when it is not `name`


@dataclass(frozen=True)
class Part:
    """A part a config names (found by memrl_bench.core.registry) and its group checked by the model it declares."""

    cls: Any  # the class, or for an LLM kind the function opening the run's model
    settings: BaseModel


@dataclass(frozen=True)
class CheckedConfig:
    """The parts a run's config names with their typed settings, validated once; the runner builds them from these."""

    env: Part
    llm: Part
    embedder: Part
    actor: Part
    memory_llm: Part | None = None  # the model of memory calls when it is not the acting model (memory_llm=local|openai)


def named_part(kind: str, name: Any, key: str) -> Any:
    """The part of `kind` that the config key `key` names; an unknown name is one ConfigError naming the key."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{key}: must name a {kind} (got {name!r})")
    try:
        return registry.get(kind, name)
    except registry.UnknownNameError as err:
        raise ConfigError(f"{key}: {err}") from None


def checked_part(kind: str, group: Any, default: str | None = None, at: str | None = None) -> Part:
    """The part a config group names (by its NAMED_BY key; `default` if none) and the group checked by the part's `Settings`;
    `at`: the group's key when it is not the kind's own (memory_llm, a second LLM)."""
    at = at or kind
    if not isinstance(group, dict):
        raise ConfigError(f"{at}: must be a mapping of settings (got {group!r})")
    key = NAMED_BY.get(kind, "name")
    name = group.get(key) or default
    cls = named_part(kind, name, f"{at}.{key}")
    if getattr(cls, "Settings", None) is None:
        raise ConfigError(f"{at}.{key}: {kind} {name!r} declares no settings model (a `Settings` attribute)")
    return Part(cls, validated(cls.Settings, group, at))


def checked_memory_llm(group: Any) -> Part | None:
    """The memory writer's LLM kind and settings (the llm group's model, one rule for both); None when the config has no
    memory_llm group (memory_llm=same composes none): the acting model serves memory calls, as in every run before it."""
    if group is None:
        return None
    try:
        part = checked_part("llm", group, at="memory_llm")
    except ConfigError as err:  # a check across the llm model's keys names them as the llm group's
        message = str(err)
        raise ConfigError(
            message.replace("llm.", "memory_llm.", 1).replace("llm=", "memory_llm=", 1) if message.startswith("llm.") else message
        ) from None
    if group.get("name") == "none":
        raise ConfigError("memory_llm.name: 'none' serves no memory calls; memory_llm=same has the acting model serve them")
    return part


def validate_config(cfg: dict) -> CheckedConfig:
    """Check every group of a run's config by type and range, each with the model of the part it names.

    Method and protocol settings are checked by their own models when the runner builds them.
    """
    unknown = sorted(set(cfg) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise ConfigError(f"unknown config key {unknown[0]!r}; valid top-level keys: {', '.join(TOP_LEVEL_KEYS[:-1])}")
    check_values({k: v for k, v in cfg.items() if k != "hydra"})
    validated(RunSettings, {k: v for k, v in cfg.items() if k not in (*GROUPS, "hydra")}, "")
    for group in ("env", "method"):
        if not isinstance(cfg.get(group), dict) or not cfg[group].get("name"):
            raise ConfigError(f"{group}.name: missing (choose one with {group}=<name>)")
    env = checked_part("env", cfg["env"])
    llm = checked_part("llm", cfg.get("llm") or {}, default="none")
    memory_llm = checked_memory_llm(cfg.get("memory_llm"))
    embedder = checked_part("embedder", cfg.get("embedder") or {"name": "env_intent"})
    actor = checked_part("actor", cfg.get("actor") or {}, default=env.cls.default_actor)
    if not isinstance(cfg.get("protocol") or {}, dict):
        raise ConfigError(f"protocol: must be a mapping of settings (got {cfg['protocol']!r})")
    return CheckedConfig(env, llm, embedder, actor, memory_llm)
