"""ReasoningBank (arXiv 2509.25140): memory items distilled from the agent's own successes and
failures, as judged by the model itself; no ground-truth label at write time.

Source: google-research/reasoning-bank @ ed80611788292ea739f1effd31f16c53823b8a0d, WebArena/
(pipeline_memory.py, run.py, memory_management.py, induce_memory.py, prompts/memory_instruction.py,
autoeval/). Prompts are ours, written after the code's intents.

Followed: after each training episode the model judges its own trajectory (LLM-as-judge, the
code's default `autoeval`; `judge: ground_truth` is the code's `gt` option), then one extraction
call (temperature 1.0, official) with the success prompt (why it worked -> strategies) or the
failure prompt (why it failed -> lessons and pitfalls), the judge's reasoning appended; at most 3
items of title, one-sentence description and 1-3 sentence content, stored as they come (no
consolidation, dedup or deletion, as the code). Retrieval: the task's key against the keys of past
tasks, the n = 1 most similar past episode, all its items injected (top_n, official 1).
With `judge: llm` learn never reads the episode's success or reward: what is written (content,
fields, keys) is the same whichever outcome the environment gave; each item's fields keep the
judge's verdict (`judged_success`) and reasoning, its provenance the real outcome, so the report
can measure the judge's accuracy and the share of items written from a false success. Where the env
answers the final action with its verdict in words (Env.grades_in_observation: LLB-DB, MMLU, the
synthetic env), the judge and the extractor see "(the episode ended here)" in its place.
Deviations: the judge and the extraction see the harness's trajectory text (actions and
observations, cut to max_trajectory_chars) where the code shows think/action steps (and the judge
the last page states); the answer is JSON, not Markdown blocks; the key is the run's task key (its
embedder), not gemini-embedding-001 with an instruction prefix; the judge's temperature (0) is ours
(NOT FOUND in the code read). Out of scope: MaTTS (parallel / sequential test-time scaling).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import numpy as np
from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import Settings
from memrl_bench.core.schema import MemoryItem, MemoryStats, Provenance, Retrieval, RetrievedItem
from memrl_bench.llm.settings import CompletionTokens
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, Query, StoreMethod, trajectory_text
from memrl_bench.methods.llm_ops import MemoryCalls, OpError, call_settings, judge_episode, non_empty_text, require_llm


class ReasoningBankConfig(Settings):
    judge: Literal["llm", "ground_truth"] = Field(
        "llm", description="Success signal at write time: the model's own judgement (official autoeval) or the env's reward (code's gt)."
    )
    top_n: int = Field(1, ge=1, description="Most similar past episodes whose items are all injected (official n = 1).")
    max_items: int = Field(3, ge=1, description="Memory items kept per episode (official: at most 3).")
    extract_temperature: float = Field(1.0, ge=0, description="LLM temperature of the extraction call (official 1.0).")
    judge_temperature: float = Field(0.0, ge=0, description="LLM temperature of the judge (ours; not found in the code).")
    max_tokens: CompletionTokens | None = Field(
        None,
        description="Completion tokens of a judge or extraction call; None: the LLM's max_tokens (not found in the code).",
    )
    max_trajectory_chars: int = Field(2000, ge=0, description="Trajectory text shown to the judge and the extractor is cut to this.")


def memory_items(answer: Any, limit: int) -> list[dict[str, str]]:
    """The extraction's items, the first `limit` kept: each needs a title and a content; a missing description is empty."""
    if not isinstance(answer, dict) or not isinstance(answer.get("memory_items"), list):
        raise OpError('expected a JSON object with a list under "memory_items"')
    items = []
    for n, entry in enumerate(answer["memory_items"][:limit]):
        if not isinstance(entry, dict):
            raise OpError(f'entry {n} of "memory_items" is not a JSON object')
        description = entry.get("description")
        items.append(
            {
                "title": non_empty_text(entry.get("title"), f'entry {n}: "title"'),
                "description": description.strip() if isinstance(description, str) else "",
                "content": non_empty_text(entry.get("content"), f'entry {n}: "content"'),
            }
        )
    return items


