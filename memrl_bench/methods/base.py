"""The memory-method interface, and the item store most methods keep their memories in.

A method is one file in this package exposing `METHOD = <its MemoryMethod subclass>`
and one YAML in conf/method/. Contract, enforced by the runner's protocol guard:
- `retrieve` and `retrieve_batch` change no state: not memory (a fingerprint is compared
  around every evaluation phase), nor anything `learn` reads; what learn needs of a
  choice travels in `Retrieval.trace` and comes back as `Experience.retrieval`
  (tests/contracts/test_method_contract.py checks every method);
- `learn` is called only in training, once per mini-batch, after the batch is played;
- `snapshot` / `restore` round-trip the whole state, so a run resumes exactly.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from memrl_bench.core.schema import Episode, MemoryItem, MemoryStats, Retrieval, Task, Usage
from memrl_bench.core.vector_index import Hits, HNSWIndex, IndexConfig, cosines, empty_hits, exact_search, row_norms


@dataclass
class Query:
    """One retrieval request: the task, its unit-norm key, and the episode it serves."""

    task: Task
    key: np.ndarray
    episode_id: str
    phase: str


@dataclass
class Experience:
    """A played episode as `learn` sees it: the record, its task, the task's key, and the
    retrieval it was played with (None when learn replays the log after a resume, or for
    memories fed in unplayed). `graded_ending`: the final observation is the env's verdict
    (Env.grades_in_observation), which `trajectory_text(..., verdict=False)` hides."""

    episode: Episode
    task: Task
    key: np.ndarray
    retrieval: Retrieval | None = None
    graded_ending: bool = False


@dataclass
class LearnResult:
    """What `learn` spent on memory management, per episode id, and for the transcripts its LLM
    calls (memory_call records) and the operations it made without one (memory_op records)."""

    usage_by_episode: dict[str, Usage] = field(default_factory=dict)
    op_errors_by_episode: dict[str, int] = field(default_factory=dict)
    calls_by_episode: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    ops_by_episode: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def memory_op(op: str, item_id: str, **values: float | int | list[str]) -> dict[str, Any]:
    """A memory operation made without an LLM call, as the transcript keeps it: what was done
    (MemRL: "q_update" with q_before, q_after and reward; "add" with q and group) to which item."""
    return {"op": op, "item_id": item_id, **values}


def memory_call(
    purpose: str, messages: list[dict[str, str]], completion: Any = None, *, parsed: Any = None, problem: str | None = None
) -> dict[str, Any]:
    """A memory-management LLM call as the transcript keeps it: what it was for (the prompt
    template), its messages, the completion (None: the call failed) and what was read from
    it (operations, facts, a script), or the problem that kept it from being used."""
    return {
        "purpose": purpose,
        "messages": messages,
        "completion": None if completion is None else completion.text,
        "finish_reason": None if completion is None else completion.finish_reason,
        "prompt_tokens": None if completion is None else completion.usage.prompt_tokens,
        "completion_tokens": None if completion is None else completion.usage.completion_tokens,
        "parsed": parsed,
        "problem": problem,
    }


def end_reason(episode: Episode) -> str:
    """How an episode ended, in words, for the prompts that learn from it (a reflection sees why it failed)."""
    turns, info = episode.turns, episode.info or {}
    not_understood = int(info.get("invalid_actions", 0)) + int(info.get("format_failures", 0))
    unclear = f"; {not_understood} of the {len(turns)} actions were not understood or not executed" if not_understood else ""
    if episode.success:
        return "success: the task was solved"
    if episode.status == "step_limit":
        return f"step limit: all {len(turns)} steps were used without finishing the task{unclear}"
    if episode.status == "parse_error":
        return "invalid answer: no answer could be read from the reply"
    if episode.status in ("llm_error", "env_error", "context_exceeded", "env_limit"):
        return f"error: the episode was stopped by an error ({episode.error or episode.status})"
    if episode.status == "tampered":
        return "failure: the actions tampered with the task's check, so the episode counts as failed"
    last = turns[-1].observation.strip() if turns else ""
    return f"failure: the episode ended without solving the task (last observation: {last[:300]}){unclear}"


@dataclass
class MethodContext:
    """What the runner gives a method: seeds and the shared services."""

    seed: int
    embed: Callable[[list[str]], np.ndarray] | None = None  # texts -> unit-norm rows
    llm: Any = None  # a memrl_bench.llm.ChatModel for memory management (memory_llm's when set, else the acting model), or None
    run: Callable[[Awaitable[Any]], Any] | None = None  # runs a coroutine on the runner's event loop

    def rng_for(self, *keys: str) -> np.random.Generator:
        """A generator fixed by the method seed and `keys` (e.g. the episode id).

        Drawing per episode instead of from one stream keeps results independent of
        batch concurrency and identical after a resume.
        """
        digest = hashlib.sha256("\x1f".join((str(self.seed), *keys)).encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))


class MemoryMethod(ABC):
    name: ClassVar[str]
    # The model of its settings (the method group's keys but name; None: it has none); its YAML
    # conf/method/<name>.yaml starts from the model's defaults and holds what differs.
    Settings: ClassVar[type[BaseModel] | None] = None

    def __init__(self, cfg: dict[str, Any], ctx: MethodContext):
        self.cfg = dict(cfg)
        self.ctx = ctx

    @property
    def labels(self) -> tuple[str, ...]:
        """Labels for the run's manifest and report, e.g. a deviation from the method's official code."""
        return ()

    @abstractmethod
    def retrieve(self, query: Query) -> Retrieval:
        """Choose memories for one episode. Changes no state (caches derived from memory aside)."""

    def retrieve_batch(self, queries: list[Query]) -> list[Retrieval]:
        """Retrieve for every episode of a batch against one memory state; changes no state either."""
        return [self.retrieve(q) for q in queries]

    def retrieve_step(self, query: Query, observation: str, step: int) -> Retrieval:
        """Optional (retrieval_granularity=step): memories for step `step` (0-based, >= 1) of the episode
        `query` serves, chosen by the observation the step is taken in; info["cluster"] names the
        observation cluster they came from. Changes no state. A method without it refuses step granularity."""
        raise NotImplementedError(f"{self.name} has no step-level retrieval")

    @classmethod
    def retrieves_steps(cls) -> bool:
        """Whether the method implements retrieve_step."""
        return cls.retrieve_step is not MemoryMethod.retrieve_step

    @property
    def step_level(self) -> bool:
        """Whether the actor should ask retrieve_step at every step after the first (the method's retrieval_granularity)."""
        return getattr(getattr(self, "config", None), "retrieval_granularity", "task") == "step"

    @abstractmethod
    def learn(self, batch: list[Experience]) -> LearnResult:
        """Update memory from a training batch. Called only during training."""

    @abstractmethod
    def snapshot(self, path: Path) -> None:
        """Write the whole state under `path` (a directory that exists)."""

    @abstractmethod
    def restore(self, path: Path) -> None:
        """Load the state written by `snapshot`."""

    @abstractmethod
    def stats(self) -> MemoryStats:
        """Current size of memory."""

    def items(self) -> list[MemoryItem]:
        """Every stored item (for the provenance audit and analysis)."""
        return []


class StoreMethod(MemoryMethod):
    """A method whose whole state is one ItemStore (`self.store`): snapshot, restore, stats and items come from it."""

    store: ItemStore

    def snapshot(self, path: Path) -> None:
        self.store.save(path)

    def restore(self, path: Path) -> None:
        self.store.load(path)

    def stats(self) -> MemoryStats:
        return MemoryStats(items=len(self.store), bytes=self.store.nbytes(), groups=len(self.store))

    def items(self) -> list[MemoryItem]:
        return list(self.store.items)


class DocumentMethod(MemoryMethod):
    """A method whose memory is one document rebuilt from the episodes it keeps (Dynamic Cheatsheet's sheet, AWM's
    workflow set): `sources` holds those episodes, `document` the current text (None before the first build)."""

    document_file: ClassVar[str]  # the document's file in a snapshot, beside the sources' files

    def __init__(self, cfg: dict[str, Any], ctx: MethodContext):
        super().__init__(cfg, ctx)
        self.sources = ItemStore()
        self.document: MemoryItem | None = None

    def snapshot(self, path: Path) -> None:
        self.sources.save(path)
        (path / self.document_file).write_text(json.dumps(self.document.to_dict() if self.document else None, sort_keys=True))

    def restore(self, path: Path) -> None:
        self.sources.load(path)
        saved = json.loads((path / self.document_file).read_text())
        self.document = MemoryItem.from_dict(saved) if saved else None

    def stats(self) -> MemoryStats:
        document_bytes = len(self.document.content.encode()) if self.document else 0
        return MemoryStats(
            items=len(self.sources) + (self.document is not None),
            bytes=self.sources.nbytes() + document_bytes,
            groups=int(self.document is not None),
        )

    def items(self) -> list[MemoryItem]:
        return ([self.document] if self.document else []) + list(self.sources.items)


class _MirroredFields(dict):
    """An item's `fields` dict in a store with columns: setting a column field also sets the column."""

    __slots__ = ("_store", "_item_id")

    def __init__(self, store: ItemStore, item_id: str, values: dict):
        super().__init__(values)
        self._store, self._item_id = store, item_id

    def __setitem__(self, name: str, value: Any) -> None:
        super().__setitem__(name, value)
        column = self._store._columns.get(name)
        if column is not None:
            column[self._store.index_of(self._item_id)] = value

    def update(self, *args: Any, **kwargs: Any) -> None:
        for name, value in dict(*args, **kwargs).items():
            self[name] = value

    def __reduce__(self):  # copies and pickles are plain dicts, detached from the store
        return dict, (dict(self),)


class ItemStore:
    """Memory items with their key vectors in one growable float32 matrix.

    Keys are stored as given (the embedders give unit-length float32 rows); similarity
    is the float64 cosine of memrl_bench.core.vector_index, with each key's norm kept beside
    it. Nearest-key search is exact by default (a full scan)
    or approximate with `IndexConfig(kind="hnsw")`. `columns` names numeric item fields
    mirrored into arrays parallel to the items, for vectorised reads: a stored item's
    `fields` then writes these through to the arrays (`item.fields["q_value"] = q`).
    """

    def __init__(self, index: IndexConfig | None = None, columns: tuple[str, ...] = ()) -> None:
        self.index_config = index or IndexConfig()
        self.column_names = tuple(columns)
        self.items: list[MemoryItem] = []
        self._keys = np.zeros((0, 0), dtype=np.float32)
        self._norms = np.zeros(0, dtype=np.float64)  # row_norms of the keys
        self._scale = np.zeros(0, dtype=np.float32)  # 1 / norms, for the float32 screen of exact search
        self._columns = {name: np.zeros(0, dtype=np.float64) for name in self.column_names}
        self._index: dict[str, int] = {}
        self._content_bytes = 0
        self._hnsw: HNSWIndex | None = None

    def __len__(self) -> int:
        return len(self.items)

    @property
    def keys(self) -> np.ndarray:
        return self._keys[: len(self.items)]

    def add(self, item: MemoryItem, key: np.ndarray) -> None:
        self.add_many([item], key.reshape(1, -1))

    def add_many(self, items: list[MemoryItem], keys: np.ndarray) -> None:
        """Append items with their keys (one row each)."""
        keys = np.asarray(keys, dtype=np.float32).reshape(len(items), -1)
        self._append(items, keys)
        if self._hnsw is not None:
            self._hnsw.add(keys)

    def _append(self, items: list[MemoryItem], keys: np.ndarray) -> None:
        """Append items and their float32 keys to the matrix, the norms and the columns."""
        if not items:
            return
        ids = [item.id for item in items]
        repeated = next((i for i in ids if i in self._index), None)
        if repeated is None and len(set(ids)) < len(ids):
            repeated = next(i for i in ids if ids.count(i) > 1)
        if repeated is not None:
            raise ValueError(f"item id {repeated!r} is already stored")
        n, dim = len(self.items), keys.shape[1]
        if self._keys.shape[1] != dim:
            if n:
                raise ValueError(f"key dimension {dim} differs from stored {self._keys.shape[1]}")
            self._keys = np.zeros((0, dim), dtype=np.float32)
        if n + len(items) > len(self._keys):
            # Doubling; np.zeros maps untouched rows lazily, so spare capacity costs no resident memory.
            grown = np.zeros((max(64, 2 * (n + len(items))), dim), dtype=np.float32)
            grown[:n] = self._keys[:n]
            self._keys = grown
            self._norms = np.concatenate([self._norms[:n], np.zeros(len(grown) - n)])
            self._scale = np.concatenate([self._scale[:n], np.zeros(len(grown) - n, dtype=np.float32)])
            for name, values in self._columns.items():
                self._columns[name] = np.concatenate([values[:n], np.zeros(len(grown) - n)])
        self._set_keys(n, keys)
        self._set_columns(n, items)
        for position, item in enumerate(items, start=n):
            self._index[item.id] = position
            self._content_bytes += len(item.content.encode())
            if self._columns:
                item.fields = _MirroredFields(self, item.id, item.fields)
        self.items.extend(items)

    def replace(self, item: MemoryItem, key: np.ndarray | None = None) -> None:
        """Put a new version of a stored item (same id) in its place, with a new key if given."""
        i = self._index[item.id]
        self._content_bytes += len(item.content.encode()) - len(self.items[i].content.encode())
        if self._columns:
            self._set_columns(i, [item])
            item.fields = _MirroredFields(self, item.id, item.fields)
        self.items[i] = item
        if key is not None:
            self._set_keys(i, np.asarray(key, dtype=np.float32).reshape(1, -1))
            self._hnsw = None  # rebuilt from the keys when next needed

    def _set_keys(self, first: int, keys: np.ndarray) -> None:
        self._keys[first : first + len(keys)] = keys
        self._norms[first : first + len(keys)] = norms = row_norms(keys)
        self._scale[first : first + len(keys)] = 1.0 / norms

    def _set_columns(self, first: int, items: list[MemoryItem]) -> None:
        for name, values in self._columns.items():
            try:
                values[first : first + len(items)] = [item.fields[name] for item in items]
            except KeyError:
                raise KeyError(f"item field {name!r} is a column of this store but missing from an item") from None

    def get(self, item_id: str) -> MemoryItem:
        return self.items[self._index[item_id]]

    def index_of(self, item_id: str) -> int:
        return self._index[item_id]

    def __contains__(self, item_id: str) -> bool:
        return item_id in self._index

    def column(self, name: str) -> np.ndarray:
        """The values of item field `name` for every item, in item order (read-only use)."""
        return self._columns[name][: len(self.items)]

    def remove(self, item_ids: set[str]) -> None:
        keep = np.array([item.id not in item_ids for item in self.items], dtype=bool)
        items = [item for item, kept in zip(self.items, keep) if kept]
        keys = self.keys[keep]
        self.__init__(self.index_config, self.column_names)
        self._append(items, keys)

    def similarities(self, key: np.ndarray, start: int = 0) -> np.ndarray:
        """Float64 cosine of one key with every stored key from position `start` on."""
        key = np.asarray(key, dtype=np.float32).ravel()
        n = len(self.items)
        return cosines(self._keys[start:n], self._norms[start:n], key, row_norms(key)[0])

    def search(self, queries: np.ndarray, k: int, floor: float = -np.inf) -> list[Hits]:
        """Per query row: the k most similar keys with similarity >= floor, most similar first."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if not self.items:
            return [empty_hits() for _ in queries]
        graph = self._graph()
        if graph is None:
            n = len(self.items)
            return exact_search(self.keys, self._norms[:n], self._scale[:n], queries, k, floor)
        hits = []
        for query, norm, found in zip(queries, row_norms(queries), graph.search(queries, k)):
            sims = cosines(self._keys[found], self._norms[found], query, norm)
            keep = sims >= floor
            found, sims = found[keep], sims[keep]
            order = np.lexsort((found, -sims))  # ties: the earlier key first, as exact search
            hits.append(Hits(found[order], sims[order], int(keep.sum())))
        return hits

    def nbytes(self) -> int:
        """Payload size: contents plus key vectors."""
        return self._content_bytes + self.keys.nbytes

    def index_nbytes(self) -> int:
        """Extra bytes of the search index (0 for exact search, which scans the keys)."""
        graph = self._graph()
        return graph.nbytes() if graph is not None else 0

    def save(self, path: Path) -> None:
        encode = json.JSONEncoder(sort_keys=True).encode  # what json.dumps(..., sort_keys=True) builds per call
        with open(path / "items.jsonl", "w") as f:
            f.writelines(encode(item.to_dict()) + "\n" for item in self.items)
        save_array(path / "keys.npy", self.keys)
        graph = self._graph()
        if graph is not None:
            graph.save(path)

    def load(self, path: Path) -> None:
        self.__init__(self.index_config, self.column_names)
        with open(path / "items.jsonl") as f:
            items = [MemoryItem.from_dict(json.loads(line)) for line in f if line.strip()]
        keys = np.load(path / "keys.npy")
        if len(items) != len(keys):
            raise ValueError(f"{path}: {len(items)} items in items.jsonl but {len(keys)} rows in keys.npy")
        if items:
            self._append(items, keys.reshape(len(items), -1).astype(np.float32))
            if self.index_config.kind == "hnsw":
                self._hnsw = HNSWIndex.load_or_build(path, self.keys, self.index_config)

    def _graph(self) -> HNSWIndex | None:
        """The HNSW graph (hnsw stores only), built from the keys if there is none yet (first use, or after a removal or a key change)."""
        if self._hnsw is None and self.index_config.kind == "hnsw" and self.items:
            self._hnsw = HNSWIndex.build(self.keys, self.index_config)
        return self._hnsw


def save_array(path: Path, array: np.ndarray) -> None:
    """The file np.save writes, written by Python: numpy's own writer reports a full disk as a
    short write without an errno, which the CLI could not tell from other I/O errors."""
    array = np.ascontiguousarray(array)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(array))
        f.write(array.data)


ENDED_HERE = "(the episode ended here)"


def trajectory_text(episode: Episode, max_chars: int = 2000, *, verdict: bool = True) -> str:
    """An episode's actions and observations as text, cut to `max_chars` (the end kept).

    verdict=False hides the observation the env answered the final action with, when the env ended the
    episode: pass it where that observation is the env's grading (Experience.graded_ending: LLB-DB's "The
    answer is right.", the synthetic "success") and the method judges success itself (ReasoningBank, AWM,
    Dynamic Cheatsheet), which must not read it."""
    lines = [f"> {t.action}\n{t.observation}" for t in episode.turns]
    if not verdict and lines and episode.status == "ok":
        lines[-1] = f"> {episode.turns[-1].action}\n{ENDED_HERE}"
    text = "\n".join(lines)
    return text if len(text) <= max_chars else "...\n" + text[-max_chars:]


def fingerprint(method: MemoryMethod, scratch: Path) -> str:
    """sha256 of a method's snapshot: equal fingerprints mean equal memory."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    method.snapshot(scratch)
    digest = hashlib.sha256()
    for file in sorted(p for p in scratch.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(scratch)).encode())
        digest.update(file.read_bytes())
    shutil.rmtree(scratch)
    return digest.hexdigest()
