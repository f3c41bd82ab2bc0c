"""ExpeL (arXiv 2308.10144): a short list of insight rules edited by the LLM, plus
successful trajectories recalled as examples.

Facts from the official code (LeapLabTHU/ExpeL, agent/expel.py):
- The LLM edits the rule list with ADD, EDIT, AGREE and REMOVE. Each rule has an
  importance counter: ADD starts it at 2, AGREE and EDIT add 1, REMOVE subtracts 1
  (3 when the list is full), applied in the order REMOVE, AGREE, EDIT, ADD; a rule at
  <= 0 is dropped, and the list is kept sorted by importance. An ADD of a rule already
  in the list is ignored, and an EDIT that leaves the text unchanged counts as AGREE.
- Insights come from comparing a failed trial with a successful one, and from
  groups of successful trials (success_critique_num = 8 per call).
- For acting, the rules and the most similar successful trajectories (one per task)
  go into the prompt; temperature 0.

In this harness, after each training batch: the batch's successes join the example
store; each failure is compared with the most similar stored success (cosine of task
keys >= pair_sim_floor; the official code pairs trials of the same task, which is
similarity 1), and a failure with no such success gives no insight call; then the
batch's successes, in groups of success_critique_num, each give one call, charged to
the group's first episode (whose provenance the rules it adds carry). The list is
capped at max_rules (10): when full, the prompt asks to REMOVE first and a REMOVE
counts 3, and rules beyond the cap, lowest importance first, are dropped (the official
code caps softly, through the prompt only, at 20). Rule numbers shown to the model are
1..n, so an invented number is caught.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import Settings
from memrl_bench.core.schema import Episode, MemoryItem, MemoryStats, Provenance, Retrieval, RetrievedItem
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, MemoryMethod, Query, trajectory_text
from memrl_bench.methods.llm_ops import MemoryCalls, operation_list, require_llm, small_ids

OPERATIONS = ("REMOVE", "AGREE", "EDIT", "ADD")  # the order they are applied in (official)
RuleOperation = tuple[str, str | None, str]  # op, rule id (all but ADD), rule text (EDIT, ADD)


class ExpeLConfig(Settings):
    max_rules: int = Field(10, ge=1, description="Rules kept; at the cap the prompt asks for REMOVE first and REMOVE counts 3.")
    k_examples: int = Field(2, ge=0, description="Most similar successful trajectories (one per task) injected as examples.")
    success_critique_num: int = Field(8, ge=1, description="Successful trials shown together in one insight call (official 8).")
    pair_sim_floor: float = Field(
        0.8,
        ge=-1,
        le=1,
        description="A failure is compared with the most similar stored success if their task keys' cosine is at least this.",
    )
    temperature: float = Field(0.0, ge=0, description="LLM temperature of insight calls (official 0).")
    max_trajectory_chars: int = Field(2000, ge=0, description="Trajectory text is cut to this many characters.")


def rule_operations(answer: Any, shown: dict[str, str]) -> list[RuleOperation]:
    """The insight call's operations, checked whole: any bad entry rejects all of them."""
    return operation_list(
        answer,
        shown,
        list_key="operations",
        kind_key="op",
        text_key="rule",
        kinds=OPERATIONS,
        with_id={"REMOVE", "AGREE", "EDIT"},
        with_text={"ADD", "EDIT"},
    )


def _same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


