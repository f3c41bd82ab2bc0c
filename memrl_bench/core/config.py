"""The rules of a run's config: one pydantic model per config group, the roles of its
keys (one table: which keys change results, which tell replicates apart, which only say
where a run goes), the config hash, and the naming of results folders.

Every value is checked by type and range where it enters (`validate_config`, called
by the runner before anything is built or written); a wrong value raises ConfigError
with one line naming the key. The models only check: the runner and the parts it
builds read the config's own values, so a valid config runs exactly as before.
Methods check their settings with their own models (memrl_bench/methods/*.py);
environments of other packages may bring theirs, and are checked by them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memrl_bench.core.redaction import redact_url_value, strip_url_secrets, url_host

# The Hydra configs ship inside the package, so an installed wheel runs from any directory.
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")


class InputError(Exception):
    """The input is wrong (a config value, a file, a run folder): the CLI ends with its one line and exit code 2.

    Every error of that kind, in whichever module it arises, derives from this class.
    """


@contextmanager
def sqlite_errors_as(error: type[InputError], path: Path, what: str, remedy: str) -> Iterator[None]:
    """SQLite's errors on the file `path` (garbled, truncated, a full disk) as one `error` naming it;
    misuse of the connection (ProgrammingError) stays a bug."""
    try:
        yield
    except sqlite3.ProgrammingError:
        raise
    except sqlite3.OperationalError as err:
        if "locked" in str(err) or "busy" in str(err):  # a whole file another process holds, not a damaged one
            raise error(f"{path}: {what} is held by another process ({err}); wait for it to finish, or {remedy}") from None
        raise error(f"{path}: {what} cannot be used ({err}); move it away to start a new one, or {remedy}") from None
    except sqlite3.DatabaseError as err:
        raise error(f"{path}: {what} cannot be used ({err}); move it away to start a new one, or {remedy}") from None


class ConfigError(InputError, ValueError):
    """A config value is wrong; the message names the key and the value."""


class ConfigMismatchError(InputError, RuntimeError):
    """The run folder holds a run of a different config."""


TOP_LEVEL_KEYS = ("env", "method", "llm", "embedder", "protocol", "actor", "seed", "task_order_seed", "experiment_name", "results_dir", "progress", "transcripts", "hydra")


# ---- the roles of config keys -------------------------------------------------------------


class KeyRole(str, Enum):
    """What a config key (or command-line override) is to a run: the one table below
    decides the config hash, run folder names, the report's variants and the findings' arms."""

    CONDITION = "condition"  # what a run computes: hashed, named, part of the report's variant (every key not in the table)
    ARM = "arm"  # the memory method and its settings (method=..., method.epsilon=...): hashed, named first; the findings' arms
    EVALUATION = "evaluation"  # protocol keys that make another kind of evaluation, not another world (findings)
    REPLICATE = "replicate"  # seeds: hashed and named, aggregated over
    PRESET = "preset"  # a selection of other keys (+experiment=..., a study): its keys are hashed and named, not it
    PLACE = "place"  # where a run is written: neither hashed nor named
    OPERATION = "operation"  # how a run goes, not what it computes: neither hashed nor named, so e.g. raising llm.max_concurrency resumes a run


# A key's role covers what is below it (hydra: the whole group). Keys not listed are conditions.
KEY_ROLES: dict[str, KeyRole] = {
    "method": KeyRole.ARM,
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
    "llm.max_concurrency": KeyRole.OPERATION,
    "llm.timeout_s": KeyRole.OPERATION,
    "llm.max_retries": KeyRole.OPERATION,
    "llm.max_consecutive_failures": KeyRole.OPERATION,
    "llm.cache_mode": KeyRole.OPERATION,
    "llm.cache_path": KeyRole.OPERATION,
    "llm.threads": KeyRole.OPERATION,
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
    """Where the harness keeps what it can compute again (models, LLM responses, embeddings, gold checks): ${MEMRL_BENCH_CACHE:-~/.cache/memrl-bench}."""
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
        raise ConfigError(f"experiment_name: a folder name has at most {NAME_MAX_BYTES} bytes, got one of {len(long.encode())} ({long[:40]}...)")
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
    try:
        return model(**values)
    except ValidationError as err:
        raise config_error(err, prefix) from None


def check_finite(value: Any, dotted: str = "") -> None:
    """No NaN or infinity anywhere in a config: no setting means either."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{dotted}: must be a finite number (got {value})")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        check_finite(item, f"{dotted}.{key}" if dotted else str(key))


