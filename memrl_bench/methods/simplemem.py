"""A token-budgeted memory in the style of SimpleMem (arXiv 2601.02553, aiming-lab/SimpleMem):
compressed entries, chosen by relevance and packed greedily under a token budget.

What SimpleMem does, and what is kept here:
- Semantic structured compression: the LLM restates an interaction as compact,
  self-contained memory units (`lossless_restatement`). Here one training episode
  becomes one short lesson (prompt simplemem_compress, at most `max_words` words, cut to
  `max_entry_chars`). With write_with_llm=false the lesson is built without an LLM: the
  outcome and the actions taken, in order, cut to max_entry_chars.
- Recursive consolidation (merging related units into abstractions): left out; the
  official SimpleMemSystem also marks it "background evolution - future work".
- Adaptive query-aware retrieval: the official retriever mixes semantic, lexical (BM25)
  and symbolic (metadata) scores over a query-dependent depth k_dyn. Here: relevance is
  the cosine of the task key to the entry's task key (the run's embedder, as every other
  method here), the `top_k` most relevant candidates at or above sim_floor, most relevant
  first. Our choice: no lexical or symbolic layer and a fixed depth, so the comparison
  with rag isolates compression and the budget.
- The budget: SimpleMem-Cross's ContextInjector packs candidates greedily in priority
  order into a token budget and stops at the first that does not fit; so does this
  method, with the harness's token estimate (memrl_bench.methods.budget; SimpleMem-Cross
  counts words). The default budget, 550, is the tokens per query SimpleMem reports on
  LoCoMo.
An answer that stays bad after one repair writes no entry (an op error, as Mem0, MemP and
ExpeL count them).
"""

from __future__ import annotations

import asyncio

import numpy as np
from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import Settings
from memrl_bench.core.schema import Episode, MemoryItem, Provenance, Retrieval, RetrievedItem
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, Query, StoreMethod, end_reason, trajectory_text
from memrl_bench.methods.budget import fill
from memrl_bench.methods.llm_ops import MemoryCalls, require_llm


class SimpleMemConfig(Settings):
    budget_tokens: int = Field(
        550, ge=1, description="Most estimated tokens (UTF-8 bytes / 3) of the injected block (SimpleMem reports ~550 per query)."
    )
    top_k: int = Field(10, ge=1, description="Most relevant entries considered for the budget (SimpleMem-Cross's semantic top_k).")
    sim_floor: float = Field(-1.0, ge=-1.0, le=1.0, description="Minimum cosine similarity of a considered entry.")
    write_with_llm: bool = Field(True, description="Compress each episode with the LLM; false: a deterministic outcome-and-actions entry.")
    max_words: int = Field(60, ge=1, description="Words the compression prompt allows a lesson (our choice).")
    max_entry_chars: int = Field(600, ge=1, description="A lesson is cut to this many characters (a model may ignore max_words).")
    temperature: float = Field(0.0, ge=0, description="LLM temperature of the compression call.")
    max_trajectory_chars: int = Field(
        2000, ge=0, description="Trajectory text shown to the compression call is cut to this many characters."
    )


def plain_lesson(episode: Episode) -> str:
    """The lesson without an LLM: how the episode ended and the actions it took, in order."""
    return f"{'succeeded' if episode.success else 'failed'} with the actions: " + "; ".join(t.action for t in episode.turns)


class SimpleMem(StoreMethod):
    name = "simplemem"
    Settings = SimpleMemConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = SimpleMemConfig(**cfg)
        if self.config.write_with_llm:
            require_llm(ctx, self.name)
        self.store = ItemStore()

    def retrieve(self, query: Query) -> Retrieval:
        c = self.config
        if not len(self.store):
            return Retrieval()
        sims = self.store.similarities(query.key)
        pool = np.flatnonzero(sims >= c.sim_floor)
        ranked = pool[np.argsort(-sims[pool], kind="stable")[: c.top_k]]
        header = prompts.render("simplemem_memory_block", entries="")
        chosen = [int(ranked[p]) for p in fill(header, [self.store.items[i].content for i in ranked], c.budget_tokens)]
        if not chosen:
            return Retrieval(candidates=len(pool))
        block = header + "\n".join(self.store.items[i].content for i in chosen)
        return Retrieval(
            items=[RetrievedItem.of(self.store.items[i], float(sims[i])) for i in chosen], prompt_block=block, candidates=len(pool)
        )

    def learn(self, batch: list[Experience]) -> LearnResult:
        calls = MemoryCalls(self.ctx)
        if self.config.write_with_llm:

            async def compress_all():
                return await asyncio.gather(*(self._compress(exp, calls) for exp in batch))

            lessons = self.ctx.run(compress_all())
        else:
            lessons = [plain_lesson(exp.episode) for exp in batch]
        for exp, lesson in zip(batch, lessons):
            if lesson is None:
                continue
            outcome = "success" if exp.episode.success else "failure"
            content = f"- Task: {exp.task.description} ({outcome}): {lesson[: self.config.max_entry_chars]}"
            self.store.add(MemoryItem(exp.episode.episode_id, content, Provenance.of(exp.episode)), exp.key)
        return calls.result()

    async def _compress(self, exp: Experience, calls: MemoryCalls) -> str | None:
        c = self.config
        prompt = prompts.render(
            "simplemem_compress",
            max_words=c.max_words,
            task=exp.task.description,
            end_reason=end_reason(exp.episode),
            trajectory=trajectory_text(exp.episode, c.max_trajectory_chars),
        )
        return await calls.ask(
            exp.episode.episode_id,
            "simplemem_compress",
            prompt,
            lambda text: " ".join(text.split()),
            as_json=False,
            temperature=c.temperature,
        )


METHOD = SimpleMem
