"""No memory: the baseline every memory method must beat."""

from __future__ import annotations

from pathlib import Path

from memrl_bench.core.schema import MemoryStats, Retrieval
from memrl_bench.methods.base import Experience, LearnResult, MemoryMethod, Query


class NoMemory(MemoryMethod):
    name = "none"

    def retrieve(self, query: Query) -> Retrieval:
        return Retrieval()

    def learn(self, batch: list[Experience]) -> LearnResult:
        return LearnResult()

    def snapshot(self, path: Path) -> None:
        (path / "items.jsonl").write_text("")

    def restore(self, path: Path) -> None:
        pass

    def stats(self) -> MemoryStats:
        return MemoryStats()


METHOD = NoMemory