class ReasoningBank(StoreMethod):
    name = "reasoningbank"
    Settings = ReasoningBankConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = ReasoningBankConfig(**cfg)
        require_llm(ctx, self.name)
        self.store = ItemStore()  # one row per memory item, keyed by its episode's task; fields["episode"] groups them

    @property
    def labels(self) -> tuple[str, ...]:
        if self.config.judge == "ground_truth":
            return ("reasoningbank: success judged from the env's reward (the code's gt option)",)
        return ()

    # ---- retrieval -------------------------------------------------------------
    def retrieve(self, query: Query) -> Retrieval:
        if not len(self.store):
            return Retrieval()
        sims = self.store.similarities(query.key)
        episodes = [item.fields["episode"] for item in self.store.items]
        chosen: list[str] = []
        for i in np.argsort(-sims, kind="stable"):  # an episode's items share its key, so its first item ranks it
            if episodes[i] not in chosen:
                chosen.append(episodes[i])
                if len(chosen) == self.config.top_n:
                    break
        items = [RetrievedItem.of(item, float(sims[i])) for i, item in enumerate(self.store.items) if item.fields["episode"] in chosen]
        items.sort(key=lambda r: chosen.index(self.store.get(r.item_id).fields["episode"]))
        block = prompts.render("reasoningbank_memory_block", items="\n\n".join(self.store.get(r.item_id).content for r in items)).strip()
        return Retrieval(items=items, prompt_block=block, candidates=len(set(episodes)))

    # ---- learning --------------------------------------------------------------
    def learn(self, batch: list[Experience]) -> LearnResult:
        calls = MemoryCalls(self.ctx)

        async def distil_all():
            return await asyncio.gather(*(self._distil(exp, calls) for exp in batch))

        for exp, distilled in zip(batch, self.ctx.run(distil_all())):
            if distilled is not None:
                self._write(exp, *distilled)
        return calls.result()

    async def _distil(self, exp: Experience, calls: MemoryCalls) -> tuple[bool, str, list[dict[str, str]]] | None:
        """(judged success, the judge's reasoning, the extracted items), or None if a call gave nothing usable (counted)."""
        c, ep = self.config, exp.episode
        trajectory = trajectory_text(ep, c.max_trajectory_chars, verdict=c.judge == "ground_truth" or not exp.graded_ending)
        if c.judge == "ground_truth":
            verdict: tuple[bool, str] | None = (ep.success, "")
        else:
            overrides = call_settings(c.judge_temperature, c.max_tokens)
            verdict = await judge_episode(calls, ep.episode_id, exp.task.description, trajectory, **overrides)
        if verdict is None:
            return None
        succeeded, thoughts = verdict
        template = "reasoningbank_success" if succeeded else "reasoningbank_failure"
        outcome = "succeeded" if succeeded else "failed"
        why = prompts.render("reasoningbank_judgement", outcome=outcome, thoughts=thoughts) if thoughts else ""
        prompt = prompts.render(template, task=exp.task.description, trajectory=trajectory, judgement=why)
        overrides = call_settings(c.extract_temperature, c.max_tokens)
        items = await calls.ask(ep.episode_id, template, prompt, lambda answer: memory_items(answer, c.max_items), **overrides)
        return None if items is None else (succeeded, thoughts, items)

    def _write(self, exp: Experience, succeeded: bool, thoughts: str, items: list[dict[str, str]]) -> None:
        ep = exp.episode
        for j, item in enumerate(items):
            fields = {"episode": ep.episode_id, **item, "judged_success": succeeded, "judge_thoughts": thoughts}
            content = prompts.render("reasoningbank_item", **item).strip()
            self.store.add(MemoryItem(f"{ep.episode_id}#{j}", content, Provenance.of(ep), fields), exp.key)

    def stats(self) -> MemoryStats:
        return MemoryStats(
            items=len(self.store), bytes=self.store.nbytes(), groups=len({item.fields["episode"] for item in self.store.items})
        )


METHOD = ReasoningBank