class ExpeL(MemoryMethod):
    name = "expel"
    Settings = ExpeLConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = ExpeLConfig(**cfg)
        require_llm(ctx, self.name)
        self.examples = ItemStore()  # successful trajectories, keyed by their task
        self.rules: list[MemoryItem] = []  # sorted by fields["importance"], highest first
        self.next_rule = 0

    # ---- retrieval -------------------------------------------------------------
    def retrieve(self, query: Query) -> Retrieval:
        chosen = [RetrievedItem.of(rule, 0.0, score=float(rule.fields["importance"])) for rule in self.rules]
        sims = self.examples.similarities(query.key)
        tasks: set[str] = set()
        examples = []
        for i in np.argsort(-sims, kind="stable"):
            item = self.examples.items[i]
            if len(examples) == self.config.k_examples:
                break
            if item.provenance.task_id not in tasks:
                tasks.add(item.provenance.task_id)
                examples.append(RetrievedItem.of(item, sims[i]))
        sections = []
        if self.rules:
            sections.append(prompts.render("expel_rules", rules=self._numbered()).strip())
        if examples:
            sections.append(
                prompts.render("expel_examples", examples="\n\n".join(self.examples.get(r.item_id).content for r in examples)).strip()
            )
        return Retrieval(items=chosen + examples, prompt_block="\n\n".join(sections), candidates=len(self.rules) + len(self.examples))

    def _numbered(self) -> str:
        return "\n".join(f"{n}. {rule.content}" for n, rule in enumerate(self.rules, 1))

    # ---- learning --------------------------------------------------------------
    def learn(self, batch: list[Experience]) -> LearnResult:
        c = self.config
        calls = MemoryCalls(self.ctx)
        successes = [exp for exp in batch if exp.episode.success]
        for exp in successes:
            content = prompts.render(
                "expel_example", task=exp.task.description, trajectory=trajectory_text(exp.episode, c.max_trajectory_chars)
            ).strip()
            self.examples.add(MemoryItem(exp.episode.episode_id, content, Provenance.of(exp.episode)), exp.key)
        for exp in batch:
            if exp.episode.success or not len(self.examples):
                continue
            sims = self.examples.similarities(exp.key)
            best = int(np.argmax(sims))
            if sims[best] >= c.pair_sim_floor:
                failed = prompts.render(
                    "expel_example", task=exp.task.description, trajectory=trajectory_text(exp.episode, c.max_trajectory_chars)
                ).strip()
                self._extend_rules(exp.episode, "expel_compare", {"failed": failed, "succeeded": self.examples.items[best].content}, calls)
        for start in range(0, len(successes), c.success_critique_num):
            group = successes[start : start + c.success_critique_num]
            trials = "\n\n".join(self.examples.get(exp.episode.episode_id).content for exp in group)
            self._extend_rules(group[0].episode, "expel_successes", {"trials": trials}, calls)
        return calls.result()

    def _extend_rules(self, episode: Episode, template: str, values: dict[str, str], calls: MemoryCalls) -> None:
        """One insight call on the current rules; its operations applied if valid."""
        full = len(self.rules) >= self.config.max_rules
        shown = small_ids([rule.id for rule in self.rules], start=1)
        operations_text = prompts.render(
            "expel_operations", rules=self._numbered() or "(none yet)", full=prompts.render("expel_full") if full else ""
        )
        prompt = prompts.render(template, operations=operations_text.strip(), **values)
        ops = calls.ask_now(
            episode.episode_id, template, prompt, lambda answer: rule_operations(answer, shown), temperature=self.config.temperature
        )
        if ops is not None:
            self.apply(ops, episode, full)

    def apply(self, ops: list[RuleOperation], episode: Episode, full: bool) -> None:
        """ExpeL's counter update: REMOVE, AGREE, EDIT, ADD in that order; drop <= 0; sort; cap."""
        by_id = {rule.id: rule for rule in self.rules}
        for kind in OPERATIONS:
            for op, rule_id, text in ops:
                if op != kind:
                    continue
                if op == "ADD":
                    if not any(_same(text, rule.content) for rule in self.rules):
                        self.rules.append(
                            MemoryItem(f"rule-{self.next_rule}", text, Provenance.of(episode), {"importance": 2, "edited_by": []})
                        )
                        self.next_rule += 1
                    continue
                rule = by_id[rule_id]
                if op == "REMOVE":
                    rule.fields["importance"] -= 3 if full else 1
                    continue
                rule.fields["importance"] += 1
                if op == "EDIT" and not _same(text, rule.content):
                    rule.content = text
                    rule.fields["edited_by"].append(episode.episode_id)
        kept = [rule for rule in self.rules if rule.fields["importance"] > 0]
        self.rules = sorted(kept, key=lambda rule: -rule.fields["importance"])[: self.config.max_rules]

    # ---- state -----------------------------------------------------------------
    def snapshot(self, path: Path) -> None:
        self.examples.save(path)
        state = {"next_rule": self.next_rule, "rules": [rule.to_dict() for rule in self.rules]}
        (path / "expel_state.json").write_text(json.dumps(state, sort_keys=True))

    def restore(self, path: Path) -> None:
        self.examples.load(path)
        state = json.loads((path / "expel_state.json").read_text())
        self.next_rule = state["next_rule"]
        self.rules = [MemoryItem.from_dict(d) for d in state["rules"]]

    def stats(self) -> MemoryStats:
        rule_bytes = sum(len(rule.content.encode()) for rule in self.rules)
        return MemoryStats(items=len(self.examples) + len(self.rules), bytes=self.examples.nbytes() + rule_bytes, groups=len(self.rules))

    def items(self) -> list[MemoryItem]:
        return list(self.examples.items) + list(self.rules)


METHOD = ExpeL
