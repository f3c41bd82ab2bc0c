"""RAG: every training episode is stored; the top-k most similar by task are injected.

The passive semantic retrieval that MemRL calls noisy: similarity only, no utility.
With retrieval_granularity=step, every executed step of a training episode is also kept in
a step library (methods/step_library.py, after SLEA-RL) and each step after the first is shown
its cluster's steps most similar to its observation.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.schema import MemoryItem, MemoryStats, Provenance, Retrieval, RetrievedItem
from memrl_bench.core.vector_index import Hits, IndexConfig
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, Query, StoreMethod, trajectory_text
from memrl_bench.methods.step_library import StepLibrary, StepSettings


class RAGConfig(StepSettings):
    top_k: int = Field(3, ge=1, description="Stored episodes injected into the prompt.")
    sim_floor: float = Field(-1.0, ge=-1.0, le=1.0, description="Minimum cosine similarity of an injected episode.")
    max_trajectory_chars: int = Field(2000, ge=0, description="Stored trajectory text is cut to this many characters.")
    index: IndexConfig = Field(
        default_factory=IndexConfig,
        description="Search over stored episodes: exact (a full scan) or hnsw (approximate, for large memories).",
    )


class RAG(StoreMethod):
    name = "rag"
    Settings = RAGConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = self.Settings(**cfg)  # a subclass's own settings (selfrag's), RAG's keys among them
        self.store = ItemStore(index=self.config.index)
        self.steps = StepLibrary(self.config)

    def retrieve(self, query: Query) -> Retrieval:
        return self.retrieve_batch([query])[0]

    def retrieve_batch(self, queries: list[Query]) -> list[Retrieval]:
        if not queries:
            return []
        found = self.store.search(np.stack([q.key for q in queries]), self.config.top_k, self.config.sim_floor)
        return [self._retrieval(hits) for hits in found]

    def _retrieval(self, hits: Hits) -> Retrieval:
        chosen = [RetrievedItem.of(self.store.items[p], s) for p, s in zip(hits.positions, hits.similarities)]
        block = ""
        if chosen:
            block = prompts.render("rag_memory_block", episodes="\n".join(self.store.items[p].content for p in hits.positions))
        return Retrieval(items=chosen, prompt_block=block, candidates=hits.candidates)

    def retrieve_step(self, query: Query, observation: str, step: int) -> Retrieval:
        return self.steps.retrieve(observation, rank_by="similarity")

    def learn(self, batch: list[Experience]) -> LearnResult:
        for exp in batch:
            self.store.add(trajectory_item(exp, self.config.max_trajectory_chars), exp.key)
            if self.step_level:
                self.steps.add(exp.episode)
        return LearnResult()

    # The step library is written only at step granularity, so task granularity's snapshots are what they were.
    def snapshot(self, path) -> None:
        super().snapshot(path)
        if self.step_level:
            self.steps.save(path)

    def restore(self, path) -> None:
        super().restore(path)
        self.steps.load(path)

    def stats(self) -> MemoryStats:
        stats = super().stats()
        return MemoryStats(
            items=stats.items + len(self.steps),
            bytes=stats.bytes + sum(len(i.content.encode()) for i in self.steps.items),
            groups=stats.groups,
        )

    def items(self) -> list[MemoryItem]:
        return super().items() + self.steps.items


def trajectory_item(exp: Experience, max_trajectory_chars: int) -> MemoryItem:
    """An episode stored whole (task, outcome, trajectory), as rag and full_context keep it."""
    ep = exp.episode
    content = prompts.render(
        "rag_memory_item",
        task=exp.task.description,
        outcome="success" if ep.success else "failure",
        trajectory=trajectory_text(ep, max_trajectory_chars),
    )
    return MemoryItem(ep.episode_id, content, Provenance.of(ep))


METHOD = RAG
