"""Full context: the naive baseline that keeps every training episode and injects the most
recent ones, as many as fit a token budget. No retrieval: the task does not choose what is
injected, only recency does.

Stored items are RAG's (task, outcome, trajectory cut to max_trajectory_chars). The prompt
block is filled from the newest episode back and stops at the first one that does not fit
(a contiguous window of recent history, as a truncated full context is); an episode larger
than the whole budget leaves the block empty. Tokens are the harness's estimate
(memrl_bench.methods.budget), so `budget_tokens` bounds the block for any model.
"""

from __future__ import annotations

from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import Settings
from memrl_bench.core.schema import Retrieval, RetrievedItem
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, Query, StoreMethod
from memrl_bench.methods.budget import fill
from memrl_bench.methods.rag import trajectory_item


class FullContextConfig(Settings):
    budget_tokens: int = Field(
        2000, ge=1, description="Most estimated tokens (UTF-8 bytes / 3) of the injected block; the newest episodes that fit are injected."
    )
    max_trajectory_chars: int = Field(2000, ge=0, description="Stored trajectory text is cut to this many characters.")


class FullContext(StoreMethod):
    name = "full_context"
    Settings = FullContextConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = FullContextConfig(**cfg)
        self.store = ItemStore()

    def retrieve(self, query: Query) -> Retrieval:
        newest_first = self.store.items[::-1]
        similarity = self.store.similarities(query.key)[::-1] if newest_first else []  # logged, never used to choose
        header = prompts.render("full_context_memory_block", episodes="")
        chosen = fill(header, [item.content for item in newest_first], self.config.budget_tokens)
        if not chosen:
            return Retrieval(candidates=len(newest_first))
        block = header + "\n".join(newest_first[p].content for p in chosen)
        return Retrieval(
            items=[RetrievedItem.of(newest_first[p], similarity[p]) for p in chosen], prompt_block=block, candidates=len(newest_first)
        )

    def learn(self, batch: list[Experience]) -> LearnResult:
        for exp in batch:  # stored as rag stores an episode; only the choice of what to inject differs
            self.store.add(trajectory_item(exp, self.config.max_trajectory_chars), exp.key)
        return LearnResult()


METHOD = FullContext
