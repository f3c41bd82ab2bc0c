"""MemP (arXiv 2508.06433): procedural memory, built, retrieved and updated by the
strategies the paper compares, with the official code's numbers (zjunlp/MemP,
ProcedureMem/memory.py).

Build (one memory per training episode kept):
  trajectory:         the trajectory, stored verbatim;
  script:             the LLM distils the trajectory into a short workflow of its
                      critical steps;
  proceduralization:  the script plus the trajectory (the paper's best).
Retrieve (top_k = 10):
  query:    cosine similarity of the task's key to the memory's task key, memories
            below sim_floor (0.5, official) left out;
  avefact:  the LLM extracts keywords of the task (at learn time for a memory, at
            retrieval for a query); a memory's score is the mean, over the query's
            keywords, of the best cosine between that keyword and any of the
            memory's keywords:  score(m) = mean_i max_j cos(q_i, k_mj).  The official
            code averages cosines of facts under the same key of a fixed schema;
            free-text keywords have no shared keys, so each query keyword is matched
            to its nearest memory keyword. No floor (as official). Needs a text
            embedder. A query whose keyword extraction fails falls back to its task
            description as its one keyword;
  random:   top_k memories drawn uniformly (per episode, from the method seed).
Update (after each batch):
  vanilla:     every episode is written;
  validation:  successes only;
  adjustment:  successes are written; on a failure, the LLM analyses why and
               rewrites in place the workflow of the first memory the episode was
               given (the official code adjusts the top retrieved one).
As in the official code, a task already in memory is not written again
(one_memory_per_task), and before writing, every memory used (injected) at least
discard_min_uses times with a success rate below discard_success_rate is deleted
(3 and 0.5). The official code counts a use for the top retrieved memory only; here
every injected memory counts as used.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import ConfigError, Settings
from memrl_bench.core.schema import MemoryItem, MemoryStats, Provenance, Retrieval, RetrievedItem, Usage
from memrl_bench.core.vector_index import unit_rows
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, MemoryMethod, Query, trajectory_text
from memrl_bench.methods.llm_ops import MemoryCalls, OpError, non_empty_text, require_llm, text_list


class MemPConfig(Settings):
    build: Literal["trajectory", "script", "proceduralization"] = Field(
        "proceduralization", description="What a memory holds: the trajectory, an LLM-distilled script, or both (paper's best)."
    )
    retrieve: Literal["query", "avefact", "random"] = Field(
        "query", description="Retrieval key: task embedding, LLM-extracted task keywords (needs a text embedder), or random."
    )
    update: Literal["vanilla", "validation", "adjustment"] = Field(
        "adjustment",
        description="Write every episode, successes only, or successes plus in-place rewrites of workflows that failed (paper's best).",
    )
    top_k: int = Field(10, ge=1, description="Memories injected into the prompt (official retrieve_num 10).")
    sim_floor: float = Field(
        0.5, ge=-1, le=1, description="retrieve=query: minimum cosine similarity of an injected memory (official 0.5)."
    )
    discard_min_uses: int = Field(3, ge=1, description="A memory is judged for discarding once used this many times (official 3).")
    discard_success_rate: float = Field(
        0.5, ge=0, le=1, description="A judged memory whose uses succeeded less often than this is deleted (official 0.5)."
    )
    one_memory_per_task: bool = Field(True, description="Do not write a task that already has a memory (official).")
    temperature: float = Field(0.2, ge=0, description="LLM temperature of scripts and keywords (official 0.2).")
    adjust_temperature: float = Field(1.0, ge=0, description="LLM temperature of workflow adjustments (official 1.0).")
    max_keywords: int = Field(8, ge=1, description="retrieve=avefact: keywords kept per task.")
    max_trajectory_chars: int = Field(2000, ge=0, description="Trajectory text is cut to this many characters.")


def _adjusted_workflow(answer: Any) -> str:
    if not isinstance(answer, dict):
        raise OpError('expected a JSON object with "analysis" and "workflow"')
    return non_empty_text(answer.get("workflow"), '"workflow"')


class MemP(MemoryMethod):
    name = "memp"
    Settings = MemPConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = MemPConfig(**cfg)
        require_llm(ctx, self.name)
        if self.config.retrieve == "avefact" and ctx.embed is None:
            raise ConfigError(
                "method.retrieve=avefact compares keyword embeddings and needs a text embedder: set embedder=minilm (or use retrieve=query)"
            )
        self.store = ItemStore()
        self.keywords = ItemStore()  # one row per keyword of a memory (retrieve=avefact); fields["memory"] names it

    # ---- retrieval -------------------------------------------------------------
    def retrieve(self, query: Query) -> Retrieval:
        return self.retrieve_batch([query])[0]

    def retrieve_batch(self, queries: list[Query]) -> list[Retrieval]:
        if not queries or not len(self.store):
            return [Retrieval() for _ in queries]
        if self.config.retrieve == "avefact":
            return self._retrieve_avefact(queries)
        return [self._retrieve_by_key(q) for q in queries]

    def _retrieve_by_key(self, query: Query) -> Retrieval:
        c = self.config
        sims = self.store.similarities(query.key)
        if c.retrieve == "random":
            pool = np.arange(len(self.store))
            top = self.ctx.rng_for("memp-random", query.episode_id).choice(pool, size=min(c.top_k, len(pool)), replace=False)
        else:
            pool = np.flatnonzero(sims >= c.sim_floor)
            top = pool[np.argsort(-sims[pool], kind="stable")[: c.top_k]]
        return self._retrieval([(int(i), float(sims[i])) for i in top], len(pool))

    def _retrieve_avefact(self, queries: list[Query]) -> list[Retrieval]:
        calls = MemoryCalls(self.ctx)

        async def all_keywords():
            return await asyncio.gather(*(self._task_keywords(q.episode_id, q.task.description, calls) for q in queries))

        owners = np.array([self.store.index_of(k.fields["memory"]) for k in self.keywords.items])
        out = []
        for query, keywords in zip(queries, self.ctx.run(all_keywords())):
            scores = self.avefact_scores(unit_rows(self.ctx.embed(keywords or [query.task.description])), owners)
            top = np.argsort(-scores, kind="stable")[: self.config.top_k]
            retrieval = self._retrieval([(int(i), float(scores[i])) for i in top], len(self.store))
            retrieval.usage = calls.usage.get(query.episode_id, Usage())
            retrieval.memory_calls = calls.calls.get(query.episode_id, [])
            out.append(retrieval)
        return out

    def avefact_scores(self, query_keywords: np.ndarray, owners: np.ndarray) -> np.ndarray:
        """score(m) = mean over query keywords i of max over m's keywords j of cos(q_i, k_mj)."""
        best = np.full((len(self.store), len(query_keywords)), -1.0)
        np.maximum.at(best, owners, self.keywords.keys @ query_keywords.T.astype(np.float32))
        return best.mean(axis=1)

    def _retrieval(self, chosen: list[tuple[int, float]], candidates: int) -> Retrieval:
        items = [RetrievedItem.of(self.store.items[i], sim) for i, sim in chosen]
        block = ""
        if items:
            block = prompts.render("memp_memory_block", items="\n\n".join(self.store.get(r.item_id).content for r in items)).strip()
        return Retrieval(items=items, prompt_block=block, candidates=candidates)

    # ---- learning --------------------------------------------------------------
    def learn(self, batch: list[Experience]) -> LearnResult:
        c = self.config
        calls = MemoryCalls(self.ctx)
        for exp in batch:
            for used in exp.episode.retrieved:
                if used.item_id in self.store:
                    fields = self.store.get(used.item_id).fields
                    fields["uses"] += 1
                    fields["successes"] += int(exp.episode.success)
        self._discard()

        known_tasks = {item.provenance.task_id for item in self.store.items}
        to_write = []
        for exp in batch:
            if (c.update != "vanilla" and not exp.episode.success) or (c.one_memory_per_task and exp.task.id in known_tasks):
                continue
            known_tasks.add(exp.task.id)
            to_write.append(exp)

        async def build_all():
            return await asyncio.gather(*(self._build(exp, calls) for exp in to_write))

        for exp, fields in zip(to_write, self.ctx.run(build_all())):
            if fields is not None:
                self._write(exp, fields)
        if c.update == "adjustment":
            for exp in batch:
                if not exp.episode.success and exp.episode.retrieved and exp.episode.retrieved[0].item_id in self.store:
                    self._adjust(exp, self.store.get(exp.episode.retrieved[0].item_id), calls)
        return calls.result()

    def _discard(self) -> None:
        c = self.config
        failing = {
            item.id
            for item in self.store.items
            if item.fields["uses"] >= c.discard_min_uses and item.fields["successes"] / item.fields["uses"] < c.discard_success_rate
        }
        if failing:
            self.store.remove(failing)
            self.keywords.remove({k.id for k in self.keywords.items if k.fields["memory"] in failing})

    async def _task_keywords(self, episode_id: str, task: str, calls: MemoryCalls) -> list[str] | None:
        def validate(answer: Any) -> list[str]:
            keywords = text_list(answer, "keywords")
            if not keywords:
                raise OpError('"keywords" is empty; give at least one keyword')
            return keywords[: self.config.max_keywords]

        return await calls.ask(
            episode_id, "memp_keywords", prompts.render("memp_keywords", task=task), validate, temperature=self.config.temperature
        )

    async def _build(self, exp: Experience, calls: MemoryCalls) -> dict[str, Any] | None:
        """A new memory's fields, or None if an LLM step of the build failed (counted)."""
        c, ep = self.config, exp.episode
        trajectory = trajectory_text(ep, c.max_trajectory_chars)
        fields: dict[str, Any] = {
            "task": exp.task.description,
            "script": None,
            "trajectory": trajectory if c.build != "script" else None,
            "keywords": [],
            "uses": 0,
            "successes": 0,
            "adjusted_by": [],
        }
        if c.build != "trajectory":
            prompt = prompts.render("memp_script", task=exp.task.description, trajectory=trajectory)
            fields["script"] = await calls.ask(
                ep.episode_id, "memp_script", prompt, lambda text: text, as_json=False, temperature=c.temperature
            )
            if fields["script"] is None:
                return None
        if c.retrieve == "avefact":
            fields["keywords"] = await self._task_keywords(ep.episode_id, exp.task.description, calls)
            if fields["keywords"] is None:
                return None
        return fields

    @staticmethod
    def _content(fields: dict[str, Any]) -> str:
        sections = []
        if fields["script"] is not None:
            sections.append(prompts.render("memp_workflow_section", workflow=fields["script"]).strip())
        if fields["trajectory"] is not None:
            sections.append(prompts.render("memp_trajectory_section", trajectory=fields["trajectory"]).strip())
        return prompts.render("memp_item", task=fields["task"], sections="\n".join(sections)).strip()

    def _write(self, exp: Experience, fields: dict[str, Any]) -> None:
        ep = exp.episode
        self.store.add(MemoryItem(ep.episode_id, self._content(fields), Provenance.of(ep), fields), exp.key)
        if fields["keywords"]:
            for j, (keyword, key) in enumerate(zip(fields["keywords"], unit_rows(self.ctx.embed(fields["keywords"])))):
                self.keywords.add(MemoryItem(f"{ep.episode_id}#{j}", keyword, Provenance.of(ep), {"memory": ep.episode_id}), key)

    def _adjust(self, exp: Experience, memory: MemoryItem, calls: MemoryCalls) -> None:
        """Rewrite the memory's workflow (its script, or its trajectory when it has none) from the failure."""
        c, ep = self.config, exp.episode
        part = "script" if memory.fields["script"] is not None else "trajectory"
        prompt = prompts.render(
            "memp_adjust", workflow=memory.fields[part], task=exp.task.description, trajectory=trajectory_text(ep, c.max_trajectory_chars)
        )
        workflow = calls.ask_now(ep.episode_id, "memp_adjust", prompt, _adjusted_workflow, temperature=c.adjust_temperature)
        if workflow is None:
            return
        fields = {**memory.fields, part: workflow, "adjusted_by": [*memory.fields["adjusted_by"], ep.episode_id]}
        self.store.replace(MemoryItem(memory.id, self._content(fields), memory.provenance, fields))

    # ---- state -----------------------------------------------------------------
    def snapshot(self, path: Path) -> None:
        self.store.save(path)
        (path / "keywords").mkdir(exist_ok=True)
        self.keywords.save(path / "keywords")

    def restore(self, path: Path) -> None:
        self.store.load(path)
        self.keywords.load(path / "keywords")

    def stats(self) -> MemoryStats:
        return MemoryStats(items=len(self.store), bytes=self.store.nbytes() + self.keywords.nbytes(), groups=len(self.store))

    def items(self) -> list[MemoryItem]:
        return list(self.store.items)


METHOD = MemP
