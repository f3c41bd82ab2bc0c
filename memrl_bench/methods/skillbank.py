"""SkillRL's skill bank (arXiv 2602.08234; aiming-lab/SkillRL @ 48c8446: agent_system/memory/
skills_only_memory.py the bank and its retrieval, skill_updater.py and verl/trainer/ppo/
ray_trainer.py the evolution, skill_generation/alfworld.py the distillation) without the RL.

The bank, as SkillRL keeps it: general_skills and task_specific_skills per task category
(title, principle, when_to_apply) and common_mistakes (description, why_it_happens,
how_to_avoid); one ItemStore item per skill or mistake, its kind and category in `fields`.
A task's category is the env's `task.data["category"]`; a task without one is "general":
its skills are general skills and it is shown general skills only.

Distillation (learn, by the writer model): per category of the batch, its successes (up to
max_episodes_per_call) become strategic skills, general and for that category, and its
failures (up to max_failures_per_call) become common mistakes. The bank fills up to
SkillRL's sizes (12 general, 6 per category, 12 mistakes: its shipped ALFWorld bank) and then
grows only by evolution. A skill's provenance is the first episode of its call; all of
them are in fields["source_episodes"]; the call is charged to that first episode.
Retrieval, once per episode: template (all general skills up to top_k, evolved ones first
and never cut; all skills of the task's category; the first mistakes_top_k mistakes) or
embedding (top_k general and task_specific_top_k task-specific skills of any category by
cosine of the skill's key to the task's key). A skill's key is its text embedded (the
run's text embedder) or, with env_intent keys, its source task's key.
Recursive evolution: after each learn, a category whose success rate over the training
episodes seen since its last evolution (at least evolve_min_episodes) is below
update_threshold gets up to max_new_skills new ("dynamic") skills distilled from its
failures (the first 10 kept, 5 shown, their last steps_shown steps).

Deviations: SkillRL evolves from VALIDATION failures; here from training failures (the
harness holds validation out: it must not teach). Its code adds evolved skills as general
skills from all failures; here they are the low category's own (its README's wording).
SkillRL first rewrites each trajectory with the distiller (refined steps, planning pattern);
here the calls see the steps as played. q_learning (the harness's own arm, not SkillRL):
every skill and mistake has a Q updated as MemRL updates a memory it injected
(methods/memrl.py updated_q, its alpha and reward mapping), and each section of the block
is ranked by MemRL's score (similarity and Q, z-scored within the candidates).
Out of scope: SkillRL's SFT and GRPO training of the policy (the harness keeps the LLM
frozen) and its o3 distiller (set memory_llm for a stronger writer).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import ConfigDict, Field

from memrl_bench import prompts
from memrl_bench.core.config import ConfigError, Settings
from memrl_bench.core.schema import MemoryItem, MemoryStats, Provenance, Retrieval, RetrievedItem, Task
from memrl_bench.core.vector_index import unit_rows
from memrl_bench.llm.settings import CompletionTokens
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, MemoryMethod, Query, end_reason
from memrl_bench.methods.llm_ops import MemoryCalls, OpError, call_settings, require_llm
from memrl_bench.methods.memrl import MemRLConfig, combined_score, reward_of, updated_q

GENERAL = "general"  # the category of a task whose env gives none, and the group of general skills
FAILURES_KEPT = 10  # SkillRL collects the first 10 failures for an evolution and shows 5
Job = tuple[Callable[[Any], None], Awaitable[Any]]  # a writer call of learn() and what applies its answer to the bank


class SkillBankConfig(Settings):
    model_config = ConfigDict(populate_by_name=True)  # "lambda" in configs, lambda_ in code

    retrieval_mode: Literal["template", "embedding"] = Field(
        "template", description="Skills shown: by the task's category (template) or by cosine to the task's key (embedding), as SkillRL."
    )
    top_k: int = Field(6, ge=0, description="General skills shown (SkillRL top_k 6; evolved ones are never cut in template mode).")
    task_specific_top_k: int | None = Field(
        None, ge=0, description="Task-specific skills shown; null: all of the category (template) or top_k (embedding), as SkillRL."
    )
    mistakes_top_k: int = Field(5, ge=0, description="Common mistakes shown (SkillRL: the first 5).")
    max_general_skills: int = Field(12, ge=0, description="Distillation fills the general skills up to this many (SkillRL's bank: 12).")
    max_task_specific_skills: int = Field(6, ge=0, description="Distillation fills each category's skills up to this many (SkillRL: 4-6).")
    max_common_mistakes: int = Field(12, ge=0, description="Distillation fills the common mistakes up to this many (SkillRL: 8-12).")
    max_episodes_per_call: int = Field(8, ge=1, description="Successes of a category shown to one distillation call (SkillRL: 8).")
    max_failures_per_call: int = Field(5, ge=1, description="Failures shown to a mistakes or evolution call (SkillRL: 5).")
    steps_shown: int = Field(5, ge=1, description="Steps shown per episode: a success's first, a failure's last (SkillRL: 5).")
    observation_chars: int = Field(200, ge=0, description="Each shown observation is cut to this many characters (SkillRL: 200).")
    enable_dynamic_update: bool = Field(True, description="Recursive evolution of low-success categories (SkillRL's run scripts: on).")
    update_threshold: float = Field(0.4, ge=0, le=1, description="A category with a success rate below this evolves (SkillRL 0.4).")
    max_new_skills: int = Field(3, ge=1, description="New skills kept per evolution (SkillRL 3).")
    evolve_min_episodes: int = Field(
        8, ge=1, description="Training episodes of a category since its last evolution before its rate is judged (harness's own)."
    )
    temperature: float | None = Field(None, ge=0, description="Temperature of the writer's calls; null: the LLM config's own.")
    max_tokens: CompletionTokens | None = Field(
        None,
        description="Completion tokens of a writer's call; null: the LLM config's own (SkillRL's o3 distiller: no cap).",
    )
    q_learning: bool = Field(False, description="Skills carry MemRL's Q (its update rule) and are ranked by MemRL's score (harness's arm).")
    alpha: float = Field(0.3, ge=0, le=1, description="q_learning: learning rate of the Q update (MemRL's).")
    lambda_: float = Field(
        0.5, alias="lambda", ge=0, le=1, description="q_learning: weight of Q in the score, similarity 1 - lambda (MemRL's)."
    )
    q_init: float = Field(0.0, description="q_learning: Q of a new skill (MemRL's q_init).")
    reward_success: float = Field(1.0, description="q_learning: r of a successful episode (MemRL's).")
    reward_failure: float = Field(-1.0, description="q_learning: r of a failed episode (MemRL's).")


def category_of(task: Task) -> str:
    """The env's category of the task (task.data["category"]); "general" when it gives none. Never read from the gold answer."""
    value = task.data.get("category")
    return str(value) if value else GENERAL


