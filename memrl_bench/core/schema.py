"""The one schema of what a run writes and its readers read: episodes.jsonl, memory
snapshots, manifest.json and metrics.json.

An episode and what it holds (turn, retrieved item, usage) and a memory item are plain
dataclasses: the runner builds them on its hot path and writes them with `to_dict` (a
shallow copy, far cheaper than a pydantic dump). Readers get the same classes back,
validated by pydantic (`from_dict`, one `TypeAdapter` per class), so a file that is not a
run's fails naming the field, and no second copy of the fields exists to drift. Fields
added later have defaults older logs imply; fields a reader does not know are ignored.
The manifest and metrics.json are written once per run: pydantic models that the writer
checks what it writes against (`checked`) and readers read with. Either file can be read
without this code (pandas, jq, another language).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from memrl_bench.core.config import check_values, upgrade

Phase = Literal["train", "validation", "test", "replay"]  # replay: learned stream tasks re-tested, memory frozen
# poison: an adversarial memory fed to learn() by the poisoning experiment, never scored.
# context_exceeded: the prompt did not fit the model's context even without history (never
# a task failure of the agent: reported per method).
# env_limit: the environment stopped what the model's action started (a resource limit, or a
# crash of the worker that ran it): the episode ends there, scored as a failure, counted per method.
# tampered: the model's actions tampered with the check that decides success (a forged
# success): scored as a failure whatever the check said, the patterns found in info["tampering"].
# truncated: a single-turn completion cut at the token limit before it stated an answer
# (memrl_bench.core.answers): not read from unfinished reasoning, counted per method.
EpisodeStatus = Literal[
    "ok", "step_limit", "llm_error", "env_error", "parse_error", "context_exceeded", "poison", "env_limit", "tampered", "truncated"
]

# Parts of an episode record that describe how the run went on this machine (wall
# times, retries, cache hits) rather than what happened: the only parts allowed to
# differ between two runs of the same command.
MEASURED_KEYS = ("latency_s", "wall_time")
MEASURED_USAGE_KEYS = ("latency_s", "retries", "cache_hits")
MEASURED_TURN_KEYS = ("latency_s", "cache_hit")


def _shallow_dict(record: Any) -> dict:
    """A dataclass of plain values as a dict of its fields, in order.

    Copying a dataclass's __dict__ (or, for slots classes, reading its slots) is far
    cheaper than dataclasses.asdict, which deep-copies every value.
    """
    slots = getattr(type(record), "__slots__", None)
    if slots is not None:
        return {name: getattr(record, name) for name in slots}
    return dict(record.__dict__)


@dataclass(frozen=True)
class Task:
    """One task of an environment. `id` is stable across runs and machines."""

    id: str
    split: str
    description: str
    intent: tuple[float, ...] | None = None  # an env-supplied key vector (synthetic env)
    data: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(slots=True)
class Provenance:
    """Where a memory item came from: it must be a training episode (audited)."""

    task_id: str
    split: str
    phase: str
    epoch: int
    episode_id: str
    success: bool

    @classmethod
    def of(cls, episode: Episode) -> Provenance:
        return cls(episode.task_id, episode.split, episode.phase, episode.epoch, episode.episode_id, episode.success)

    def to_dict(self) -> dict:
        return _shallow_dict(self)


@dataclass(slots=True)
class MemoryItem:
    """One stored memory. `fields` holds method state (q_value, visits, group, ...)."""

    id: str
    content: str
    provenance: Provenance
    fields: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"id": self.id, "content": self.content, "provenance": self.provenance.to_dict(), "fields": self.fields}

    @classmethod
    def from_dict(cls, d: dict) -> MemoryItem:
        """A line of a snapshot's items.jsonl, validated (pydantic.ValidationError names the field)."""
        return _adapter(cls).validate_python(d)


@dataclass
class RetrievedItem:
    """One memory injected into a prompt, with the numbers behind its choice."""

    item_id: str
    similarity: float
    q_value: float | None = None
    score: float | None = None
    source_task_id: str = ""
    source_episode_id: str = ""
    source_epoch: int = 0
    source_success: bool | None = None
    # A step memory's step of its source episode (retrieval_granularity=step); absent for an episode's memory.
    source_step: int | None = None

    @classmethod
    def of(cls, item: MemoryItem, similarity: float, q_value: float | None = None, score: float | None = None) -> RetrievedItem:
        p = item.provenance
        step = item.fields.get("source_step")
        return cls(item.id, float(similarity), q_value, score, p.task_id, p.episode_id, p.epoch, p.success, step)

    def to_dict(self) -> dict:
        out = _shallow_dict(self)
        if out["source_step"] is None:  # written only for step memories: episode logs stay as they were
            del out["source_step"]
        return out


