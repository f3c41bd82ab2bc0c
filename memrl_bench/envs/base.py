"""The environment interface: gymnasium-like, plus deterministic task lists.

An environment is one file in this package exposing `ENV = <its Env subclass>`, whose
`Settings` (a model of memrl_bench/envs/settings.py, or one of its own beside it) checks its
group, and one YAML in conf/env/ holding what differs from those settings' defaults;
memrl_bench.envs.checker.check_env validates a new one.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import zlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError

from memrl_bench.core.config import InputError, validated
from memrl_bench.core.errors import resolved
from memrl_bench.core.runfolder import CorruptRunFolderError, FileTooLargeError, UnreadableJSONError, parse_json, read_regular
from memrl_bench.core.schema import Task
from memrl_bench.envs.settings import EnvSettings


class DataMissingError(InputError, FileNotFoundError):
    """Benchmark data is not where the config says; the message says how to fetch it."""


class DataFileError(InputError, ValueError):
    """A benchmark data file cannot be used; the message names the file and what is wrong with it."""


class EnvBrokenError(RuntimeError):
    """The env's own machinery failed before the answer was run (not the task, not the answer): the episode ends as an
    env_error, and a gold check stops rather than exclude the task."""


@runtime_checkable
class NoisyRewards(Protocol):
    """An env that models reward noise (the synthetic world): learn() is told a noisy success for
    some training episodes; the log keeps the true one."""

    def learned_success(self, episode_id: str, success: bool) -> bool: ...


class Env(ABC):
    """One environment instance plays one episode at a time (reset, then step until done).

    The runner makes more instances with `spawn()` to play a batch concurrently.
    """

    name: ClassVar[str]
    # The model of its env group: its keys, their types, ranges and defaults.
    Settings: ClassVar[type[EnvSettings]] = EnvSettings
    # Labels copied into the manifest and every report row (e.g. "synthetic").
    labels: ClassVar[tuple[str, ...]] = ()
    # Which of this env's splits play which role, unless the config overrides it.
    default_roles: ClassVar[dict[str, Any]] = {
        "train": "train",
        "validation": "validation",
        "test": ["test_in_distribution", "test_out_of_distribution"],
    }
    # The actor that plays this env unless actor.kind says otherwise (a name of the
    # registry's actors): "react" (multi-turn), "single_turn", or an actor of the env's own
    # ("synthetic": the synthetic env models the agent).
    default_actor: ClassVar[str] = "react"
    # The observation answering an episode's final action is the env's verdict in words (LLB-DB's "The answer
    # is right."), not a state the agent could judge from: methods that judge success themselves do not see it.
    grades_in_observation: ClassVar[bool] = False

    def __init__(self, settings: EnvSettings | Mapping[str, Any], seed: int = 0):
        """`settings`: the env group checked by `Settings`, as the runner hands it on (validated once,
        memrl_bench.core.config.validate_config); or its keys as a mapping, checked here (missing ones
        take the model's defaults; `seed` is the world's unless they name one)."""
        if not isinstance(settings, self.Settings):
            settings = validated(self.Settings, {"name": self.name, "seed": seed, **settings}, "env")
        self.settings: Any = settings  # typed as the subclass's own Settings
        self.seed: int = settings.seed

    @abstractmethod
    def splits(self) -> dict[str, str]:
        """Split name -> how it was made (goes into the manifest)."""

    @abstractmethod
    def tasks(self, split: str) -> list[Task]:
        """The tasks of a split, in a deterministic order, with stable ids."""

    @abstractmethod
    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        """Start `task`; return the first observation and info (e.g. admissible_commands)."""

    @abstractmethod
    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        """Apply one action: (observation, reward, done, info); info["success"] once done,
        info["invalid_action"] true when the env did not understand the action (counted per episode).
        An env may end the episode with a status of its own, info["status"]: "env_limit" (a
        resource limit or a crash of what ran the action) or "tampered" (the actions forged the
        check's outcome; the patterns in info["tampering"]); such an episode scores 0."""

    def judge_at_step_limit(self) -> dict[str, Any] | None:
        """The verdict on an episode cut at the actor's step limit, as its benchmark gives one: the
        info a last step would return (success, status, tampering), or None: not judged, a failure.
        LifelongAgentBench-OS checks the machine's state whatever ended the session; most
        benchmarks score an unfinished episode 0 (the default)."""
        return None

    def instructions(self) -> str:
        """What an LLM actor is told about this environment (system prompt)."""
        return ""

    def spawn(self) -> Env:
        """Another independent instance, for concurrent episodes."""
        return type(self)(self.settings)

    def excluded(self) -> dict[str, str]:
        """Task id -> why it is left out of the task lists (e.g. its gold answer fails here:
        memrl_bench.envs.gold); recorded in the run's manifest."""
        return {}

    def close(self) -> None:  # noqa: B027 (optional hook: most envs hold nothing to release)
        """Release processes and files."""


_TASK_ID = re.compile(r"\s*-?[0-9]+\s*")  # a task id of a data file: an ASCII integer, as int() reads it


def data_dir(configured: str | None, env_var: str, shared_subdir: str, fetch_hint: str) -> Path:
    """Resolve an env's data folder: its setting `data_dir`, then `$env_var`, then ../shared/data.

    Raises DataMissingError naming the path tried and how to fetch the data.
    """
    configured = configured or os.environ.get(env_var)
    if configured:
        path = Path(configured).expanduser()
    else:
        candidates = [Path.cwd() / "../shared/data" / shared_subdir, Path(__file__).resolve().parents[3] / "shared/data" / shared_subdir]
        path = next((p for p in candidates if p.exists()), candidates[-1])
    if not path.exists():
        raise DataMissingError(
            f"data for this environment not found at {resolved(path)}; set env.data_dir or ${env_var}, or fetch it with: {fetch_hint}"
        )
    return resolved(path)


def hash_fraction(text: str) -> float:
    """A stable number in [0, 1) from a string, for splitting by a fixed hash."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / float(16**12)


class DataRecord(BaseModel):
    """One record of a benchmark data file: the fields an env reads, by type (others are ignored).

    The models only check: an env builds its tasks from the file's own values, so a valid file
    gives the tasks it gave before."""

    model_config = ConfigDict(extra="ignore", strict=True)


MAX_DATA_FILE_BYTES = 1 << 30  # a benchmark's data file, packed or not: the largest shipped is 8 MB (MMLU's test split)


def data_bytes(path: Path) -> bytes:
    """The bytes of a benchmark data file; DataFileError naming it if it is no regular file (a FIFO hung the run, a link to
    /dev/zero grew it until a MemoryError: the thirty-fifth round) or is larger than MAX_DATA_FILE_BYTES."""
    try:
        return read_regular(path, MAX_DATA_FILE_BYTES)
    except FileTooLargeError:
        raise DataFileError(f"{path} is larger than {MAX_DATA_FILE_BYTES} bytes; a benchmark's data file holds megabytes") from None
    except CorruptRunFolderError:
        raise DataFileError(
            f"{path} is not a regular file (a FIFO, a device, a folder, a file of /proc...); put the data file there"
        ) from None


def read_data_file(path: Path, model: type[DataRecord], *, by_id: bool = False, listed: bool = False) -> Any:
    """The data of a benchmark file, checked; DataFileError naming the file and what is wrong
    (not a readable gzip file, not UTF-8, empty, not JSON, not an object, keys that are not
    integers, a record lacking a field or holding a wrong type) otherwise.

    .jsonl and .jsonl.gz: a list of records, one JSON object a line, each checked by `model`.
    .json: with `by_id`, an object of records keyed by integer task ids, each checked by
    `model`; with `listed`, a list of records, each checked by `model`; else one object checked by `model`.
    """
    raw = data_bytes(path)
    if path.name.endswith(".gz"):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as unpacked:
                raw = unpacked.read(MAX_DATA_FILE_BYTES + 1)
        except (OSError, EOFError, zlib.error) as err:
            raise DataFileError(f"{path} is not a readable gzip file ({err})") from None
        if len(raw) > MAX_DATA_FILE_BYTES:
            raise DataFileError(f"{path} unpacks to more than {MAX_DATA_FILE_BYTES} bytes; a benchmark's data file holds megabytes")
    try:
        text = raw.decode()
    except UnicodeDecodeError as err:
        raise DataFileError(f"{path} is not UTF-8 text (byte {err.start}: {err.reason})") from None
    if not text.strip():
        raise DataFileError(f"{path} is empty")
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        records = [(f"line {n}", _json(path, line, f"line {n}")) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        data: Any = [value for _, value in records]
    elif listed:
        data = _json(path, text, "")
        if not isinstance(data, list):
            raise DataFileError(f"{path} must hold a JSON list, not {_kind(data)}")
        records = [(f"entry {n}", value) for n, value in enumerate(data)]
    else:
        data = _json(path, text, "")
        if not isinstance(data, dict):
            raise DataFileError(f"{path} must hold a JSON object{' of tasks keyed by id' if by_id else ''}, not {_kind(data)}")
        if by_id:
            bad = next((key for key in data if not _TASK_ID.fullmatch(key)), None)  # int() reads these ("²" is a digit to isdigit)
            if bad is not None:
                raise DataFileError(f"{path}: the task ids (the object's keys) must be integers, got {bad[:40]!r}")
        records = [(f"task {key}", value) for key, value in data.items()] if by_id else [("", data)]
    for where, value in records:
        if not isinstance(value, dict):
            raise DataFileError(f"{path}: {where or 'the file'} must be a JSON object, not {_kind(value)}")
        try:
            model.model_validate(value)
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise DataFileError(f"{path}: {where + ': ' if where else ''}{field}: {first['msg'].removeprefix('Value error, ')}") from None
    return data


def _json(path: Path, text: str, where: str) -> Any:
    """`text` parsed as JSON (runfolder.parse_json: whatever fails is malformed JSON); DataFileError naming the file and the place."""
    try:
        return parse_json(text)
    except UnreadableJSONError as err:
        raise DataFileError(f"{path}: {where or 'the file'} is not valid JSON ({err})") from None


def _kind(value: Any) -> str:
    kinds = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)
