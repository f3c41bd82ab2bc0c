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
The most similar group of an episode's key is the top of its phase A search when the
episode was retrieved for (exact index): learn does not scan the groups a second time.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memrl_bench import prompts
from memrl_bench.llm import LLMError
from memrl_bench.methods.base import Experience, ItemStore, LearnResult, MemoryMethod, Query, trajectory_text
from memrl_bench.types import MemoryItem, MemoryStats, Provenance, Retrieval, RetrievedItem, Usage
from memrl_bench.vector_index import Hits, IndexConfig, top_k


@dataclass(frozen=True)
class PhaseA:
    """One query's phase A, kept for learn's group assignment: its key, the groups searched, the hits."""

    key: np.ndarray
    groups_searched: int  # hits cover the groups at positions [0, groups_searched)
    hits: Hits


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
    index: IndexConfig = Field(default_factory=IndexConfig, description="Phase A search over intent groups: exact (official results) or hnsw (approximate, for large memories).")

    @model_validator(mode="after")
    def _check(self) -> MemRLConfig:
        if self.selection != "greedy" and self.epsilon > 0:
            raise ValueError(f"epsilon={self.epsilon} applies to greedy selection only; selection={self.selection!r} explores by itself")
        return self


def _zscore(values: np.ndarray) -> np.ndarray:
    """(v - mean) / std within the pool; std taken as 1 when <= 1e-9 or one value (official).

    Written out as numpy's mean() and std() compute them (same operations, same bits),
    without their per-call overhead.
    """
    centred = values - values.sum() / len(values)
    std = np.sqrt((centred * centred).sum() / len(values)) if len(values) > 1 else 0.0
    return centred / (std if std > 1e-9 else 1.0)


# Numeric item fields mirrored into arrays, so phase B reads them without per-item lookups.
STAT_FIELDS = ("q_value", "visits", "successes", "failures", "group")


