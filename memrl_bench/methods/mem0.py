"""Mem0 (arXiv 2504.19413): an LLM extracts facts and keeps a fact memory with
ADD / UPDATE / DELETE / NONE operations.

After each training episode, in batch order (each update sees the memory the one
before left):
  Extraction: the LLM reads the task, the trajectory and the outcome and returns the
              salient facts and lessons as {"facts": [...]}.
  Update:     for each fact, the s most similar stored memories (cosine of
              embeddings); their union, deduplicated, is shown to the LLM with ids
              mapped to "0", "1", ... (as the official code does, so an id cannot be
              invented); one call assigns ADD, UPDATE, DELETE or NONE to the facts,
              and the whole list is applied if it is valid (else repaired once, else
              skipped and counted).
For acting, the top_k memories most similar to the task go into the prompt.

Keys: with a text embedder (ctx.embed) a memory's key is its text's embedding. On the
synthetic env there is no text embedder, and a memory's key is the key of the episode
it came from (the task's intent vector), so "similar memories" means memories from
similar tasks.

Provenance: an ADD gets the episode's provenance; an UPDATE keeps the item's original
provenance and appends the episode to fields["updated_by"]; every applied operation
is logged (episode, event, item) in the state's history, like the library's history
store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import Settings
from memrl_bench.core.schema import MemoryItem, MemoryStats, Provenance, Retrieval, RetrievedItem
from memrl_bench.core.vector_index import unit_rows
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, MemoryMethod, Query, end_reason, trajectory_text
from memrl_bench.methods.llm_ops import MemoryCalls, operation_list, require_llm, small_ids, text_list

EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")
Operation = tuple[str, str | None, str]  # event, stored id (UPDATE / DELETE), text (ADD / UPDATE)


class Mem0Config(Settings):
    top_k: int = Field(10, ge=1, description="Memories injected into the acting prompt, the most similar to the task.")
    s: int = Field(
        10, ge=1, description="Stored memories retrieved per new fact for the update decision (paper: 10; the library searches 5)."
    )
    temperature: float = Field(0.0, ge=0, description="LLM temperature of extraction and update (paper: 0).")
    max_trajectory_chars: int = Field(
        2000, ge=0, description="Trajectory text shown to the extraction call is cut to this many characters."
    )


def operations(answer: Any, shown: dict[str, str]) -> list[Operation]:
    """The update call's operation list, checked whole: any bad entry rejects all of it."""
    return operation_list(
        answer,
        shown,
        list_key="memory",
        kind_key="event",
        text_key="text",
        kinds=EVENTS,
        with_id={"UPDATE", "DELETE"},
        with_text={"ADD", "UPDATE"},
    )


class Mem0(MemoryMethod):
    name = "mem0"
    Settings = Mem0Config

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = Mem0Config(**cfg)
        require_llm(ctx, self.name)
        self.store = ItemStore()
        self.next_id = 0
        self.history: list[dict[str, str | None]] = []

    # ---- retrieval -------------------------------------------------------------
    def retrieve(self, query: Query) -> Retrieval:
        sims = self.store.similarities(query.key)
        top = np.argsort(-sims, kind="stable")[: self.config.top_k]
        chosen = [RetrievedItem.of(self.store.items[i], sims[i]) for i in top]
        block = ""
        if chosen:
            block = prompts.render(
                "mem0_memory_block", memories="\n".join(f"- {self.store.get(r.item_id).content}" for r in chosen)
            ).strip()
        return Retrieval(items=chosen, prompt_block=block, candidates=len(self.store))

    # ---- learning --------------------------------------------------------------
    def learn(self, batch: list[Experience]) -> LearnResult:
        calls = MemoryCalls(self.ctx)
        for exp in batch:
            self._learn_one(exp, calls)
        return calls.result()

    def _keys(self, texts: list[str], exp: Experience) -> np.ndarray:
        """Keys of memory texts: their embeddings, or the episode's key without a text embedder."""
        if self.ctx.embed is None or not texts:
            return np.repeat(exp.key.reshape(1, -1), len(texts), axis=0)
        return unit_rows(self.ctx.embed(texts))

    def _learn_one(self, exp: Experience, calls: MemoryCalls) -> None:
        c, ep = self.config, exp.episode
        extraction = prompts.render(
            "mem0_extract",
            task=exp.task.description,
            outcome=end_reason(ep),
            trajectory=trajectory_text(ep, c.max_trajectory_chars),
        )
        facts = calls.ask_now(
            ep.episode_id, "mem0_extract", extraction, lambda answer: text_list(answer, "facts"), temperature=c.temperature
        )
        if not facts:
            return
        similar: list[str] = []
        for key in self._keys(facts, exp):
            sims = self.store.similarities(key)
            for i in np.argsort(-sims, kind="stable")[: c.s]:
                if self.store.items[i].id not in similar:
                    similar.append(self.store.items[i].id)
        shown = small_ids(similar)
        memories = (
            json.dumps([{"id": small, "text": self.store.get(real).content} for small, real in shown.items()], indent=1)
            if shown
            else "(memory is empty)"
        )
        update = prompts.render("mem0_update", memories=memories, facts=json.dumps(facts, indent=1))
        ops = calls.ask_now(ep.episode_id, "mem0_update", update, lambda answer: operations(answer, shown), temperature=c.temperature)
        if ops is not None:
            self._apply(ops, exp)

    def _apply(self, ops: list[Operation], exp: Experience) -> None:
        ep = exp.episode
        keys = iter(self._keys([text for event, _, text in ops if event in ("ADD", "UPDATE")], exp))
        for event, item_id, text in ops:
            if event == "ADD":
                item_id = f"mem-{self.next_id}"
                self.next_id += 1
                self.store.add(MemoryItem(item_id, text, Provenance.of(ep), {"updated_by": []}), next(keys))
            elif event == "UPDATE":
                old = self.store.get(item_id)
                fields = {**old.fields, "updated_by": [*old.fields["updated_by"], ep.episode_id]}
                self.store.replace(MemoryItem(old.id, text, old.provenance, fields), next(keys))
            elif event == "DELETE":
                self.store.remove({item_id})
            self.history.append({"episode_id": ep.episode_id, "event": event, "item_id": item_id})

    # ---- state -----------------------------------------------------------------
    def snapshot(self, path: Path) -> None:
        self.store.save(path)
        (path / "mem0_state.json").write_text(json.dumps({"next_id": self.next_id, "history": self.history}, sort_keys=True))

    def restore(self, path: Path) -> None:
        self.store.load(path)
        state = json.loads((path / "mem0_state.json").read_text())
        self.next_id, self.history = state["next_id"], state["history"]

    def stats(self) -> MemoryStats:
        return MemoryStats(items=len(self.store), bytes=self.store.nbytes(), groups=len(self.store))

    def items(self) -> list[MemoryItem]:
        return list(self.store.items)


METHOD = Mem0