# ---- the models -----------------------------------------------------------------------


class Settings(BaseModel):
    """A config group, or a method's settings: unknown keys refused, types strict (no "3" for 3,
    no "0.1" for 0.1), numbers finite."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


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


class GenerationSettings(Settings):
    """Sampling settings of a chat call (the llm group's defaults, an actor's overrides)."""

    temperature: float | None = Field(None, ge=0, description="Sampling temperature (0: greedy).")
    top_p: float | None = Field(None, gt=0, le=1, description="Nucleus sampling mass.")
    seed: int | None = Field(None, description="The server's sampling seed.")
    max_tokens: int | None = Field(None, ge=1, description="Most tokens per completion.")
    stop: str | list[str] | None = Field(None, description="Stop sequences.")
    response_format: dict[str, Any] | None = Field(None, description="Structured output (OpenAI's response_format: a JSON schema), sent as given.")


_ENV_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MISSING = "???"  # OmegaConf's mark of a mandatory value not given


def _checked_url(url: str | None) -> str | None:
    if url is None:
        return url
    if not re.match(r"^https?://[^/\s]+", url):
        raise ValueError("must be an http(s) URL such as http://127.0.0.1:8000/v1")
    if url_host(url) != urlsplit(url).netloc.rpartition("@")[2]:  # HTTP clients take the host from before the first '/'
        raise ValueError("its host is ambiguous: a '/' before the last '@' (a password holding '/', or a path holding '@'); percent-encode it (%2F, %40)")
    _, colon, port = url_host(url).rpartition("]")[2].partition(":")  # host:port, [IPv6]:port; host:9:9 has port "9:9"
    if colon and not (port.isdigit() and 1 <= int(port) <= 65535):  # not an outage: no server can listen there
        # never the port itself: after a password holding '?', '#' or a space, it is part of the password
        hint = " (a password holding '?', '#' or a space ends the host early: percent-encode it)" if "@" in url else ""
        raise ValueError(f"the port must be a number in 1-65535{hint}")
    if re.search(r"[\x00-\x1f\x7f]", url):  # the HTTP client refuses it (httpx InvalidURL) at the first request
        raise ValueError("holds a control character (a newline, a tab, ...); percent-encode it")
    return url


def _checked_key_env(name: str) -> str:
    if not _ENV_VAR_NAME.match(name):
        raise ValueError("must be the NAME of the environment variable holding the key (such as OPENAI_API_KEY), not the key itself")
    return name


class LLMConfig(GenerationSettings):
    """The llm group (conf/llm/*.yaml): one flat group, so that any key is one override."""

    name: Literal["local", "openai", "none"] = Field("none", description="local: a llama.cpp server started here; openai: any running OpenAI-compatible server; none: no LLM.")
    model: str | None = Field(None, description="A catalogue name or .gguf path (local), the served model name (openai).")
    base_url: str | None = Field(None, description="The server's URL, ending in /v1 (openai).")
    api_key_env: str = Field("OPENAI_API_KEY", description="The environment variable holding the API key.")
    finetuned_on: str | None = Field(None, description="The env this backbone was fine-tuned on (the protocol refuses it unless allowed).")
    max_concurrency: int = Field(4, ge=1, description="Requests in flight at once.")
    max_consecutive_failures: int = Field(10, ge=1, description="This many failed calls in a row stop the run (LLMOutageError).")
    max_retries: int = Field(4, ge=0, description="Extra attempts after 429 / 5xx / timeouts / connection errors.")
    timeout_s: float = Field(120.0, gt=0, description="Seconds per attempt.")
    backoff_base_s: float = Field(0.5, ge=0, description="First backoff, doubled per retry.")
    backoff_max_s: float = Field(30.0, ge=0, description="Longest backoff.")
    max_retry_after_s: float = Field(60.0, ge=0, description="A server's Retry-After is honoured up to this.")
    retry_seed: int = Field(0, description="Seed of the backoff jitter.")
    cache_mode: Literal["read_write", "read_only", "off"] = Field("off", description="The SQLite response cache.")
    cache_path: str | None = Field(None, description="The cache file (null: the default under MEMRL_BENCH_CACHE).")
    threads: int | None = Field(None, ge=1, description="CPU threads of a local server.")
    ctx_size: int | None = Field(None, ge=1, description="The model's context, tokens per request (prompt + completion); prompts are trimmed to fit it. null: local, the model's own (GGUF), capped by memory; openai, unknown (nothing trimmed).")
    parallel: int | None = Field(None, ge=1, description="Requests a local server decodes together.")
    startup_timeout_s: float | None = Field(None, gt=0, description="Seconds a local server may take to start.")

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        return _checked_url(url)

    @field_validator("api_key_env")
    @classmethod
    def _key_env(cls, name: str) -> str:
        return _checked_key_env(name)

    @model_validator(mode="after")
    def _model_given(self) -> LLMConfig:
        if self.name != "none" and (not self.model or self.model == _MISSING):
            raise ValueError(f"llm.model is required for llm={self.name} (a catalogue name or .gguf path for local, the served model name for openai)")
        if self.name == "openai" and not self.base_url:
            raise ValueError("llm.base_url is required for llm=openai (e.g. http://127.0.0.1:8000/v1 for vLLM)")
        return self


class EnvIntentEmbedder(Settings):
    name: Literal["env_intent"]


class MiniLMEmbedder(Settings):
    name: Literal["minilm"]
    model_dir: str | None = Field(None, description="Folder with model.onnx + tokenizer.json (null: the catalogue's).")
    threads: int = Field(1, ge=1, description="onnxruntime intra-op threads.")
    batch_size: int = Field(32, ge=1, description="Texts per forward pass.")
    max_tokens: int = Field(256, ge=1, description="Longer texts are truncated.")
    cache_path: str | None = Field(None, description="SQLite file caching vectors (null: no cache).")


class OpenAIEmbedder(Settings):
    name: Literal["openai"]
    model: str = Field("text-embedding-3-small", min_length=1, description="The embeddings model.")
    base_url: str | None = Field(None, description="null: the openai package default (or $OPENAI_BASE_URL).")
    api_key_env: str = Field("OPENAI_API_KEY", description="The environment variable holding the key.")
    batch_size: int = Field(64, ge=1, description="Texts per request.")
    dim: int | None = Field(None, ge=1, description="null: learned from the first response.")
    timeout_s: float = Field(60.0, gt=0, description="Seconds per request.")
    cache_path: str | None = Field(None, description="SQLite file caching vectors (null: no cache).")

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        return _checked_url(url)

    @field_validator("api_key_env")
    @classmethod
    def _key_env(cls, name: str) -> str:
        return _checked_key_env(name)


EMBEDDERS: dict[str, type[Settings]] = {"env_intent": EnvIntentEmbedder, "minilm": MiniLMEmbedder, "openai": OpenAIEmbedder}


class ActorSettings(Settings):
    """The actor group (conf/actor/*.yaml); each actor reads its own keys."""

    kind: Literal["react", "single_turn"] | None = Field(None, description="null: the env's choice.")
    max_steps: int = Field(30, ge=1, description="Episode step limit.")
    history_turns: int = Field(10, ge=0, description="Past (action, observation) steps shown in each prompt.")
    fuzzy_cutoff: float = Field(0.75, ge=0, le=1, description="difflib similarity needed to map an action onto an admissible command.")
    fuzzy_margin: float = Field(0.1, ge=0, le=1, description="How much closer than every other command the fuzzy match must be.")
    show_admissible: bool = Field(True, description="List the env's admissible commands in the prompt.")
    prompt: Literal["harness", "memrl_alfworld"] = Field("harness", description="harness: this project's ReAct prompt; memrl_alfworld: the official MemRL ALFWorld agent's.")
    memrl_official: str | None = Field(None, description="prompt=memrl_alfworld: the official MemRL repository (null: $MEMRL_OFFICIAL_DIR, then ../shared/reference/memrl_official).")
    stop_sequences: list[str] | None = Field(["\nObservation:"], description="ReAct: sent as `stop` with every call, so that a model starting to write the env's reply ends its action (generation.stop overrides them; null: none).")
    generation: GenerationSettings = Field(default_factory=GenerationSettings, description="Overrides of the llm group's generation settings.")
    answer_constraint: Literal["none", "json_schema"] = Field(
        "none", description="Single-turn multiple choice: json_schema asks, after the free completion, for the final letter in a reply the server holds to a JSON schema (memrl_bench.core.answers), so that no reading decides it."
    )


# ---- environments ---------------------------------------------------------------------


class EnvSettings(Settings):
    """Keys every environment has: its name, world seed and the roles of its splits."""

    name: str
    seed: int = Field(0, ge=0, description="The env's own seed (its world, for the synthetic env).")
    roles: dict[Literal["train", "validation", "test"], str | list[str] | None] | None = Field(None, description="Which split plays which role (null: the env's default).")

    @field_validator("roles")
    @classmethod
    def _one_train_split(cls, roles: dict | None) -> dict | None:
        if roles is not None and not isinstance(roles.get("train"), str):
            raise ValueError(f"train must name one split (got {roles.get('train')!r})")
        return roles


class SyntheticSettings(EnvSettings):
    n_types: int = Field(8, ge=1, description="K latent task types seen in training.")
    n_ood_types: int = Field(4, ge=0, description="Extra types only in test_out_of_distribution.")
    intent_dim: int = Field(32, ge=2, description="Dimension of intent vectors.")
    intent_noise: float = Field(0.35, ge=0, description="Std of a task's intent around its type centre.")
    type_logit_range: list[float] = Field([-2.0, 0.0], min_length=2, max_length=2, description="Per-type base logit drawn uniformly from [low, high].")
    task_logit_std: float = Field(0.5, ge=0, description="Per-task spread of the base logit.")
    tasks: dict[str, int] = Field(default_factory=lambda: {"train": 200, "validation": 100, "test_in_distribution": 100, "test_out_of_distribution": 100}, description="Tasks per split.")
    quality_success: float = Field(0.8, description="Mean lesson quality of a successful episode.")
    quality_failure: float = Field(0.1, description="Mean lesson quality of a failed episode.")
    quality_std: float = Field(0.4, ge=0, description="Spread of lesson quality.")
    harmful_share: float = Field(0.1, ge=0, le=1, description="Share of lessons that are harmful.")
    harmful_early_share: float | None = Field(None, ge=0, le=1, description="Harmful share of epoch-1 lessons (null: harmful_share).")
    harmful_quality: float = Field(-1.5, description="Quality of a harmful lesson.")
    cross_type_match: float = Field(0.0, ge=0, le=1, description="Match between different training types.")
    ood_match: float = Field(0.5, ge=0, le=1, description="Match between an OOD type and its parent training type.")
    outcome_temperature: float = Field(0.0, ge=0, description="0: deterministic outcome per (task, injected set); > 0: resampled per episode.")
    reward_flip_share: float = Field(0.0, ge=0, le=1, description="Reward noise: share of training episodes whose success the method learns flipped (seeded; the logged success stays true).")
    task_types: list[int] | None = Field(None, min_length=1, description="The training types this world's train, validation and in-distribution test tasks are drawn from (null: all n_types); worlds of one seed with other type sets share their types' centres (the transfer protocol).")

    @field_validator("tasks")
    @classmethod
    def _counts(cls, tasks: dict[str, int]) -> dict[str, int]:
        negative = next((split for split, n in tasks.items() if n < 0), None)
        if negative is not None:
            raise ValueError(f"tasks.{negative} must be >= 0, got {tasks[negative]}")
        return tasks

    @field_validator("type_logit_range")
    @classmethod
    def _ordered(cls, bounds: list[float]) -> list[float]:
        if bounds[0] > bounds[1]:
            raise ValueError(f"must be [low, high] with low <= high, got {bounds}")
        return bounds

    @model_validator(mode="after")
    def _types_exist(self) -> SyntheticSettings:
        if self.task_types is not None and (len(set(self.task_types)) != len(self.task_types) or not all(0 <= t < self.n_types for t in self.task_types)):
            raise ValueError(f"env.task_types must be distinct types in 0..{self.n_types - 1} (env.n_types={self.n_types}), got {self.task_types}")
        return self


class DataEnvSettings(EnvSettings):
    data_dir: str | None = Field(None, description="The benchmark data folder (null: the env variable, then ../shared/data).")
    tasks_per_split: int | None = Field(None, ge=1, description="Quick runs: the first N tasks of each split (null: all).")


class GoldCheckedSettings(DataEnvSettings):
    exclude_gold_failures: bool = Field(True, description="Leave out tasks whose gold answer fails here.")


class SandboxLimits(GoldCheckedSettings):
    """Limits of the sandbox (memrl_bench/envs/sandbox/); below these minimums it cannot run a shell and its tools."""

    gold_workers: int = Field(2, ge=1, description="Parallel sandboxes when checking gold answers.")
    max_output_chars: int = Field(4000, ge=1, description="Output kept per command or program.")
    memory_mb: int = Field(1024, ge=64, description="Memory cap (at least 64 MiB: a shell, the check's tools and Python).")
    max_processes: int = Field(256, ge=8, description="Live process cap (at least 8: the container's own processes and a command's pipeline).")
    disk_mb: int = Field(512, ge=16, description="Size of the tmpfs holding what an episode writes (at least 16 MiB).")


class TextWorldExpressSettings(EnvSettings):
    game: str = Field("twc", min_length=1, description="The TextWorldExpress game.")
    game_params: dict[str, int | float | bool | str] = Field(default_factory=dict, description="Simulator properties of the game.")
    tasks_per_split: int = Field(50, ge=1, description="The first N seeds of each fold.")


class ALFWorldSettings(EnvSettings):
    data_dir: str | None = Field(None, description="Folder holding json_2.1.1/ (null: $ALFWORLD_DATA, then ../shared/data/alfworld).")
    cache_dir: str | None = Field(None, description="Where converted games are cached.")
    expert: bool = Field(False, description="Add the handcoded expert's next action to info.")


class LLBOSSettings(SandboxLimits):
    workdir: str = Field("/", min_length=1, description="Working directory of every command.")
    extra_hidden_paths: list[str] = Field(default_factory=list, description="Host folders shown empty inside.")
    command_timeout_s: float = Field(20.0, gt=0, description="Seconds per command.")


class LLBDBSettings(GoldCheckedSettings):
    statement_timeout_s: float = Field(5.0, gt=0, description="A statement is interrupted after this long.")
    max_shown_rows: int = Field(20, ge=1, description="Result rows shown per statement.")
    max_output_chars: int = Field(4000, ge=1, description="Cut-off of one observation.")
    max_answer_rows: int = Field(10_000, ge=1, description="Rows kept from the last query for a COMMIT answer.")
    preview_rows: int = Field(5, ge=0, description="Table rows shown in the first observation.")
    worker_memory_mb: int = Field(512, ge=64, description="Memory cap of the process that runs the SQL (envs/sqlite_worker.py).")


class BigCodeBenchSettings(SandboxLimits):
    memory_mb: int = Field(2048, ge=64, description="Memory cap of one test program (at least 64 MiB).")
    subset: Literal["stdlib", "hard", "full"] = Field("stdlib", description="Which tasks.")
    prompt: Literal["instruct", "complete"] = Field("instruct", description="A description (MemRL's choice) or a signature with docstring.")
    isolation: Literal["sandbox", "process"] = Field("sandbox", description="A container per program, or a bare subprocess.")
    timeout_s: float = Field(60.0, gt=0, description="Seconds per test program.")


class MMLUSettings(DataEnvSettings):
    subjects: list[str] | None = Field(None, description="Keep only these subjects (null: all 57).")


ENVS: dict[str, type[EnvSettings]] = {
    "synthetic": SyntheticSettings,
    "textworld_express": TextWorldExpressSettings,
    "alfworld": ALFWorldSettings,
    "llb_os": LLBOSSettings,
    "llb_db": LLBDBSettings,
    "bigcodebench": BigCodeBenchSettings,
    "mmlu": MMLUSettings,
}


_GROUPS = ("env", "method", "llm", "embedder", "protocol", "actor")


def validate_config(cfg: dict) -> None:
    """Check every group of a run's config by type and range.

    Method and protocol settings are checked by their own models when the runner builds
    them. An env this module has no model for (a plugin) checks its settings itself.
    """
    unknown = sorted(set(cfg) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise ConfigError(f"unknown config key {unknown[0]!r}; valid top-level keys: {', '.join(TOP_LEVEL_KEYS[:-1])}")
    check_finite({k: v for k, v in cfg.items() if k != "hydra"})
    validated(RunSettings, {k: v for k, v in cfg.items() if k not in (*_GROUPS, "hydra")}, "")
    for group in ("env", "method"):
        if not isinstance(cfg.get(group), dict) or not cfg[group].get("name"):
            raise ConfigError(f"{group}.name: missing (choose one with {group}=<name>)")
    env = cfg["env"]
    if env["name"] in ENVS:
        validated(ENVS[env["name"]], env, "env")
    validated(LLMConfig, cfg.get("llm") or {}, "llm")
    embedder = cfg.get("embedder") or {"name": "env_intent"}
    name = embedder.get("name") if isinstance(embedder, dict) else embedder
    if name not in EMBEDDERS:
        raise ConfigError(f"embedder.name: unknown embedder {name!r}; valid: {', '.join(EMBEDDERS)}")
    validated(EMBEDDERS[name], embedder, "embedder")
    validated(ActorSettings, cfg.get("actor") or {}, "actor")
    if not isinstance(cfg.get("protocol") or {}, dict):
        raise ConfigError(f"protocol: must be a mapping of settings (got {cfg['protocol']!r})")