@dataclass
class Retrieval:
    """What a method hands the actor: chosen items, the prompt block, and the pool size."""

    items: list[RetrievedItem] = field(default_factory=list)
    prompt_block: str = ""
    candidates: int = 0  # size of the pool the choice was made from
    usage: Usage = field(default_factory=lambda: Usage())  # LLM calls the retrieval itself made (e.g. keyword extraction)
    trace: Any = None  # what the method keeps of this choice for learn() (MemRL: its phase A); handed back with the episode, never logged
    memory_calls: list[dict[str, Any]] = field(default_factory=list)  # those calls, for the transcript
    # What the retrieval saw, logged in the episode's info["retrieval"]: top_similarity (the
    # query's best cosine to any stored key, before thresholds), threshold (below it nothing is kept).
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Usage:
    """LLM calls spent on one purpose (acting, or memory management)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    cache_hits: int = 0
    failures: int = 0
    latency_s: float = 0.0  # summed over calls that reached the server (cache hits excluded)

    def add(self, other: Usage) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict:
        return _shallow_dict(self)


@dataclass
class Turn:
    action: str  # what the env executed (format_failure set: what was read, not executed)
    observation: str  # the env's answer (format_failure set: the harness's notice to the model)
    reward: float = 0.0
    raw_output: str | None = None  # the model's completion, before parsing into `action`
    latency_s: dict[str, float] | None = None  # this step's seconds: act (LLM), env (step)
    finish_reason: str | None = None  # the completion's ("length": cut at max_tokens)
    prompt_tokens: int | None = None  # of the call, as the server counted them
    completion_tokens: int | None = None
    cache_hit: bool | None = None  # the completion came from the response cache
    # The action was mapped onto an admissible command: {"raw": as parsed, "executed": the
    # command, "score": similarity, "kind": "normalised" | "fuzzy"}.
    rewrite: dict[str, Any] | None = None
    format_failure: str | None = None  # "no_action" | "truncated": nothing was executed
    # retrieval_granularity=step: the memories this step's prompt showed in place of the episode's
    # (chosen by the step's observation; its seconds are latency_s["retrieve"]). Absent otherwise.
    retrieval: StepRetrieval | None = None

    def to_dict(self) -> dict:
        out = _shallow_dict(self)
        if self.retrieval is None:  # absent at task granularity: logs and their hashes stay as they were
            del out["retrieval"]
        else:
            out["retrieval"] = self.retrieval.to_dict()
        return out


@dataclass
class StepRetrieval:
    """One step's retrieval as its turn keeps it: the items, the observation cluster they came from
    (None: the observation joins no cluster), the pool size and the characters injected."""

    items: list[RetrievedItem] = field(default_factory=list)
    cluster: int | None = None
    candidates: int = 0
    injected_chars: int = 0

    def to_dict(self) -> dict:
        return {
            "items": [r.to_dict() for r in self.items],
            "cluster": self.cluster,
            "candidates": self.candidates,
            "injected_chars": self.injected_chars,
        }


# What readers take from an episode's info as numbers (summed per run in the report's usage table) and the answer key
# (MMLU's tables): of the type the harness writes, or the line is unreadable (a count as a string, in an incomplete run's
# log, ended the report in a traceback: the twentieth probe round).
INFO_COUNTS = ("trimmed_tokens", "format_failures", "truncated_actions", "fuzzy_matched_actions")  # the report sums these


def _checked_info(info: dict[str, Any]) -> dict[str, Any]:
    for key in (*INFO_COUNTS, "invalid_actions", "normalised_actions", "max_prompt_tokens"):
        if key in info and type(info[key]) is not int:
            raise ValueError(f"info.{key} must be a whole number, not {type(info[key]).__name__}")
    if not isinstance(info.get("answer_key"), (str, type(None))):
        raise ValueError(f"info.answer_key must be text, not {type(info['answer_key']).__name__}")
    return info


EpisodeInfo = Annotated[dict[str, Any], AfterValidator(_checked_info)]


@dataclass
class Episode:
    """One played episode: everything needed to recompute every metric."""

    episode_id: str
    task_id: str
    split: str
    phase: Phase
    epoch: int  # training epoch; for evaluation, the epoch of the memory it used
    batch_index: int
    order_index: int  # position in the phase's task order
    success: bool
    reward: float
    status: EpisodeStatus
    turns: list[Turn] = field(default_factory=list)
    retrieved: list[RetrievedItem] = field(default_factory=list)
    candidates: int = 0
    injected_chars: int = 0
    act_usage: Usage = field(default_factory=Usage)
    memory_usage: Usage = field(default_factory=Usage)
    memory_op_errors: int = 0
    latency_s: dict[str, float] = field(default_factory=dict)  # retrieve, act, env, learn (amortised)
    memory_items_after: int = 0
    memory_bytes_after: int = 0
    memory_groups_after: int = 0
    sample_index: int = 0  # pass@k samples of the same task
    error: str | None = None
    info: EpisodeInfo = field(default_factory=dict)
    wall_time: float = 0.0
    # protocol.retries >= 1 (memrl_bench/protocols/retry.py): 0 for the scheduled episode, n for its n-th retry
    # (played after a failure verdict, within the same batch). Absent otherwise: logs and their hashes stay as they were.
    attempt: int | None = None

    def to_dict(self) -> dict:
        out = self._fields()
        if self.attempt is not None:
            out["attempt"] = self.attempt
        return out

    @property
    def first_attempt(self) -> bool:
        """The scheduled episode, not a retry of it (protocol.retries): what SR, SR@1, counts it."""
        return not self.attempt

    def _fields(self) -> dict:
        return {
            "episode_id": self.episode_id,
            "task_id": self.task_id,
            "split": self.split,
            "phase": self.phase,
            "epoch": self.epoch,
            "batch_index": self.batch_index,
            "order_index": self.order_index,
            "sample_index": self.sample_index,
            "success": self.success,
            "reward": self.reward,
            "status": self.status,
            "error": self.error,
            "turns": [t.to_dict() for t in self.turns],
            "retrieved": [r.to_dict() for r in self.retrieved],
            "candidates": self.candidates,
            "injected_chars": self.injected_chars,
            "act_usage": self.act_usage.to_dict(),
            "memory_usage": self.memory_usage.to_dict(),
            "memory_op_errors": self.memory_op_errors,
            "latency_s": self.latency_s,
            "memory_items_after": self.memory_items_after,
            "memory_bytes_after": self.memory_bytes_after,
            "memory_groups_after": self.memory_groups_after,
            "info": self.info,
            "wall_time": self.wall_time,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Episode:
        """A line of episodes.jsonl, validated (pydantic.ValidationError names the field)."""
        return _adapter(cls).validate_python(d)

    @property
    def phase_name(self) -> str:
        """train, validation, or a test split's name (test phases are told apart by split)."""
        return self.split if self.phase == "test" else self.phase

    @property
    def played(self) -> bool:
        """Played and scored: not a memory fed to learn() unplayed (the poisoning experiment's)."""
        return self.status != "poison"