# ---- reading the writer's answers ------------------------------------------------------


def _text(entry: dict, key: str, required: bool, n: int) -> str:
    value = entry.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise OpError(f'entry {n}: "{key}" must be a non-empty string')
    return value.strip()


def _entries(answer: Any, key: str, fields: dict[str, bool], *, optional: bool = False) -> list[dict[str, str]]:
    """answer[key] (or a bare list) as entries holding `fields` (name -> required), checked whole;
    a missing `key` is no entries when `optional`."""
    if isinstance(answer, dict) and key not in answer and optional:
        return []
    listed = answer if isinstance(answer, list) else answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(listed, list):
        raise OpError(f'expected a JSON object with a list under "{key}"')
    out = []
    for n, entry in enumerate(listed):
        if not isinstance(entry, dict):
            raise OpError(f'entry {n} of "{key}" is not a JSON object')
        out.append({name: _text(entry, name, required, n) for name, required in fields.items()})
    return out


SKILL_FIELDS = {"title": True, "principle": True, "when_to_apply": False}
MISTAKE_FIELDS = {"description": True, "why_it_happens": False, "how_to_avoid": True}


def parse_skills(answer: Any) -> dict[str, list[dict[str, str]]]:
    """A distillation answer: its general and task-specific skills (either list may be left out, not both)."""
    if not isinstance(answer, dict) or ("general_skills" not in answer and "task_specific_skills" not in answer):
        raise OpError('expected a JSON object with lists under "general_skills" and "task_specific_skills"')
    return {kind: _entries(answer, f"{kind}_skills", SKILL_FIELDS, optional=True) for kind in ("general", "task_specific")}


