"""Dynamic Cheatsheet (arXiv 2504.07952): one evolving cheatsheet of strategies, rewritten by a
curator model, injected whole; two variants, cumulative (DC-Cu) and retrieval-synthesis (DC-RS).

Source: suzgunmirac/dynamic-cheatsheet @ 1cf258c936edc28ef045202621bf9463f70a1988
(dynamic_cheatsheet/language_model.py advanced_generate, utils/extractor.py, run_benchmark.py,
prompts/curator_prompt_for_dc_cumulative.txt, curator_prompt_for_dc_retrieval_synthesis.txt).
Prompts are ours, written after the code's intents.

Followed: the sheet starts "(empty)"; the curator's answer is the text between <cheatsheet> tags,
else the previous sheet is kept (here after one repair); temperature 0 (official). The curator
never sees ground truth: as in the code it gets the task and the model's attempt (here the
trajectory: actions and what the environment answered, but for the env's verdict on the final
action where it gives one in words, Env.grades_in_observation) and judges correctness itself; learn
reads no success or reward.
  cumulative: after each training episode, in batch order, the curator rewrites the sheet from the
    previous sheet, the task and the attempt (sequential, so batch size 1 is the paper's loop);
    retrieval injects the whole sheet.
  retrieval_synthesis: every training episode's (task, attempt) is kept, keyed by its task; at
    retrieval the retrieve_top_k (3, official) most similar past pairs (no success filter, as
    official) and the previous sheet go to the curator, which writes a sheet for THIS task (an LLM
    call charged to the retrieving episode, Retrieval.usage); if it gives no sheet, the raw pairs
    are injected (official). learn stores the batch's pairs and carries forward the sheet curated
    for the batch's last episode (from Retrieval.trace; redone on a resume, before the new pairs
    are stored). Within a batch every query sees the same previous sheet: exact at batch size 1.
Deviations: the size limit is a prompt instruction in the code (circa 2000-2500 words); here it is
also a hard cap, max_cheatsheet_chars, a longer sheet cut at its last line break before the cap
(fields["cut_chars"]); with an empty memory DC-RS makes no call and injects nothing (the code
calls the curator on an empty sheet); a failed DC-RS synthesis leaves the carried sheet unchanged;
max_tokens defaults to the LLM's (official 2 x 2048 for the curator). Out of scope: the
code-execution loop and multi-round refinement (max_num_rounds > 1).
The sheet is one item whose provenance is its latest contributing episode; fields list every
contributing episode (contributors) and its version.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import Settings
from memrl_bench.core.schema import Episode, MemoryItem, Provenance, Retrieval, RetrievedItem, Usage
from memrl_bench.llm.settings import CompletionTokens
from memrl_bench.methods.base import DocumentMethod, Experience, LearnResult, Query, trajectory_text
from memrl_bench.methods.llm_ops import MemoryCalls, OpError, call_settings, plain_text, require_llm

EMPTY = "(empty)"  # the code's initial sheet
SHEET_ID = "cheatsheet"


class DynamicCheatsheetConfig(Settings):
    variant: Literal["cumulative", "retrieval_synthesis"] = Field(
        "cumulative", description="DC-Cu (one sheet rewritten after each episode) or DC-RS (a sheet synthesised per task at retrieval)."
    )
    retrieve_top_k: int = Field(3, ge=1, description="retrieval_synthesis: past (task, attempt) pairs shown to the curator (official 3).")
    max_cheatsheet_chars: int = Field(
        6000, ge=100, description="Hard cap on the sheet's characters (ours; the code only asks for circa 2000-2500 words)."
    )
    temperature: float = Field(0.0, ge=0, description="LLM temperature of the curator (official 0).")
    max_tokens: CompletionTokens | None = Field(
        None, description="Completion tokens of a curator call; None: the LLM's max_tokens (official 2 x 2048)."
    )
    max_trajectory_chars: int = Field(2000, ge=0, description="An attempt's trajectory text is cut to this many characters.")


def cheatsheet_text(text: str) -> str:
    """The sheet inside the answer's last <cheatsheet>...</cheatsheet> (models often name the tags before writing the sheet)."""
    lower = text.lower()
    end = lower.rfind("</cheatsheet>")
    start = lower.rfind("<cheatsheet>", 0, max(end, 0))
    sheet = text[start + len("<cheatsheet>") : end].strip() if end >= 0 and start >= 0 else ""
    if not sheet:
        raise OpError("no cheatsheet: put the whole new cheatsheet between <cheatsheet> and </cheatsheet>")
    return sheet


def capped(sheet: str, max_chars: int) -> tuple[str, int]:
    """The sheet cut to at most max_chars at its last line break before the cap, and the characters cut."""
    if len(sheet) <= max_chars:
        return sheet, 0
    head = sheet[:max_chars]
    cut = head[: head.rindex("\n")].rstrip() if "\n" in head else head
    return cut, len(sheet) - len(cut)


