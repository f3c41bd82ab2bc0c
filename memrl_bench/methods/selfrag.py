"""Self-RAG-style retrieval the model decides on (prompted; MemRL's configuration is not in its code).

Source: Self-RAG (Asai et al., arXiv 2310.11511; AkariAsai/self-rag, README and retrieval_lm/run_short_form.py:
its modes, ndocs, threshold).
MemRL (arXiv 2601.03192) lists Self-RAG among its baselines, but neither its code
(/work/shared/reference/memrl_official) nor its readable text gives its configuration.

Followed: Self-RAG's two judgements before generation. Retrieve: the model decides whether past
experience would help this task (its adaptive mode; `mode=always_retrieve` skips the decision, as
the official mode of that name). IsREL: each of the top `top_k` stored episodes (5, Self-RAG's
`ndocs`) is judged relevant or not, and only the relevant ones are injected, most similar first.
The store, its items and learn() are RAG's (methods/rag.py): every training episode, keyed by task.

Deviations: Self-RAG's reflection tokens come from a fine-tuned LM and its adaptive mode retrieves
when the normalised probability of the Retrieve token passes a threshold (0.2); a frozen model is
asked in words instead (a Yes/No answer, no probabilities), by the memory model (memory_llm, else
the acting model). Out of scope: the trained critic and generator, IsSUP and IsUSE, and the
segment-level beam search they score. Every call is charged to the episode's Retrieval.usage and
recorded for its transcript (as MemP's avefact keywords); a judgement still unusable after one
repair counts as No (the episode gets no memory from it), and its answers are logged in the
episode's info["retrieval"].
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from typing import Literal

import numpy as np
from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.schema import Retrieval, Usage
from memrl_bench.core.vector_index import Hits
from memrl_bench.llm.settings import CompletionTokens
from memrl_bench.methods.base import Query
from memrl_bench.methods.llm_ops import MemoryCalls, OpError, require_llm
from memrl_bench.methods.rag import RAG, RAGConfig

LABEL = "Self-RAG-style (prompted; MemRL's configuration is not in its code)"
_WORD = re.compile(r"\W*([A-Za-z]+)")
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


class SelfRAGConfig(RAGConfig):
    mode: Literal["adaptive_retrieval", "always_retrieve"] = Field(
        "adaptive_retrieval",
        description="adaptive_retrieval: the model decides whether to retrieve; always_retrieve: every task does (Self-RAG's modes).",
    )
    top_k: int = Field(5, ge=1, description="Stored episodes judged for relevance (Self-RAG's ndocs; its README's commands use 5 to 10).")
    temperature: float = Field(0.0, ge=0, description="LLM temperature of the judgements (greedy, as Self-RAG's decoding).")
    max_tokens: CompletionTokens = Field(32, description="Most tokens of a Yes/No judgement.")


def yes_or_no(text: str) -> bool:
    """A judgement as real models write it (" Yes.", "no, because ...", "**NO**", "Answer: yes"): its first word
    when that is Yes or No, else the one of the two it holds; neither, or both after another first word, is an OpError."""
    first = _WORD.match(text)
    if first and first.group(1).lower() in ("yes", "no"):
        return first.group(1).lower() == "yes"
    said = {word.lower() for word in _YES_NO.findall(text)}
    if len(said) != 1:
        raise OpError("answer with one word: Yes or No")
    return said == {"yes"}


class SelfRAG(RAG):
    name = "selfrag"
    Settings = SelfRAGConfig

    config: SelfRAGConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        require_llm(ctx, self.name)

    @property
    def labels(self) -> tuple[str, ...]:
        return (LABEL,)

    def retrieve_batch(self, queries: list[Query]) -> list[Retrieval]:
        if not queries or not len(self.store):
            return [Retrieval() for _ in queries]
        found = self.store.search(np.stack([q.key for q in queries]), self.config.top_k, self.config.sim_floor)
        calls = MemoryCalls(self.ctx)

        async def all_queries():
            return await asyncio.gather(*(self._judged(q, hits, calls) for q, hits in zip(queries, found)))

        out = []
        for query, (hits, info) in zip(queries, self.ctx.run(all_queries())):
            retrieval = self._retrieval(hits)
            retrieval.usage = calls.usage.get(query.episode_id, Usage())
            retrieval.memory_calls = calls.calls.get(query.episode_id, [])
            retrieval.info = info
            out.append(retrieval)
        return out

    async def _judged(self, query: Query, hits: Hits, calls: MemoryCalls) -> tuple[Hits, dict]:
        """The hits the model keeps (none when it decides not to retrieve) and its answers, for the episode's log."""
        c = self.config
        ask = dict(as_json=False, temperature=c.temperature, max_tokens=c.max_tokens)
        task = query.task.description
        if c.mode == "adaptive_retrieval":
            prompt = prompts.render("selfrag_retrieve", task=task)
            wanted = await calls.ask(query.episode_id, "selfrag_retrieve", prompt, yes_or_no, **ask)
            if not wanted:
                return _kept(hits, []), {"retrieve": wanted, "relevant": []}
        judged = await asyncio.gather(
            *(
                calls.ask(
                    query.episode_id,
                    "selfrag_relevance",
                    prompts.render("selfrag_relevance", task=task, episode=self.store.items[p].content),
                    yes_or_no,
                    **ask,
                )
                for p in hits.positions
            )
        )
        return _kept(hits, [bool(j) for j in judged]), {"retrieve": True, "relevant": judged}


def _kept(hits: Hits, relevant: list[bool]) -> Hits:
    """The hits judged relevant, in their order; the pool size stays the search's."""
    keep = np.array(relevant, dtype=bool) if relevant else np.zeros(len(hits.positions), dtype=bool)
    return dataclasses.replace(hits, positions=hits.positions[keep], similarities=hits.similarities[keep])


METHOD = SelfRAG