def parse_mistakes(answer: Any) -> list[dict[str, str]]:
    return _entries(answer, "common_mistakes", MISTAKE_FIELDS)


def parse_new_skills(answer: Any) -> list[dict[str, str]]:
    skills = _entries(answer, "new_skills", SKILL_FIELDS)
    if not skills:
        raise OpError('"new_skills" is empty; propose at least one skill')
    return skills


# ---- the method --------------------------------------------------------------------


class SkillBank(MemoryMethod):
    name = "skillbank"
    Settings = SkillBankConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = c = SkillBankConfig(**cfg)
        require_llm(ctx, self.name)
        if c.retrieval_mode == "embedding" and ctx.embed is None:
            raise ConfigError(
                "method.retrieval_mode=embedding compares skill texts with the task: set embedder=minilm (or use retrieval_mode=template)"
            )
        # MemRL's update and score, with skillbank's alpha, lambda and rewards; similarity z-scored within the
        # candidates (MemRL's fixed constants are calibrated for its own embedder and task keys).
        self.q_rule = MemRLConfig(
            alpha=c.alpha, reward_success=c.reward_success, reward_failure=c.reward_failure, sim_normalisation="pool", lambda_=c.lambda_
        )
        self.store = ItemStore()
        # Per category, the training episodes since its last evolution: counts and the first failures (for evolution).
        self.window: dict[str, dict[str, Any]] = {}

    # ---- the bank ----------------------------------------------------------------
    def section(self, kind: str, category: str | None = None) -> list[int]:
        """Store positions of one list of the bank, in the order written."""
        return [
            i
            for i, item in enumerate(self.store.items)
            if item.fields["kind"] == kind and (category is None or item.fields["category"] == category)
        ]

    def bank(self) -> dict[str, Any]:
        """The bank in SkillRL's JSON shape (general_skills, task_specific_skills by category, common_mistakes)."""

        def entry(item: MemoryItem, id_key: str, names: dict[str, bool]) -> dict[str, Any]:
            return {id_key: item.id, **{name: item.fields[name] for name in names}}

        bank: dict[str, Any] = {"general_skills": [], "task_specific_skills": {}, "common_mistakes": []}
        for item in self.store.items:
            kind = item.fields["kind"]
            if kind == "mistake":
                bank["common_mistakes"].append(entry(item, "mistake_id", MISTAKE_FIELDS))
            elif kind == "general":
                bank["general_skills"].append(entry(item, "skill_id", SKILL_FIELDS))
            else:
                bank["task_specific_skills"].setdefault(item.fields["category"], []).append(entry(item, "skill_id", SKILL_FIELDS))
        return bank

    # ---- retrieval -------------------------------------------------------------
    def retrieve(self, query: Query) -> Retrieval:
        if not len(self.store):
            return Retrieval()
        c = self.config
        sims = self.store.similarities(query.key)
        category = category_of(query.task)
        sections: list[tuple[str, list[int]]] = []
        if c.retrieval_mode == "template":
            general = self.section("general")
            dynamic = [i for i in general if self.store.items[i].fields["dynamic"]]
            static = [i for i in general if not self.store.items[i].fields["dynamic"]]
            chosen = self._ranked(dynamic, sims) + self._ranked(static, sims)[: max(0, c.top_k - len(dynamic))]
            sections.append(("General principles", chosen))
            if category != GENERAL:
                own = self._ranked(self.section("task_specific", category), sims)
                sections.append((f"Skills for {category} tasks", own if c.task_specific_top_k is None else own[: c.task_specific_top_k]))
        else:
            specific_k = c.top_k if c.task_specific_top_k is None else c.task_specific_top_k
            sections.append(("General principles", self._ranked(self.section("general"), sims, by_similarity=True)[: c.top_k]))
            sections.append(("Task-relevant skills", self._ranked(self.section("task_specific"), sims, by_similarity=True)[:specific_k]))
        sections.append(("Mistakes to avoid", self._ranked(self.section("mistake"), sims)[: c.mistakes_top_k]))
        return self._retrieval(sections, sims)

    def _ranked(self, positions: list[int], sims: np.ndarray, by_similarity: bool = False) -> list[int]:
        """A list's positions in the order shown: by MemRL's score with q_learning, else by similarity
        (embedding) or as written (template)."""
        if not positions or not (self.config.q_learning or by_similarity):
            return positions
        at = np.array(positions)
        order = -self._scores(at, sims) if self.config.q_learning else -sims[at]
        return at[np.argsort(order, kind="stable")].tolist()

    def _scores(self, at: np.ndarray, sims: np.ndarray) -> np.ndarray:
        q = np.array([self.store.items[i].fields["q_value"] for i in at], dtype=np.float64)
        return combined_score(self.q_rule, sims[at], q)

    def _retrieval(self, sections: list[tuple[str, list[int]]], sims: np.ndarray) -> Retrieval:
        items, blocks = [], []
        for heading, positions in sections:
            if not positions:
                continue
            scores = self._scores(np.array(positions), sims) if self.config.q_learning else [None] * len(positions)
            for i, score in zip(positions, scores):
                item = self.store.items[i]
                q = item.fields["q_value"] if self.config.q_learning else None
                items.append(RetrievedItem.of(item, float(sims[i]), q, None if score is None else float(score)))
            lines = "\n".join(self.store.items[i].content for i in positions)
            blocks.append(prompts.render("skillbank_section", heading=heading, items=lines).strip())
        if not items:
            return Retrieval(candidates=len(self.store))
        block = prompts.render("skillbank_memory_block", sections="\n\n".join(blocks)).strip()
        return Retrieval(items=items, prompt_block=block, candidates=len(self.store))

    # ---- learning --------------------------------------------------------------
    def learn(self, batch: list[Experience]) -> LearnResult:
        c = self.config
        calls = MemoryCalls(self.ctx)
        self._update_uses(batch)
        by_category: dict[str, list[Experience]] = {}
        for exp in batch:
            by_category.setdefault(category_of(exp.task), []).append(exp)
            self._count(exp)
        jobs: list[Job] = []
        for category, exps in by_category.items():
            successes = [e for e in exps if e.episode.success][: c.max_episodes_per_call]
            failures = [e for e in exps if not e.episode.success][: c.max_failures_per_call]
            if successes:
                jobs.extend(self._distil_skills(category, successes, calls))
            if failures:
                jobs.extend(self._distil_mistakes(category, failures, calls))
        if c.enable_dynamic_update:
            for category in sorted(self.window):  # sorted: the order a restored window has too
                jobs.extend(self._evolve(category, calls, by_category.get(category, batch)))

        async def ask_all():
            return await asyncio.gather(*(call for _, call in jobs))

        for (apply, _), answer in zip(jobs, self.ctx.run(ask_all()) if jobs else []):
            if answer is not None:
                apply(answer)
        return calls.result()

    def _update_uses(self, batch: list[Experience]) -> None:
        """Every injected skill or mistake: one more use and, with q_learning, MemRL's Q update, episode by episode."""
        for exp in batch:
            reward = reward_of(self.q_rule, exp.episode.success)
            for used in exp.episode.retrieved:
                if used.item_id in self.store:
                    fields = self.store.get(used.item_id).fields
                    fields["uses"] += 1
                    if self.config.q_learning:
                        fields["q_value"] = updated_q(self.q_rule, fields["q_value"], reward)

    def _count(self, exp: Experience) -> None:
        window = self.window.setdefault(category_of(exp.task), {"episodes": 0, "successes": 0, "failures": []})
        window["episodes"] += 1
        window["successes"] += int(exp.episode.success)
        if not exp.episode.success and len(window["failures"]) < FAILURES_KEPT:
            window["failures"].append(
                {
                    "provenance": Provenance.of(exp.episode).to_dict(),
                    "key": [float(x) for x in np.asarray(exp.key, dtype=np.float32).ravel()],
                    "digest": self._digest(exp),
                }
            )

    def _digest(self, exp: Experience) -> str:
        """An episode as the writer sees it: task, outcome and a success's first / a failure's last steps_shown steps."""
        c, ep = self.config, exp.episode
        turns = ep.turns[: c.steps_shown] if ep.success else ep.turns[-c.steps_shown :]
        skipped = len(ep.turns) - len(turns)
        lines = [f"> {t.action}\n  {t.observation.strip()[: c.observation_chars]}" for t in turns]
        if skipped:
            lines.insert(len(lines) if ep.success else 0, f"({skipped} more steps)")
        return prompts.render("skillbank_episode", task=exp.task.description, outcome=end_reason(ep), steps="\n".join(lines)).strip()

    def _known(self, positions: list[int], field: str) -> str:
        return "\n".join(f"- {self.store.items[i].fields[field]}" for i in positions) or "(none yet)"

    def _distil_skills(self, category: str, exps: list[Experience], calls: MemoryCalls) -> list[Job]:
        c = self.config
        general = self.section("general")
        own = self.section("task_specific", category) if category != GENERAL else []
        room = {
            "general": max(0, c.max_general_skills - len(general)),
            "task_specific": max(0, c.max_task_specific_skills - len(own)) if category != GENERAL else 0,
        }
        if not any(room.values()):
            return []
        wanted = [
            f'- "general_skills": at most {room["general"]} skills that hold for tasks of any kind;'
            if room["general"]
            else '- "general_skills": leave it empty (the bank has enough general skills);',
            f'- "task_specific_skills": at most {room["task_specific"]} skills for tasks of the category {category}.'
            if room["task_specific"]
            else '- "task_specific_skills": leave it empty.',
        ]
        prompt = prompts.render(
            "skillbank_skills",
            category=category,
            episodes="\n\n".join(self._digest(e) for e in exps),
            known=self._known(general + own, "title"),
            wanted="\n".join(wanted),
        )
        sources, keys = [Provenance.of(e.episode) for e in exps], [e.key for e in exps]

        def apply(answer: dict[str, list[dict[str, str]]]) -> None:
            for kind, skills in answer.items():
                if room[kind]:  # what was asked for; other calls of this batch may have filled the list since
                    where = category if kind == "task_specific" else GENERAL
                    cap = c.max_task_specific_skills if kind == "task_specific" else c.max_general_skills
                    self._add(kind, where, skills, sources, keys, dynamic=False, limit=cap - len(self.section(kind, where)))

        return [
            (
                apply,
                calls.ask(
                    sources[0].episode_id,
                    "skillbank_skills",
                    prompt,
                    parse_skills,
                    **call_settings(self.config.temperature, self.config.max_tokens),
                ),
            )
        ]

    def _distil_mistakes(self, category: str, exps: list[Experience], calls: MemoryCalls) -> list[Job]:
        mistakes = self.section("mistake")
        room = max(0, self.config.max_common_mistakes - len(mistakes))
        if not room:
            return []
        prompt = prompts.render(
            "skillbank_mistakes",
            category=category,
            episodes="\n\n".join(self._digest(e) for e in exps),
            known=self._known(mistakes, "description"),
            count=room,
        )
        sources, keys = [Provenance.of(e.episode) for e in exps], [e.key for e in exps]

        def apply(answer: list[dict[str, str]]) -> None:
            limit = self.config.max_common_mistakes - len(self.section("mistake"))
            self._add("mistake", category, answer, sources, keys, dynamic=False, limit=limit)

        return [
            (
                apply,
                calls.ask(
                    sources[0].episode_id,
                    "skillbank_mistakes",
                    prompt,
                    parse_mistakes,
                    **call_settings(self.config.temperature, self.config.max_tokens),
                ),
            )
        ]

    def _evolve(self, category: str, calls: MemoryCalls, batch: list[Experience]) -> list[Job]:
        """A call for new skills if the category's success rate since its last evolution is below update_threshold; resets its
        window. The call is charged to its first failure from `batch` (the batch whose learning evolves the category), or to
        the batch's first episode of the category: its failures may be from earlier batches, whose cost is logged already."""
        c, window = self.config, self.window[category]
        if window["episodes"] < c.evolve_min_episodes or window["successes"] / window["episodes"] >= c.update_threshold:
            return []
        del self.window[category]
        failures = window["failures"][: c.max_failures_per_call]
        known = self.section("general") + (self.section("task_specific", category) if category != GENERAL else [])
        prompt = prompts.render(
            "skillbank_evolve",
            category=category,
            successes=window["successes"],
            episodes=window["episodes"],
            failures="\n\n".join(f["digest"] for f in failures),
            known=self._known(known, "title"),
            count=c.max_new_skills,
        )
        sources = [Provenance(**f["provenance"]) for f in window["failures"]]
        keys = [np.array(f["key"], dtype=np.float32) for f in window["failures"]]
        in_batch = {exp.episode.episode_id for exp in batch}
        charged = next((s.episode_id for s in sources if s.episode_id in in_batch), batch[0].episode.episode_id)
        kind = "general" if category == GENERAL else "task_specific"

        def apply(answer: list[dict[str, str]]) -> None:
            self._add(kind, category, answer, sources, keys, dynamic=True, limit=c.max_new_skills)

        return [
            (
                apply,
                calls.ask(
                    charged,
                    "skillbank_evolve",
                    prompt,
                    parse_new_skills,
                    **call_settings(self.config.temperature, self.config.max_tokens),
                ),
            )
        ]

    def _add(
        self,
        kind: str,
        category: str,
        entries: list[dict[str, str]],
        sources: list[Provenance],
        keys: list[np.ndarray],
        *,
        dynamic: bool,
        limit: int,
    ) -> None:
        """Store up to `limit` new skills or mistakes (those repeating a stored title or description left out), each with the
        first source's provenance and all the sources' episode ids."""
        field = "description" if kind == "mistake" else "title"
        seen = {self.store.items[i].fields[field].lower() for i in self.section(kind, None if kind != "task_specific" else category)}
        new = []
        for entry in entries:
            if len(new) >= limit:
                break
            if entry[field].lower() in seen:
                continue
            seen.add(entry[field].lower())
            fields = {
                **entry,
                "kind": kind,
                "category": category,
                "dynamic": dynamic,
                "source_episodes": [p.episode_id for p in sources],
                "uses": 0,
                "q_value": self.config.q_init,
            }
            new.append(MemoryItem(self._next_id(kind, category, dynamic, len(new)), self._content(fields), sources[0], fields))
        if not new:
            return
        if self.ctx.embed is not None:
            rows = unit_rows(self.ctx.embed([self._key_text(m.fields) for m in new]))
        else:
            rows = np.stack([keys[0]] * len(new))  # env_intent keys: the source task's key
        self.store.add_many(new, rows)

    @staticmethod
    def _key_text(fields: dict[str, Any]) -> str:
        """What a skill's key embeds (SkillRL: title, principle and when_to_apply joined)."""
        if fields["kind"] == "mistake":
            return " ".join((fields["description"], fields["why_it_happens"], fields["how_to_avoid"])).strip()
        return " ".join((fields["title"], fields["principle"], fields["when_to_apply"])).strip()

    @staticmethod
    def _content(fields: dict[str, Any]) -> str:
        if fields["kind"] == "mistake":
            why = f" Why: {fields['why_it_happens']}" if fields["why_it_happens"] else ""
            return prompts.render(
                "skillbank_mistake", description=fields["description"], why=why, how_to_avoid=fields["how_to_avoid"]
            ).strip()
        when = f" Apply when: {fields['when_to_apply']}" if fields["when_to_apply"] else ""
        return prompts.render("skillbank_skill", title=fields["title"], principle=fields["principle"], when=when).strip()

    def _next_id(self, kind: str, category: str, dynamic: bool, pending: int) -> str:
        """SkillRL's ids: gen_NNN, <category>_NNN, err_NNN, dyn_NNN (evolved), numbered from 1 per prefix."""
        prefix = "dyn" if dynamic else {"general": "gen", "mistake": "err"}.get(kind, category)
        taken = sum(1 for item in self.store.items if item.id.rsplit("_", 1)[0] == prefix)
        return f"{prefix}_{taken + pending + 1:03d}"

    # ---- state -----------------------------------------------------------------
    def snapshot(self, path: Path) -> None:
        self.store.save(path)
        (path / "window.json").write_text(json.dumps(self.window, sort_keys=True))

    def restore(self, path: Path) -> None:
        self.store.load(path)
        self.window = json.loads((path / "window.json").read_text())

    def stats(self) -> MemoryStats:
        lists = {
            (item.fields["kind"], item.fields["category"] if item.fields["kind"] == "task_specific" else "") for item in self.store.items
        }
        return MemoryStats(items=len(self.store), bytes=self.store.nbytes(), groups=len(lists))

    def items(self) -> list[MemoryItem]:
        return list(self.store.items)


METHOD = SkillBank
