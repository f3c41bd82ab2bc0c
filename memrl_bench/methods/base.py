"""The memory-method interface, and the item store most methods keep their memories in.

A method is one file in this package exposing `METHOD = <its MemoryMethod subclass>`
and one YAML in conf/method/. Contract, enforced by the runner's protocol guard:
- `retrieve` is pure: it never changes memory (a fingerprint is compared around
  every evaluation phase);
- `learn` is called only in training, once per mini-batch, after the batch is played;
- `snapshot` / `restore` round-trip the whole state, so a run resumes exactly.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, ClassVar

import numpy as np

from memrl_bench.types import Episode, MemoryItem, MemoryStats, Retrieval, Task, Usage


@dataclass
class Query:
    """One retrieval request: the task, its unit-norm key, and the episode it serves."""

    task: Task
    key: np.ndarray
    episode_id: str
    phase: str


@dataclass
class Experience:
    """A played episode as `learn` sees it: the record, its task, the task's key."""

    episode: Episode
    task: Task
    key: np.ndarray


@dataclass
class LearnResult:
    """What `learn` spent on memory management, per episode id."""

    usage_by_episode: dict[str, Usage] = field(default_factory=dict)
    op_errors_by_episode: dict[str, int] = field(default_factory=dict)


@dataclass
class MethodContext:
    """What the runner gives a method: seeds and the shared services."""

    seed: int
    embed: Callable[[list[str]], np.ndarray] | None = None  # texts -> unit-norm rows
    llm: Any = None  # a memrl_bench.llm.ChatModel for memory management, or None
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

    def __init__(self, cfg: dict[str, Any], ctx: MethodContext):
        self.cfg = dict(cfg)
        self.ctx = ctx

    @abstractmethod
    def retrieve(self, query: Query) -> Retrieval:
        """Choose memories for one episode. Must not change any state."""

    def retrieve_batch(self, queries: list[Query]) -> list[Retrieval]:
        """Retrieve for every episode of a batch against one memory state."""
        return [self.retrieve(q) for q in queries]

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


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


class ItemStore:
    """Memory items with their unit-norm key vectors in one growable float32 matrix.

    Cosine similarity of a query to every key is one matrix-vector product.
    """

    def __init__(self) -> None:
        self.items: list[MemoryItem] = []
        self._keys = np.zeros((0, 0), dtype=np.float32)
        self._index: dict[str, int] = {}
        self._content_bytes = 0

    def __len__(self) -> int:
        return len(self.items)

    @property
    def keys(self) -> np.ndarray:
        return self._keys[: len(self.items)]

    def add(self, item: MemoryItem, key: np.ndarray) -> None:
        key = unit_rows(key.reshape(1, -1))[0]
        n = len(self.items)
        if self._keys.shape[1] != key.shape[0]:
            if n:
                raise ValueError(f"key dimension {key.shape[0]} differs from stored {self._keys.shape[1]}")
            self._keys = np.zeros((64, key.shape[0]), dtype=np.float32)
        if n == self._keys.shape[0]:
            grown = np.zeros((2 * n, self._keys.shape[1]), dtype=np.float32)
            grown[:n] = self._keys
            self._keys = grown
        self._keys[n] = key
        self._index[item.id] = n
        self.items.append(item)
        self._content_bytes += len(item.content.encode())

    def replace(self, item: MemoryItem, key: np.ndarray | None = None) -> None:
        """Put a new version of a stored item (same id) in its place, with a new key if given."""
        i = self._index[item.id]
        self._content_bytes += len(item.content.encode()) - len(self.items[i].content.encode())
        self.items[i] = item
        if key is not None:
            self._keys[i] = unit_rows(key.reshape(1, -1))[0]

    def get(self, item_id: str) -> MemoryItem:
        return self.items[self._index[item_id]]

    def index_of(self, item_id: str) -> int:
        return self._index[item_id]

    def __contains__(self, item_id: str) -> bool:
        return item_id in self._index

    def remove(self, item_ids: set[str]) -> None:
        keep = [i for i, item in enumerate(self.items) if item.id not in item_ids]
        keys = self.keys[keep].copy()
        self.items = [self.items[i] for i in keep]
        self._keys = keys if len(keys) else np.zeros((0, 0), dtype=np.float32)
        self._index = {item.id: i for i, item in enumerate(self.items)}
        self._content_bytes = sum(len(item.content.encode()) for item in self.items)

    def similarities(self, key: np.ndarray) -> np.ndarray:
        """Cosine similarity of one unit-norm key to every stored key."""
        if not self.items:
            return np.zeros(0, dtype=np.float32)
        return self.keys @ key.astype(np.float32)

    def nbytes(self) -> int:
        """Payload size: contents plus key vectors."""
        return self._content_bytes + self.keys.nbytes

    def save(self, path: Path) -> None:
        with open(path / "items.jsonl", "w") as f:
            for item in self.items:
                f.write(json.dumps(item.to_dict(), sort_keys=True) + "\n")
        np.save(path / "keys.npy", self.keys)

    def load(self, path: Path) -> None:
        self.__init__()
        with open(path / "items.jsonl") as f:
            items = [MemoryItem.from_dict(json.loads(line)) for line in f if line.strip()]
        keys = np.load(path / "keys.npy").astype(np.float32)
        if len(keys) != len(items):
            raise ValueError(f"{path}: {len(items)} items but {len(keys)} keys")
        # Keys are taken as saved: normalising a unit float32 row again can move it by an ulp,
        # and a resumed run must match an uninterrupted one bit for bit.
        self._keys = keys if len(keys) else np.zeros((0, 0), dtype=np.float32)
        self.items = items
        self._index = {item.id: i for i, item in enumerate(items)}
        self._content_bytes = sum(len(item.content.encode()) for item in items)


def trajectory_text(episode: Episode, max_chars: int = 2000) -> str:
    """An episode's actions and observations as text, cut to `max_chars` (the end kept)."""
    lines = [f"> {t.action}\n{t.observation}" for t in episode.turns]
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