class DynamicCheatsheet(DocumentMethod):
    name = "dynamic_cheatsheet"
    document_file = "cheatsheet.json"
    Settings = DynamicCheatsheetConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = DynamicCheatsheetConfig(**cfg)
        require_llm(ctx, self.name)
        # document: the cheatsheet (None: still "(empty)"); sources (retrieval_synthesis): each training episode's task
        # and attempt, keyed by its task

    @property
    def labels(self) -> tuple[str, ...]:
        return (f"dynamic_cheatsheet: {self.config.variant}",)

    def _previous(self) -> str:
        return self.document.content if self.document is not None else EMPTY

    # ---- retrieval -------------------------------------------------------------
    def retrieve(self, query: Query) -> Retrieval:
        return self.retrieve_batch([query])[0]

    def retrieve_batch(self, queries: list[Query]) -> list[Retrieval]:
        if self.config.variant == "cumulative" or not len(self.sources):
            return [self._sheet_retrieval() for _ in queries]
        calls = MemoryCalls(self.ctx)

        async def synthesise_all():
            return await asyncio.gather(*(self._synthesise(q, calls) for q in queries))

        out = []
        for query, (sources, sheet, cut_chars) in zip(queries, self.ctx.run(synthesise_all())):
            chosen = [RetrievedItem.of(self.sources.items[p], float(s)) for p, s in zip(sources.positions, sources.similarities)]
            if self.document is not None:
                chosen.insert(0, RetrievedItem.of(self.document, 0.0))
            if sheet is not None:
                block = prompts.render("dynamic_cheatsheet_block", sheet=sheet).strip()
            else:  # the code's fallback when the curator writes no sheet: the retrieved pairs themselves
                block = prompts.render("dynamic_cheatsheet_pairs_block", pairs=self._pairs_text(sources.positions)).strip()
            trace = {"sheet": sheet, "cut_chars": cut_chars, "sources": [self.sources.items[p].id for p in sources.positions]}
            out.append(
                Retrieval(
                    items=chosen,
                    prompt_block=block,
                    candidates=len(self.sources),
                    usage=calls.usage.get(query.episode_id, Usage()),
                    memory_calls=calls.calls.get(query.episode_id, []),
                    trace=trace,
                )
            )
        return out

    def _sheet_retrieval(self) -> Retrieval:
        if self.document is None:
            return Retrieval()
        block = prompts.render("dynamic_cheatsheet_block", sheet=self.document.content).strip()
        return Retrieval(items=[RetrievedItem.of(self.document, 0.0)], prompt_block=block, candidates=1)

    def _pairs_text(self, positions) -> str:
        return "\n\n".join(f"[{n}] {self.sources.items[p].content}" for n, p in enumerate(positions, 1))

    async def _synthesise(self, query: Query, calls: MemoryCalls):
        """DC-RS for one task: the retrieved pairs' hits, the sheet written for it (None: no usable answer), characters cut."""
        sources = self.sources.search(query.key.reshape(1, -1), self.config.retrieve_top_k)[0]
        prompt = prompts.render(
            "dynamic_cheatsheet_synthesis",
            cheatsheet=self._previous(),
            pairs=self._pairs_text(sources.positions),
            task=query.task.description,
            max_chars=self.config.max_cheatsheet_chars,
        )
        sheet = await calls.ask(
            query.episode_id,
            "dynamic_cheatsheet_synthesis",
            prompt,
            _sheet,
            as_json=False,
            **call_settings(self.config.temperature, self.config.max_tokens),
        )
        if sheet is None:
            return sources, None, 0
        return sources, *capped(sheet, self.config.max_cheatsheet_chars)

    # ---- learning --------------------------------------------------------------
    def learn(self, batch: list[Experience]) -> LearnResult:
        calls = MemoryCalls(self.ctx)
        if self.config.variant == "cumulative":
            for exp in batch:
                self._curate(exp, calls)
            return calls.result()
        if batch:
            last = batch[-1]
            trace = last.retrieval.trace if last.retrieval is not None else None
            if trace is None and len(self.sources):  # a resume: redo the last episode's synthesis on the memory it saw
                query = Query(last.task, last.key, last.episode.episode_id, last.episode.phase)
                sources, sheet, cut_chars = self.ctx.run(self._synthesise(query, calls))
                trace = {"sheet": sheet, "cut_chars": cut_chars, "sources": [self.sources.items[p].id for p in sources.positions]}
            if trace is not None and trace["sheet"] is not None:
                self._commit(trace["sheet"], trace["cut_chars"], last.episode, trace["sources"])
        for exp in batch:
            content = prompts.render(
                "dynamic_cheatsheet_pair",
                task=exp.task.description,
                attempt=trajectory_text(exp.episode, self.config.max_trajectory_chars, verdict=not exp.graded_ending),
            ).strip()
            self.sources.add(MemoryItem(exp.episode.episode_id, content, Provenance.of(exp.episode)), exp.key)
        return calls.result()

    def _curate(self, exp: Experience, calls: MemoryCalls) -> None:
        """DC-Cu: the curator rewrites the sheet from this episode's task and attempt; a failed call keeps the sheet."""
        c, ep = self.config, exp.episode
        prompt = prompts.render(
            "dynamic_cheatsheet_curate",
            cheatsheet=self._previous(),
            task=exp.task.description,
            attempt=trajectory_text(ep, c.max_trajectory_chars, verdict=not exp.graded_ending),
            max_chars=c.max_cheatsheet_chars,
        )
        sheet = calls.ask_now(
            ep.episode_id,
            "dynamic_cheatsheet_curate",
            prompt,
            _sheet,
            as_json=False,
            **call_settings(self.config.temperature, self.config.max_tokens),
        )
        if sheet is not None:
            self._commit(*capped(sheet, c.max_cheatsheet_chars), ep, [])

    def _commit(self, sheet: str, cut_chars: int, episode: Episode, sources: list[str]) -> None:
        before = self.document.fields if self.document is not None else {"contributors": [], "version": 0}
        contributors = [*before["contributors"], *(s for s in sources if s not in before["contributors"])]
        if episode.episode_id not in contributors:
            contributors.append(episode.episode_id)
        fields = {"contributors": contributors, "version": before["version"] + 1, "cut_chars": cut_chars, "sources": sources}
        self.document = MemoryItem(SHEET_ID, sheet, Provenance.of(episode), fields)


def _sheet(text: str) -> str:
    return cheatsheet_text(plain_text(text))


METHOD = DynamicCheatsheet
