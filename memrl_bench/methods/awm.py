"""Agent Workflow Memory (arXiv 2409.07429), online: reusable workflows induced from the agent's
successful training episodes, the whole workflow set injected into every episode.

Source: zorazrw/agent-workflow-memory @ 5a9157721dc36d448360e9177ec9ac5436aef19f (webarena/pipeline.py,
webarena/induce_prompt.py, webarena/prompt/{instruction,one_shot}.txt, webarena/agents/legacy/agent.py).
Prompts are ours, written after the code's intents.

Followed (the WebArena online pipeline): each episode is judged, by default by the model itself
(`judge: llm`, the code's default autoeval, which never sees the env's verdict on the final action
where the env gives one in words, Env.grades_in_observation; `judge: env` is its `gt` criteria, the env's reward);
judged successes join a pool; then the workflow set is REBUILT, not appended: the pool grouped by
task template, examples_per_group random examples per group (official 1, drawn from the method
seed), each shown as its task and steps, after an instruction and a one-shot example, in one
induction call (temperature 1.0, official); the reply replaces the workflow set. Workflows are
titled blocks of reasoning and action steps, with variables for the values that change, at least
2 steps, not overlapping. The whole set goes into every episode's prompt (the code puts the file in
the system prompt); there is no retrieval.
Deviations: induction runs once per training batch after the batch's episodes are judged (the code
re-induces after every task: the same at batch size 1); a rebuild shows at most max_examples
examples (ours; the code shows every template), the groups with the newest successes first; a
task's template is its env's `task_type` (ALFWorld, synthetic), else the task itself; a reply with
no "Workflow" block is repaired once, then the previous set is kept; the code's two fixed
web-action notes are not appended; steps are the harness's trajectory text (actions and
observations), not think/action pairs; max_tokens defaults to the LLM's
(official 2048 for the induction). Out of scope: the offline (Mind2Web) mode and the rule-based induction.
The workflow set is one item whose provenance is the newest example shown; fields list every
example shown (contributors); the induction call is charged to the batch's newest success. Pool
examples are items too (their fields keep the judge's verdict).
"""

from __future__ import annotations

import asyncio
import re
from typing import Literal

from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import Settings
from memrl_bench.core.schema import MemoryItem, Provenance, Retrieval, RetrievedItem
from memrl_bench.llm.settings import CompletionTokens
from memrl_bench.methods.base import DocumentMethod, Experience, LearnResult, Query, trajectory_text
from memrl_bench.methods.llm_ops import MemoryCalls, OpError, call_settings, judge_episode, plain_text, require_llm

WORKFLOWS_ID = "workflows"
_WORKFLOW = re.compile(r"^\W*workflow\b[^\n]*:", re.IGNORECASE | re.MULTILINE)


class AWMConfig(Settings):
    judge: Literal["llm", "env"] = Field(
        "llm", description="Which episodes induce workflows: those the model judges solved (official autoeval) or the env's reward (gt)."
    )
    group_key: str = Field("task_type", description="Task data key naming a task's template; a task without it is its own template.")
    examples_per_group: int = Field(1, ge=1, description="Random successful examples shown per template (official num_samples 1).")
    max_examples: int = Field(8, ge=1, description="Most examples shown in one induction (ours; the newest templates first).")
    temperature: float = Field(1.0, ge=0, description="LLM temperature of the induction call (official 1.0).")
    judge_temperature: float = Field(0.0, ge=0, description="judge=llm: LLM temperature of the judge (ours; not found in the code).")
    max_tokens: CompletionTokens | None = Field(
        None,
        description="Completion tokens of a judge or induction call; None: the LLM's max_tokens (official induction 2048).",
    )
    max_trajectory_chars: int = Field(2000, ge=0, description="An example's trajectory text is cut to this many characters.")


def workflow_text(text: str) -> str:
    """The induced workflow set: the answer from its first "Workflow ...:" heading on (models often open with prose)."""
    found = _WORKFLOW.search(text)
    if found is None:
        raise OpError('no workflow: write each one as a block starting "Workflow 1: <what it does>" followed by its steps')
    return text[found.start() :].strip()