@dataclass
class Outcome:
    """What an actor returns for one episode; the runner turns it into an Episode."""

    success: bool
    reward: float
    status: EpisodeStatus = "ok"
    turns: list[Turn] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    latency_s: dict[str, float] = field(default_factory=dict)  # act, env
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class MemoryStats:
    items: int = 0
    bytes: int = 0
    groups: int = 0


def strip_measured(record: dict) -> dict:
    """A copy of an episode record without its measured parts, for reproducibility checks."""
    out = {k: v for k, v in record.items() if k not in MEASURED_KEYS}
    if "turns" in out:
        out["turns"] = [{k: v for k, v in turn.items() if k not in MEASURED_TURN_KEYS} for turn in out["turns"]]
    for usage_key in ("act_usage", "memory_usage"):
        if usage_key in out:
            out[usage_key] = {k: v for k, v in out[usage_key].items() if k not in MEASURED_USAGE_KEYS}
    return out


@cache
def _adapter(cls: type) -> TypeAdapter:
    """The pydantic validator of a record dataclass, built on first use (not at every import)."""
    return TypeAdapter(cls)


def read_record(cls: type, data: Any) -> Any:
    """`data` (parsed JSON) as an instance of the record dataclass `cls`, validated: pydantic.ValidationError names the field."""
    return _adapter(cls).validate_python(data)


# ---- the files written once per run -------------------------------------------------------------


