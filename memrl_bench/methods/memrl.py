"""MemRL (arXiv 2601.03192): episodic memory re-ranked by a learned utility Q.

Faithful by default to the official implementation (MemTensor/MemRL,
configs/rl_alf_config.yaml and memrl/service/), with switches for the paper's
variant and, beyond both, for exploration, so the critique can be tested.

Memory is a set of intent groups (a task description's embedding); each group holds
the experiences written for that intent. For one query:

  Phase A: cosine similarity of the query to every stored intent; keep intents with
           sim >= sim_threshold; take the top k_groups; the pool is every memory of
           those groups, each inheriting its group's similarity.
  Phase B: drop candidates with Q < q_min; z-normalise similarity (fixed constants by
           default, within the pool in the paper) and Q (within the pool, clipped to
           [-3, 3]); score = (1 - lambda) * sim_z + lambda * q_z; stable sort.
  Select:  greedy top k_select, except with probability epsilon a uniform sample
           (epsilon = 0 in the ALFWorld config); or softmax / UCB / Thompson.

After each training batch, in order: every injected memory gets the Monte-Carlo update
Q <- Q + alpha * (r - Q), r = +1 on success and -1 on failure; then every episode,
success or failure, is written as a new memory, joining the most similar stored
intent group if its similarity is >= add_similarity_threshold, else founding a group.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memrl_bench import prompts
from memrl_bench.llm import LLMError
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, MemoryMethod, Query, trajectory_text, unit_rows
from memrl_bench.types import MemoryItem, MemoryStats, Provenance, RetrievedItem, Retrieval, Usage


class MemRLConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    k_groups: int = Field(5, ge=1, description="Phase A: intent groups whose memories form the candidate pool.")
    k_select: int = Field(3, ge=1, description="Memories injected into the prompt.")
    sim_threshold: float = Field(0.5, ge=-1, le=1, description="Phase A: minimum cosine similarity of a stored intent (official 0.5; paper delta 0.62 on ALFWorld).")
    q_min: float = Field(-10.0, description="Phase B: candidates with Q below this are dropped.")
    sim_normalisation: Literal["fixed", "pool"] = Field("fixed", description="sim_z from fixed constants (official) or z-scored within the pool (paper).")
    sim_mean: float = Field(0.5187, description="Fixed mean of similarity for sim_z (official ALFWorld constant).")
    sim_std: float = Field(0.1203, gt=0, description="Fixed std of similarity for sim_z (official ALFWorld constant).")
    lambda_: float = Field(0.5, alias="lambda", ge=0, le=1, description="Weight of q_z against sim_z in the score.")
    alpha: float = Field(0.3, ge=0, le=1, description="Learning rate of the Monte-Carlo Q update.")
    q_init: float = Field(0.0, description="Q of a newly written memory.")
    reward_success: float = Field(1.0, description="r of a successful episode.")
    reward_failure: float = Field(-1.0, description="r of a failed episode.")
    epsilon: float = Field(0.0, ge=0, le=1, description="Probability of a uniform random selection from the pool (0 in the ALFWorld config).")
    selection: Literal["greedy", "softmax", "ucb", "thompson"] = Field("greedy", description="How k_select memories are chosen from the ranked pool.")
    softmax_temperature: float = Field(1.0, gt=0, description="Temperature of softmax selection over scores.")
    ucb_c: float = Field(1.0, ge=0, description="Exploration bonus c * sqrt(ln(N + 1) / (visits + 1)) for UCB selection.")
    add_similarity_threshold: float = Field(0.9, ge=-1, le=1, description="A new memory joins a stored intent group at this similarity or above.")
    write_with_llm: bool = Field(True, description="On text tasks, store an LLM-written script (success) or reflection (failure) with the trajectory.")
    reflection_temperature: float = Field(0.3, ge=0, description="LLM temperature of failure reflections (official 0.3).")
    max_trajectory_chars: int = Field(2000, ge=0, description="Stored trajectory text is cut to this many characters.")

    @model_validator(mode="after")
    def _check(self) -> MemRLConfig:
        if self.selection != "greedy" and self.epsilon > 0:
            raise ValueError(f"epsilon={self.epsilon} applies to greedy selection only; selection={self.selection!r} explores by itself")
        return self


def _zscore(values: np.ndarray) -> np.ndarray:
    """(v - mean) / std within the pool; std taken as 1 when <= 1e-9 or one value (official)."""
    std = values.std() if len(values) > 1 else 0.0
    return (values - values.mean()) / (std if std > 1e-9 else 1.0)


class MemRL(MemoryMethod):
    name = "memrl"

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = MemRLConfig(**cfg)
        self.store = ItemStore()
        self.group_keys = ItemStore()  # one row per intent group; its item holds the member ids

    # ---- retrieval -------------------------------------------------------------
    def retrieve(self, query: Query) -> Retrieval:
        return self.retrieve_batch([query])[0]

    def retrieve_batch(self, queries: list[Query]) -> list[Retrieval]:
        if not queries or not len(self.group_keys):
            return [Retrieval() for _ in queries]
        # Phase A for the whole batch in one matrix product.
        sims = np.stack([q.key for q in queries]).astype(np.float32) @ self.group_keys.keys.T
        return [self._rank_and_select(q, row) for q, row in zip(queries, sims)]

    def pool(self, group_sims: np.ndarray) -> tuple[list[str], np.ndarray]:
        """Phase A: member ids of the top k_groups intents above sim_threshold, with their group's sim."""
        c = self.config
        eligible = np.flatnonzero(group_sims >= c.sim_threshold)
        top = eligible[np.argsort(-group_sims[eligible], kind="stable")[: c.k_groups]]
        ids: list[str] = []
        sims: list[float] = []
        for g in top:
            members = self.group_keys.items[g].fields["members"]
            ids.extend(members)
            sims.extend([float(group_sims[g])] * len(members))
        return ids, np.asarray(sims, dtype=np.float64)

    def rank(self, ids: list[str], sims: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Phase B: drop Q < q_min, score, stable descending sort. Returns ids, sims, q, scores."""
        c = self.config
        q = np.array([self.store.get(i).fields["q_value"] for i in ids], dtype=np.float64)
        keep = q >= c.q_min
        ids, sims, q = [i for i, k in zip(ids, keep) if k], sims[keep], q[keep]
        if not ids:
            return [], sims, q, q
        scores = self.score(sims, q)
        order = np.argsort(-scores, kind="stable")
        return [ids[i] for i in order], sims[order], q[order], scores[order]

    def score(self, sims: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(1 - lambda) * sim_z + lambda * q_z, q_z z-scored within the pool and clipped to [-3, 3]."""
        c = self.config
        sim_z = (sims - c.sim_mean) / c.sim_std if c.sim_normalisation == "fixed" else _zscore(sims)
        return (1 - c.lambda_) * sim_z + c.lambda_ * np.clip(_zscore(q), -3.0, 3.0)

    def select(self, ids: list[str], sims: np.ndarray, scores: np.ndarray, episode_id: str) -> list[int]:
        """Positions (in the ranked pool) of the k_select memories to inject."""
        c = self.config
        k = min(c.k_select, len(ids))
        if c.selection == "greedy":
            if c.epsilon > 0 and self.ctx.rng_for("epsilon", episode_id).random() < c.epsilon:
                return sorted(self.ctx.rng_for("sample", episode_id).choice(len(ids), size=k, replace=False).tolist())
            return list(range(k))
        rng = self.ctx.rng_for(c.selection, episode_id)
        if c.selection == "softmax":
            logits = scores / c.softmax_temperature
            p = np.exp(logits - logits.max())
            return sorted(rng.choice(len(ids), size=k, replace=False, p=p / p.sum()).tolist())
        fields = [self.store.get(i).fields for i in ids]
        if c.selection == "ucb":
            visits = np.array([f["visits"] for f in fields], dtype=np.float64)
            bonus = c.ucb_c * np.sqrt(np.log(visits.sum() + 1.0) / (visits + 1.0))
            return np.argsort(-(scores + bonus), kind="stable")[:k].tolist()
        # Thompson: draw each memory's success rate from Beta(1 + successes, 1 + failures), turn it
        # into an expected reward, and rank by the same score with the drawn Q in place of Q, so
        # that only the treatment of uncertainty differs from greedy (similarity still counts).
        p = rng.beta([1 + f["successes"] for f in fields], [1 + f["failures"] for f in fields])
        q_drawn = c.reward_failure + (c.reward_success - c.reward_failure) * p
        return np.argsort(-self.score(sims, q_drawn), kind="stable")[:k].tolist()

    def _rank_and_select(self, query: Query, group_sims: np.ndarray) -> Retrieval:
        ids, sims, q, scores = self.rank(*self.pool(group_sims))
        chosen = [RetrievedItem.of(self.store.get(ids[i]), sims[i], float(q[i]), float(scores[i])) for i in self.select(ids, sims, scores, query.episode_id)]
        return Retrieval(items=chosen, prompt_block=self._prompt_block(chosen), candidates=len(ids))

    def _prompt_block(self, chosen: list[RetrievedItem]) -> str:
        if not chosen:
            return ""
        wins = [self.store.get(r.item_id).content for r in chosen if r.source_success]
        losses = [self.store.get(r.item_id).content for r in chosen if not r.source_success]
        return prompts.render(
            "memrl_memory_block",
            successes=prompts.render("memrl_successes", items="\n\n".join(wins)) if wins else "",
            failures=prompts.render("memrl_failures", items="\n\n".join(losses)) if losses else "",
        ).strip()

    # ---- learning --------------------------------------------------------------
    def learn(self, batch: list[Experience]) -> LearnResult:
        c = self.config
        contents, usage = self._write_contents(batch)
        for exp, content in zip(batch, contents):
            ep = exp.episode
            r = c.reward_success if ep.success else c.reward_failure
            for used in ep.retrieved:
                fields = self.store.get(used.item_id).fields
                fields["q_value"] += c.alpha * (r - fields["q_value"])
                fields["visits"] += 1
                fields["successes" if ep.success else "failures"] += 1
            self._write(exp, content)
        return LearnResult(usage_by_episode=usage)

    def _write(self, exp: Experience, content: str) -> None:
        ep, c = exp.episode, self.config
        key = unit_rows(exp.key.reshape(1, -1))[0]
        group = -1
        if len(self.group_keys):
            sims = self.group_keys.similarities(key)
            best = int(np.argmax(sims))
            group = best if sims[best] >= c.add_similarity_threshold else -1
        if group < 0:
            group = len(self.group_keys)
            self.group_keys.add(MemoryItem(f"group-{group}", exp.task.description, Provenance.of(ep), {"members": []}), key)
        fields = {"q_value": c.q_init, "visits": 0, "successes": 0, "failures": 0, "group": group}
        self.store.add(MemoryItem(ep.episode_id, content, Provenance.of(ep), fields), key)
        self.group_keys.items[group].fields["members"].append(ep.episode_id)

    def _write_contents(self, batch: list[Experience]) -> tuple[list[str], dict[str, Usage]]:
        """Memory text per episode: with an LLM, a script (success) or reflection (failure) + trajectory."""
        c = self.config
        trajectories = [trajectory_text(exp.episode, c.max_trajectory_chars) for exp in batch]
        if not (c.write_with_llm and self.ctx.llm is not None):
            return [f"Task: {exp.task.description}\nOutcome: {'success' if exp.episode.success else 'failure'}\n{t}".rstrip() for exp, t in zip(batch, trajectories)], {}

        async def summarise(exp: Experience, trajectory: str):
            template = "memrl_script" if exp.episode.success else "memrl_reflection"
            overrides = {} if exp.episode.success else {"temperature": c.reflection_temperature}
            messages = [{"role": "user", "content": prompts.render(template, task=exp.task.description, trajectory=trajectory)}]
            return await self.ctx.llm.chat(messages, **overrides)

        async def all_summaries():
            return await asyncio.gather(*(summarise(e, t) for e, t in zip(batch, trajectories)), return_exceptions=True)

        contents, usage = [], {}
        for exp, trajectory, result in zip(batch, trajectories, self.ctx.run(all_summaries())):
            if isinstance(result, LLMError):
                summary, call_usage = "(not available: the LLM call failed)", Usage(calls=1, failures=1)
            elif isinstance(result, BaseException):
                raise result
            else:
                summary, call_usage = result.text.strip(), result.usage
            usage[exp.episode.episode_id] = call_usage
            label = "Script" if exp.episode.success else "Reflection"
            contents.append(prompts.render("memrl_item", task=exp.task.description, summary_label=label, summary=summary, trajectory=trajectory))
        return contents, usage

    # ---- state -----------------------------------------------------------------
    def snapshot(self, path: Path) -> None:
        self.store.save(path)
        groups = path / "groups"
        groups.mkdir(exist_ok=True)
        self.group_keys.save(groups)

    def restore(self, path: Path) -> None:
        self.store.load(path)
        self.group_keys.load(path / "groups")

    def stats(self) -> MemoryStats:
        return MemoryStats(items=len(self.store), bytes=self.store.nbytes() + self.group_keys.keys.nbytes, groups=len(self.group_keys))

    def items(self) -> list[MemoryItem]:
        return list(self.store.items)


METHOD = MemRL
