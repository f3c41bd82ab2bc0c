"""RAG: every training episode is stored; the top-k most similar by task are injected.

The passive semantic retrieval that MemRL calls noisy: similarity only, no utility.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memrl_bench import prompts
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, MemoryMethod, Query, trajectory_text
from memrl_bench.types import MemoryItem, MemoryStats, Provenance, RetrievedItem, Retrieval


class RAGConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top_k: int = Field(3, ge=1, description="Stored episodes injected into the prompt.")
    sim_floor: float = Field(-1.0, ge=-1.0, le=1.0, description="Minimum cosine similarity of an injected episode.")
    max_trajectory_chars: int = Field(2000, ge=0, description="Stored trajectory text is cut to this many characters.")


class RAG(MemoryMethod):
    name = "rag"

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = RAGConfig(**cfg)
        self.store = ItemStore()

    def retrieve(self, query: Query) -> Retrieval:
        sims = self.store.similarities(query.key)
        keep = np.flatnonzero(sims >= self.config.sim_floor)
        top = keep[np.argsort(-sims[keep], kind="stable")[: self.config.top_k]]
        chosen = [RetrievedItem.of(self.store.items[i], sims[i]) for i in top]
        block = ""
        if chosen:
            block = prompts.render("rag_memory_block", episodes="\n".join(self.store.get(r.item_id).content for r in chosen))
        return Retrieval(items=chosen, prompt_block=block, candidates=len(keep))

    def learn(self, batch: list[Experience]) -> LearnResult:
        for exp in batch:
            ep = exp.episode
            content = prompts.render(
                "rag_memory_item",
                task=exp.task.description,
                outcome="success" if ep.success else "failure",
                trajectory=trajectory_text(ep, self.config.max_trajectory_chars),
            )
            self.store.add(MemoryItem(ep.episode_id, content, Provenance.of(ep)), exp.key)
        return LearnResult()

    def snapshot(self, path: Path) -> None:
        self.store.save(path)

    def restore(self, path: Path) -> None:
        self.store.load(path)

    def stats(self) -> MemoryStats:
        return MemoryStats(items=len(self.store), bytes=self.store.nbytes(), groups=len(self.store))

    def items(self) -> list[MemoryItem]:
        return list(self.store.items)


METHOD = RAG