class RunFile(BaseModel):
    """manifest.json or metrics.json. A reader keeps fields it does not know (a newer writer's, a
    protocol's own blocks); the writer may write only what is declared here or by its protocol."""

    model_config = ConfigDict(extra="allow")

    @classmethod
    def checked(cls, data: dict[str, Any], own: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
        """`data` as the runner is about to write it, validated against this schema; `own`: the keys the
        run's protocol adds. The dict itself is what is written (its bytes are the writer's)."""
        undeclared = sorted(set(data) - set(cls.model_fields) - set(own))
        if undeclared:
            raise ValueError(
                f"{cls.__name__}: the runner writes undeclared keys {undeclared}: declare them in memrl_bench/core/schema.py (or as the "
                "protocol's)"
            )
        cls.model_validate(data)
        return data


class EnvRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    splits: dict[str, str] = Field(default_factory=dict)
    roles: dict[str, Any] = Field(default_factory=dict)
    excluded: dict[str, str] = Field(default_factory=dict)


class ManifestRecord(RunFile):
    """manifest.json (memrl_bench.runner.loop): the config, its hash, and what the run ran on."""

    config: dict[str, Any]
    config_hash: str
    git_commit: str | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    machine: dict[str, Any] = Field(default_factory=dict)
    labels: list[str] = Field(default_factory=list)
    env: EnvRecord | None = None
    split_hashes: dict[str, str] = Field(default_factory=dict)
    split_sizes: dict[str, int] = Field(default_factory=dict)
    schedule_episodes: int | None = None  # the whole schedule's episodes (a COMPLETE run without it is refused)
    manifest_sha256: str | None = None  # its digest, checked by RunFolder.read_manifest
    model: dict[str, Any] | str | None = None
    memory_model: dict[str, Any] | None = None  # the writer of memory calls, only when it is not the acting model (memory_llm)
    embedder: dict[str, Any] | str | None = None
    started: str | None = None
    transcripts_format: int = 1  # 2: each transcript record carries its episode's digest, 3: COMPLETE the file's (core.transcripts)

    @field_validator("config")
    @classmethod
    def _as_written_now(cls, config: dict[str, Any]) -> dict[str, Any]:
        """An older version's config read as this version writes it (config.upgrade); the file keeps what was written. Its
        values are what a run's config may hold (config.check_values): a list 500 deep in a manifest whose digest was made
        again ended the report in a RecursionError traceback (51b)."""
        check_values(config)
        return upgrade(config)

    @model_validator(mode="after")
    def _names_its_method(self) -> ManifestRecord:
        if not isinstance(self.config.get("method"), dict) or not self.config["method"].get("name"):
            raise ValueError("no 'method.name'")
        return self

    @property
    def method(self) -> str:
        return str(self.config["method"]["name"])

    @property
    def overrides(self) -> list[str]:
        """The command's overrides, as .hydra/overrides.yaml has them."""
        return list((self.config.get("hydra") or {}).get("overrides") or [])


PhaseEpochs = dict[str, dict[int, float]]  # phase (test: split) -> epoch -> rate
Percentiles = dict[str, dict[str, float]]  # stage -> p50, p95, n


class MetricsRecord(RunFile):
    """metrics.json: the blocks memrl_bench.core.metrics.compute writes for every run; a protocol's own
    blocks (Protocol.metrics_keys, memrl_bench/protocols) are kept as it writes them."""

    episodes: int | None = None  # played and scored
    labels: list[str] = Field(default_factory=list)
    status_counts: dict[str, int] = Field(default_factory=dict)
    success_rate: PhaseEpochs = Field(default_factory=dict)
    cumulative_success_rate: PhaseEpochs = Field(default_factory=dict)
    forgetting: dict[str, dict[str, dict[int, float | None]]] = Field(default_factory=dict)  # phase -> rate name -> epoch -> rate
    pass_at_k: dict[str, float] = Field(default_factory=dict)  # "<phase>@<k>" -> share of tasks with a success
    latency_s: Percentiles = Field(default_factory=dict)  # per episode
    step_latency_s: Percentiles = Field(default_factory=dict)  # per turn
    memory_growth: dict[int, dict[str, float]] = Field(default_factory=dict)  # epoch -> items, bytes, groups, injected_chars_mean
    usage: dict[str, dict[str, float]] = Field(default_factory=dict)  # act / memory -> Usage's fields (+ memory op_errors)
    memory_final: dict[str, Any] = Field(default_factory=dict)  # items, never_retrieved_any_phase_share, retrieval_gini
    retrieval_similarity: dict[str, dict[str, float]] | None = None  # phase -> n, quantiles, threshold, below_threshold_share
    poison: dict[str, Any] | None = None  # memories, share_of_retrievals (poison episodes logged)
    synthetic: dict[str, Any] | None = None  # spearman_q_true_utility, n_memories (the synthetic env)
    path_dependence: dict[str, Any] = Field(default_factory=dict)  # memrl_bench.core.metrics.path_dependence
    retries: dict[str, Any] | None = None  # protocol.retries >= 1: SR@1 and SR@k per phase and epoch (metrics.retry_rates)
    drift: dict[str, Any] | None = None  # the drift protocol's block (memrl_bench/protocols/drift.py), read by the report