class AWM(DocumentMethod):
    name = "awm"
    document_file = "workflows.json"
    Settings = AWMConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = AWMConfig(**cfg)
        require_llm(ctx, self.name)
        # sources: the successful examples, in the order they were judged (fields["group"] names the template);
        # document: the workflow set

    @property
    def labels(self) -> tuple[str, ...]:
        return ("awm: successes from the env's reward (the code's gt criteria)",) if self.config.judge == "env" else ()

    def retrieve(self, query: Query) -> Retrieval:
        if self.document is None:
            return Retrieval()
        block = prompts.render("awm_memory_block", workflows=self.document.content).strip()
        return Retrieval(items=[RetrievedItem.of(self.document, 0.0)], prompt_block=block, candidates=1)

    # ---- learning --------------------------------------------------------------
    def learn(self, batch: list[Experience]) -> LearnResult:
        c = self.config
        calls = MemoryCalls(self.ctx)

        async def judge_all():
            return await asyncio.gather(*(self._judge(exp, calls) for exp in batch))

        trigger = None  # the batch's newest success: the rebuild is charged to it
        for exp, verdict in zip(batch, self.ctx.run(judge_all())):
            if verdict is None or not verdict[0]:
                continue
            ep = exp.episode
            content = prompts.render(
                "awm_example",
                task=exp.task.description,
                trajectory=trajectory_text(ep, c.max_trajectory_chars, verdict=c.judge == "env" or not exp.graded_ending),
            ).strip()
            fields = {"group": str(exp.task.data.get(c.group_key, exp.task.id)), "judged_success": True, "judge_thoughts": verdict[1]}
            self.sources.add(MemoryItem(ep.episode_id, content, Provenance.of(ep), fields), exp.key)
            trigger = ep.episode_id
        if trigger is not None:
            self._induce(trigger, calls)
        return calls.result()

    async def _judge(self, exp: Experience, calls: MemoryCalls) -> tuple[bool, str] | None:
        if self.config.judge == "env":
            return exp.episode.success, ""
        ep = exp.episode
        trajectory = trajectory_text(ep, self.config.max_trajectory_chars, verdict=not exp.graded_ending)
        overrides = call_settings(self.config.judge_temperature, self.config.max_tokens)
        return await judge_episode(calls, ep.episode_id, exp.task.description, trajectory, **overrides)

    def shown_examples(self) -> list[int]:
        """Pool positions of the examples a rebuild shows: examples_per_group random ones per template (drawn per
        template and pool size from the method seed), the templates with the newest successes first, at most
        max_examples in all; in pool order."""
        c = self.config
        groups: dict[str, list[int]] = {}
        for position, item in enumerate(self.sources.items):
            groups.setdefault(item.fields["group"], []).append(position)
        shown: list[int] = []
        for group, members in sorted(groups.items(), key=lambda g: -g[1][-1]):
            rng = self.ctx.rng_for("awm-examples", group, str(len(self.sources)))
            drawn = rng.choice(members, size=min(c.examples_per_group, len(members)), replace=False)
            shown.extend(int(p) for p in drawn[: c.max_examples - len(shown)])
            if len(shown) == c.max_examples:
                break
        return sorted(shown)

    def _induce(self, trigger: str, calls: MemoryCalls) -> None:
        """Rebuild the workflow set from the pool; the call is charged to `trigger`, an episode of the batch learned."""
        c = self.config
        shown = [self.sources.items[p] for p in self.shown_examples()]
        newest = shown[-1]
        prompt = prompts.render("awm_induce", examples="\n\n".join(item.content for item in shown))
        overrides = call_settings(c.temperature, c.max_tokens)
        text = calls.ask_now(trigger, "awm_induce", prompt, lambda answer: workflow_text(plain_text(answer)), as_json=False, **overrides)
        if text is None:
            return
        version = self.document.fields["version"] + 1 if self.document is not None else 1
        fields = {"contributors": [item.id for item in shown], "version": version}
        self.document = MemoryItem(WORKFLOWS_ID, text, newest.provenance, fields)


METHOD = AWM