class MemRL(MemoryMethod):
    name = "memrl"

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = MemRLConfig(**cfg)
        self.store = ItemStore(columns=STAT_FIELDS)  # memories are found through their group, never by key
        self.group_keys = ItemStore(index=self.config.index)  # one row per intent group; its item holds the member ids
        self._members: tuple[np.ndarray, np.ndarray] | None = None  # memory positions grouped by group, and offsets
        self._phase_a: dict[str, PhaseA] = {}  # the last retrieve_batch's phase A by episode id

    # ---- retrieval -------------------------------------------------------------
    def retrieve(self, query: Query) -> Retrieval:
        return self.retrieve_batch([query])[0]

    def retrieve_batch(self, queries: list[Query]) -> list[Retrieval]:
        self._phase_a = {}
        if not queries or not len(self.group_keys):
            return [Retrieval() for _ in queries]
        # Phase A for the whole batch in one search (one screening product when exact), with
        # the keys learn stores, so that learn can take its nearest group from here.
        keys = np.stack([q.key for q in queries]).astype(np.float32)
        groups = self.group_keys.search(keys, self.config.k_groups, self.config.sim_threshold)
        if self._phase_a_finds_nearest_group():
            self._phase_a = {q.episode_id: PhaseA(key, len(self.group_keys), hits) for q, key, hits in zip(queries, keys, groups)}
        return [self._rank_and_select(q, hits) for q, hits in zip(queries, groups)]

    def _phase_a_finds_nearest_group(self) -> bool:
        """Whether phase A's top hit decides learn's group assignment as a search of all groups would.

        Exact search only (its top hit is the first maximum of a full scan). A group that
        phase A drops (sim < sim_threshold) is below add_similarity_threshold too, so it
        could not have been joined.
        """
        c = self.config
        return c.index.kind == "exact" and c.add_similarity_threshold >= c.sim_threshold

    def pool(self, group_sims: np.ndarray) -> tuple[list[str], np.ndarray]:
        """Phase A: member ids of the top k_groups intents above sim_threshold, with their group's sim."""
        top, count = top_k(group_sims, self.config.k_groups, self.config.sim_threshold)
        positions, sims = self._pool(Hits(top, group_sims[top], count))
        return self._ids(positions), sims

    def rank(self, ids: list[str], sims: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Phase B: drop Q < q_min, score, stable descending sort. Returns ids, sims, q, scores."""
        positions, sims, q, scores = self._score(self._positions(ids), np.asarray(sims, dtype=np.float64))
        order = np.argsort(-scores, kind="stable")
        return self._ids(positions[order]), sims[order], q[order], scores[order]

    def score(self, sims: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(1 - lambda) * sim_z + lambda * q_z, q_z z-scored within the pool and clipped to [-3, 3]."""
        c = self.config
        sim_z = (sims - c.sim_mean) / c.sim_std if c.sim_normalisation == "fixed" else _zscore(sims)
        return (1 - c.lambda_) * sim_z + c.lambda_ * np.minimum(np.maximum(_zscore(q), -3.0), 3.0)  # np.clip, without its wrapper's cost

    def select(self, ids: list[str], sims: np.ndarray, scores: np.ndarray, episode_id: str) -> list[int]:
        """Positions (in the ranked pool) of the k_select memories to inject."""
        return self._select(self._positions(ids), np.asarray(sims, dtype=np.float64), scores, episode_id)

    def _pool(self, groups: Hits) -> tuple[np.ndarray, np.ndarray]:
        """Memory positions of the chosen groups (group by group, members in order of writing), with their group's sim."""
        order, offsets = self._member_index()
        starts, ends = offsets[groups.positions], offsets[groups.positions + 1]
        positions = np.concatenate([order[s:e] for s, e in zip(starts, ends)]) if len(starts) else np.zeros(0, np.int64)
        return positions, np.repeat(groups.similarities.astype(np.float64), ends - starts)

    def _member_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Memory positions sorted by group (stable: in order of writing within a group), and each group's offset."""
        if self._members is None:
            groups = self.store.column("group").astype(np.int64)
            order = np.argsort(groups, kind="stable")
            self._members = order, np.searchsorted(groups[order], np.arange(len(self.group_keys) + 1))
        return self._members

    def _add_members(self, first_position: int, groups: np.ndarray) -> None:
        """Append new memories (positions first_position, ...) at the end of their groups: linear, no re-sort."""
        order, offsets = self._members
        n_groups = len(self.group_keys)
        offsets = np.concatenate([offsets, np.full(n_groups + 1 - len(offsets), offsets[-1])])  # new groups start empty
        by_group = np.argsort(groups, kind="stable")  # new memories of one old end position go in group order
        order = np.insert(order, offsets[groups[by_group] + 1], first_position + by_group)
        self._members = order, offsets + np.concatenate([[0], np.cumsum(np.bincount(groups, minlength=n_groups))])

    def _score(self, positions: np.ndarray, sims: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Phase B before sorting: drop Q < q_min and score. Returns positions, sims, q, scores."""
        c = self.config
        q = self.store.column("q_value")[positions]
        keep = q >= c.q_min
        if not keep.all():
            positions, sims, q = positions[keep], sims[keep], q[keep]
        if not len(positions):
            return positions, sims, q, q
        return positions, sims, q, self.score(sims, q)

    def _explores(self, episode_id: str) -> bool:
        """Whether this episode's choice is anything but the greedy top k_select."""
        c = self.config
        return c.selection != "greedy" or (c.epsilon > 0 and self.ctx.rng_for("epsilon", episode_id).random() < c.epsilon)

    def _select(self, positions: np.ndarray, sims: np.ndarray, scores: np.ndarray, episode_id: str) -> list[int]:
        """Indices into the ranked pool (memory positions, their sims and scores) of the memories to inject."""
        c = self.config
        k = min(c.k_select, len(positions))
        if c.selection == "greedy":
            if self._explores(episode_id):
                return sorted(self.ctx.rng_for("sample", episode_id).choice(len(positions), size=k, replace=False).tolist())
            return list(range(k))
        rng = self.ctx.rng_for(c.selection, episode_id)
        if c.selection == "softmax":
            logits = scores / c.softmax_temperature
            p = np.exp(logits - logits.max())
            return sorted(rng.choice(len(positions), size=k, replace=False, p=p / p.sum()).tolist())
        if c.selection == "ucb":
            visits = self.store.column("visits")[positions]
            bonus = c.ucb_c * np.sqrt(np.log(visits.sum() + 1.0) / (visits + 1.0))
            return np.argsort(-(scores + bonus), kind="stable")[:k].tolist()
        # Thompson: draw each memory's success rate from Beta(1 + successes, 1 + failures), turn it
        # into an expected reward, and rank by the same score with the drawn Q in place of Q, so
        # that only the treatment of uncertainty differs from greedy (similarity still counts).
        p = rng.beta(1 + self.store.column("successes")[positions], 1 + self.store.column("failures")[positions])
        q_drawn = c.reward_failure + (c.reward_success - c.reward_failure) * p
        return np.argsort(-self.score(sims, q_drawn), kind="stable")[:k].tolist()

    def _rank_and_select(self, query: Query, groups: Hits) -> Retrieval:
        positions, sims, q, scores = self._score(*self._pool(groups))
        if self._explores(query.episode_id):
            order = np.argsort(-scores, kind="stable")
            positions, sims, q, scores = positions[order], sims[order], q[order], scores[order]
            picks = self._select(positions, sims, scores, query.episode_id)
        else:  # greedy: only the top k_select of the stable sort is needed
            picks = top_k(scores, self.config.k_select)[0]
        chosen = [RetrievedItem.of(self.store.items[positions[i]], sims[i], float(q[i]), float(scores[i])) for i in picks]
        return Retrieval(items=chosen, prompt_block=self._prompt_block(chosen), candidates=len(positions))

    def _positions(self, ids: list[str]) -> np.ndarray:
        return np.array([self.store.index_of(i) for i in ids], dtype=np.int64)

    def _ids(self, positions: np.ndarray) -> list[str]:
        return [self.store.items[p].id for p in positions]

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
        if not batch:
            return LearnResult()
        contents, usage = self._write_contents(batch)
        for exp in batch:
            ep = exp.episode
            r = c.reward_success if ep.success else c.reward_failure
            for used in ep.retrieved:
                fields = self.store.get(used.item_id).fields
                fields["q_value"] += c.alpha * (r - fields["q_value"])
                fields["visits"] += 1
                fields["successes" if ep.success else "failures"] += 1
        # The memories are written after every update: updates touch only memories of earlier batches.
        self._write_batch(batch, contents)
        return LearnResult(usage_by_episode=usage)

    def _write(self, exp: Experience, content: str) -> None:
        """Store one episode's memory."""
        self._write_batch([exp], [content])

    def _write_batch(self, batch: list[Experience], contents: list[str]) -> None:
        """Store the episodes' memories in order, each in the most similar group (or a new one)."""
        keys = np.stack([exp.key for exp in batch]).astype(np.float32)
        nearest = self._nearest_groups(batch, keys)
        memories = []
        for exp, content, key, (old, searched) in zip(batch, contents, keys, nearest):
            group = self._group_for(exp, key, old, searched)
            self.group_keys.items[group].fields["members"].append(exp.episode.episode_id)
            fields = {"q_value": self.config.q_init, "visits": 0, "successes": 0, "failures": 0, "group": group}
            memories.append(MemoryItem(exp.episode.episode_id, content, Provenance.of(exp.episode), fields))
        first_position = len(self.store)
        self._member_index()  # built over the memories before this batch, then extended
        self.store.add_many(memories, keys)
        self._add_members(first_position, np.array([m.fields["group"] for m in memories], dtype=np.int64))

    def _nearest_groups(self, batch: list[Experience], keys: np.ndarray) -> list[tuple[Hits | None, int]]:
        """Per episode: the most similar of the groups at positions [0, n) first, and n.

        From the episode's phase A when it was retrieved for with this key; else one
        search, for those episodes at once, over the groups stored before the batch.
        Groups from n on are compared in _group_for.
        """
        known = [self._phase_a.pop(exp.episode.episode_id, None) for exp in batch]
        nearest: list[tuple[Hits | None, int]] = [(a.hits, a.groups_searched) if a is not None and np.array_equal(a.key, key) else (None, 0) for a, key in zip(known, keys)]
        missing = [i for i, (hits, _) in enumerate(nearest) if hits is None]
        if missing and len(self.group_keys):
            for i, hits in zip(missing, self.group_keys.search(keys[missing], 1)):
                nearest[i] = hits, len(self.group_keys)
        return nearest

    def _group_for(self, exp: Experience, key: np.ndarray, nearest_old: Hits | None, searched: int) -> int:
        """The most similar group (of the first `searched`, or founded since) if similar enough, else a new group."""
        group, best = -1, -np.inf
        if nearest_old is not None and len(nearest_old.positions):
            group, best = int(nearest_old.positions[0]), float(nearest_old.similarities[0])
        if len(self.group_keys) > searched:
            sims = self.group_keys.similarities(key, start=searched)
            new_best = int(np.argmax(sims))
            if sims[new_best] > best:  # on a tie the older group wins, as argmax over all groups would
                group, best = searched + new_best, float(sims[new_best])
        if best < self.config.add_similarity_threshold:
            group = len(self.group_keys)
            self.group_keys.add(MemoryItem(f"group-{group}", exp.task.description, Provenance.of(exp.episode), {"members": []}), key)
        return group

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
        self._members = None
        self._phase_a = {}

    def stats(self) -> MemoryStats:
        return MemoryStats(items=len(self.store), bytes=self.store.nbytes() + self.group_keys.keys.nbytes, groups=len(self.group_keys))

    def items(self) -> list[MemoryItem]:
        return list(self.store.items)


METHOD = MemRL
