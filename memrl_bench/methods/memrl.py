"""MemRL (arXiv 2601.03192): episodic memory re-ranked by a learned utility Q.

Faithful by default to the official implementation (MemTensor/MemRL at 7c3beba:
memrl/service/memory_service.py retrieve_query / add_memories / update_values and
value_driven.py QValueUpdater), quirks included, each quirk behind a switch that
corrects it; the official settings of each benchmark are presets
(memrl_bench/conf/memrl_preset/, chosen by the env). Beyond the official code: a
switch for the paper's similarity normalisation and, for the critique, softmax, UCB
and Thompson selection. tests/contracts/test_memrl_official.py runs the official code beside
this one on the same batches.

Memory is a set of intent groups (a task description and its key); each group holds
the memories written for that intent. For one query:

  Phase A: float64 cosine of the query to every group key (memrl_bench.core.vector_index);
           keep groups with sim >= sim_threshold; take the top k_groups; the pool is
           every memory of those groups, each with its group's sim.
  Phase B: each candidate's Q, plus recency_boost when > 0, floored at q_floor. The
           mean and std of Q are taken over the whole pool, then candidates with
           Q < q_min are dropped; score = sim_z * (1 - lambda) + q_z * lambda, sim_z
           from fixed constants (the paper: within the pool), q_z clipped to [-3, 3];
           stable descending sort.
  Select:  greedy top k_select, except with probability epsilon a uniform sample (in
           the order drawn); or softmax / UCB / Thompson.

After each training batch: every injected memory, episode by episode in batch order,
gets Q <- (1 - alpha) * Q + alpha * (r + gamma * 0), floored at q_floor (the official
runners pass no next state). Then every episode is written as a new memory with Q
q_init (q_init_failure after a failure). It joins the most similar group of its own
retrieval's phase A list (taken before this batch's writes) if that similarity is >=
add_similarity_threshold and the retrieval returned memories; otherwise it founds a
group keyed by its task text, and a group already keyed by that text is taken over:
its members are orphaned, kept in memory but never retrieved again. learn() returns
each Q update (Q before and after, the reward) and each write (Q, group) per episode,
for the run's transcripts.

Official quirks and their switches (false = official):
  group_within_batch          a new memory may also join a group founded earlier in
                              the same batch (official: two new tasks at cosine 0.95
                              in one batch found two groups);
  keep_repeated_task_members  a memory founding a group for a task text that already
                              has one joins it (official: orphans its members);
  q_stats_after_q_min         phase B's mean and std of Q over the candidates that
                              pass q_min (official: over the whole pool);
  join_after_empty_retrieval  a memory whose retrieval returned nothing (every
                              candidate below q_min) may still join a group its phase
                              A found (official: it founds a group).

Step level (retrieval_granularity=step, not in the official code; after SLEA-RL, arXiv
2603.18079, see methods/step_library.py): every executed step of a training episode after the
first is also kept in a step library with a utility q (q_init, or q_init_failure after a
failure); each later step is shown its observation cluster's top steps by q. Step-level credit
without a trained critic: after the batch, every step memory shown at step t of an episode of T
steps gets q <- q + alpha * (G_t - q), G_t = step_gamma^(T-1-t) * r, r the episode's reward as
above (SLEA-RL's discounted step return, gamma 0.95; its normalised step advantage is for the
policy gradient, which is training and out of scope).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from memrl_bench import prompts
from memrl_bench.core.schema import MemoryItem, MemoryStats, Provenance, Retrieval, RetrievedItem, Usage
from memrl_bench.core.vector_index import Hits, IndexConfig, empty_hits, top_k, unit_rows
from memrl_bench.llm import LLMError
from memrl_bench.methods.base import (
    Experience,
    ItemStore,
    LearnResult,
    MemoryMethod,
    Query,
    end_reason,
    memory_call,
    memory_op,
    trajectory_text,
)
from memrl_bench.methods.step_library import StepLibrary, StepSettings

ORPHANED = -1  # the group of a memory whose group was taken over by a later memory of the same task text
NEXT_STATE_VALUE = 0.0  # max Q of the next state in the Q target: the official runners pass none


@dataclass
class PhaseA:
    """One retrieval as learn needs it: the query key, its phase A list, and whether it returned memories."""

    key: np.ndarray
    hits: Hits
    returned: bool


# The official quirks with their corrections (see the module docstring); false = official.
QUIRK_SWITCHES = ("group_within_batch", "keep_repeated_task_members", "q_stats_after_q_min", "join_after_empty_retrieval")


class MemRLConfig(StepSettings):
    model_config = ConfigDict(populate_by_name=True)  # "lambda" in configs, lambda_ in code
    unlisted = (*StepSettings.unlisted, "step_gamma")

    k_groups: int = Field(
        5, ge=1, description="Phase A: intent groups whose memories form the candidate pool (official memory.k_retrieve)."
    )
    k_select: int = Field(3, ge=1, description="Memories injected into the prompt (official rl_config.topk).")
    sim_threshold: float = Field(
        0.5, ge=-1, le=1, description="Phase A: minimum cosine similarity of a stored intent (official 0.5; paper delta 0.62 on ALFWorld)."
    )
    q_min: float = Field(-10.0, description="Phase B: candidates with Q below this are dropped (official q_min_threshold).")
    sim_normalisation: Literal["fixed", "pool"] = Field(
        "fixed", description="sim_z from fixed constants (official) or z-scored within the pool (paper)."
    )
    sim_mean: float = Field(0.5187, description="Fixed mean of similarity for sim_z (official sim_norm_mean).")
    sim_std: float = Field(0.1203, gt=0, description="Fixed std of similarity for sim_z (official sim_norm_std).")
    lambda_: float = Field(
        0.5, alias="lambda", ge=0, le=1, description="Weight of q_z in the score; sim_z gets 1 - lambda (official weight_q / weight_sim)."
    )
    alpha: float = Field(0.3, ge=0, le=1, description="Learning rate of the Monte-Carlo Q update.")
    gamma: float = Field(
        0.0,
        description=(
            "Discount of the next state's max Q in the target r + gamma * max Q'; the official runners pass no next state, so the target "
            "is r."
        ),
    )
    q_init: float = Field(0.0, description="Q of a new memory from a successful episode (official q_init_pos).")
    q_init_failure: float | None = Field(None, description="Q of a new memory from a failed episode (official q_init_neg); null = q_init.")
    q_floor: float | None = Field(
        None, description="Q never goes below this, in the update and in phase B (official q_floor; LLB 0.0); null = no floor."
    )
    recency_boost: float = Field(
        0.0, description="Added to every candidate's Q in phase B when > 0 (official: every memory carries a last-used time)."
    )
    reward_success: float = Field(1.0, description="r of a successful episode.")
    reward_failure: float = Field(-1.0, description="r of a failed episode.")
    epsilon: float = Field(
        0.0, ge=0, le=1, description="Probability of a uniform random selection from the pool (0 in the ALFWorld config)."
    )
    selection: Literal["greedy", "softmax", "ucb", "thompson"] = Field(
        "greedy", description="How k_select memories are chosen from the ranked pool."
    )
    softmax_temperature: float = Field(1.0, gt=0, description="Temperature of softmax selection over scores.")
    ucb_c: float = Field(1.0, ge=0, description="Exploration bonus c * sqrt(ln(N + 1) / (visits + 1)) for UCB selection.")
    add_similarity_threshold: float = Field(
        0.9, ge=-1, le=1, description="A new memory joins an intent group of its retrieval at this similarity or above."
    )
    group_within_batch: bool = Field(
        False,
        description=(
            "Correction: a new memory may also join a group founded earlier in its learn batch (official: only groups its retrieval found)."
        ),
    )
    keep_repeated_task_members: bool = Field(
        False,
        description="Correction: a memory founding a group for a task text that has one joins it (official: orphans the old members).",
    )
    q_stats_after_q_min: bool = Field(
        False, description="Correction: phase B's mean and std of Q over the candidates with Q >= q_min (official: over the whole pool)."
    )
    join_after_empty_retrieval: bool = Field(
        False,
        description=(
            "Correction: a memory whose retrieval returned nothing may still join a group of its phase A (official: founds a group)."
        ),
    )
    write_with_llm: bool = Field(
        True, description="On text tasks, store an LLM-written script (success) or reflection (failure) with the trajectory."
    )
    reflection_temperature: float = Field(0.3, ge=0, description="LLM temperature of failure reflections (official 0.3).")
    max_trajectory_chars: int = Field(2000, ge=0, description="Stored trajectory text is cut to this many characters.")
    index: IndexConfig = Field(
        default_factory=IndexConfig,
        description="Phase A search over intent groups: exact (official results) or hnsw (approximate, for large memories).",
    )
    step_gamma: float = Field(
        0.95, ge=0, le=1, description="Step level: discount of the episode's reward back to a step, G_t = step_gamma^(T-1-t) r (SLEA-RL)."
    )

    @model_validator(mode="after")
    def _check(self) -> MemRLConfig:
        if self.selection != "greedy" and self.epsilon > 0:
            raise ValueError(f"epsilon={self.epsilon} applies to greedy selection only; selection={self.selection!r} explores by itself")
        return self


OFFICIAL_SIMILARITY = {"sim_mean": 0.5187, "sim_std": 0.1203, "sim_threshold": 0.5}  # calibrated for MemRL's own embedder


def calibrate_similarity(train_keys: np.ndarray, texts: list[str]) -> dict[str, float]:
    """sim_mean, sim_std and sim_threshold for another embedder, from TRAINING tasks only.

    Each training task's best cosine to the other training tasks (its own text and
    duplicates left out: what a new training query meets in memory) gives the distribution;
    sim_mean and sim_std are its mean and std, and the threshold sits at the same z-score
    as the official one ((0.5 - 0.5187) / 0.1203 = -0.155), so it removes about the same
    share of retrievals as it did with the embedder the constants were made for.
    scripts/memrl_similarity.py prints them per env; BENCHMARKS.md lists MiniLM's.
    """
    keys = unit_rows(np.asarray(train_keys, dtype=np.float64))
    sims = keys @ keys.T
    same = np.array([[a == b for b in texts] for a in texts])
    sims[same] = -np.inf
    best = sims.max(axis=1)
    best = best[np.isfinite(best)]
    if not len(best):
        raise ValueError("every training task has the same text: there is no similarity distribution to calibrate from")
    mean, std = float(best.mean()), float(best.std())
    z = (OFFICIAL_SIMILARITY["sim_threshold"] - OFFICIAL_SIMILARITY["sim_mean"]) / OFFICIAL_SIMILARITY["sim_std"]
    return {"sim_mean": mean, "sim_std": max(std, 1e-6), "sim_threshold": mean + z * std}


def _summary_template(exp: Experience) -> str:
    return "memrl_script" if exp.episode.success else "memrl_reflection"


def _zscore(values: np.ndarray, stats_of: np.ndarray | None = None) -> np.ndarray:
    """(v - mean) / std, mean and std of `stats_of` (default: the values); std taken as 1 when <= 1e-9 or one value (official).

    Written out as numpy's mean() and std() compute them, without their per-call overhead.
    """
    stats_of = values if stats_of is None else stats_of
    mean = stats_of.sum() / len(stats_of)
    centred = stats_of - mean
    std = np.sqrt((centred * centred).sum() / len(stats_of)) if len(stats_of) > 1 else 0.0
    return (values - mean) / (std if std > 1e-9 else 1.0)


def reward_of(config: MemRLConfig, success: bool) -> float:
    """r of an episode: reward_success or reward_failure."""
    return config.reward_success if success else config.reward_failure


def updated_q(config: MemRLConfig, before: float, reward: float) -> float:
    """The Monte-Carlo update of a used memory: Q <- (1 - alpha) Q + alpha * (r + gamma * max Q'), floored at q_floor
    (official QValueUpdater). Also skillbank's Q (q_learning), so both learn utilities by this one rule."""
    target = reward + config.gamma * NEXT_STATE_VALUE
    q = (1.0 - config.alpha) * before + config.alpha * target
    return q if config.q_floor is None else max(config.q_floor, q)


def combined_score(config: MemRLConfig, sims: np.ndarray, q: np.ndarray, q_stats_of: np.ndarray | None = None) -> np.ndarray:
    """Phase B's score: sim_z * (1 - lambda) + q_z * lambda, q_z z-scored (by `q_stats_of`, default q) and clipped to [-3, 3]."""
    c = config
    sim_z = (sims - c.sim_mean) / c.sim_std if c.sim_normalisation == "fixed" else _zscore(sims)
    q_z = np.minimum(np.maximum(_zscore(q, q_stats_of), -3.0), 3.0)  # np.clip, without its wrapper's cost
    return sim_z * (1 - c.lambda_) + q_z * c.lambda_  # the official order of operations


# Numeric item fields mirrored into arrays, so phase B reads them without per-item lookups.
STAT_FIELDS = ("q_value", "visits", "successes", "failures", "group")


class MemRL(MemoryMethod):
    name = "memrl"
    Settings = MemRLConfig

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.config = MemRLConfig(**cfg)
        self.store = ItemStore(columns=STAT_FIELDS)  # memories are found through their group, never by key
        self.group_keys = ItemStore(index=self.config.index)  # one row per intent group; its item holds the task text and the member ids
        self._members: tuple[np.ndarray, np.ndarray] | None = None  # memory positions grouped by group, and offsets
        self._group_of_text: dict[str, int] | None = None  # group position by task text (the official dict's key)
        self.steps = StepLibrary(self.config)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(f"memrl_{name}" for name in QUIRK_SWITCHES if getattr(self.config, name))

    # ---- retrieval -------------------------------------------------------------
    def retrieve(self, query: Query) -> Retrieval:
        return self.retrieve_batch([query])[0]

    def retrieve_batch(self, queries: list[Query]) -> list[Retrieval]:
        # Phase A for the whole batch in one search; each retrieval's phase A travels as its
        # trace, so that learn takes each new memory's group from its own retrieval, as the
        # official code does.
        keys = np.stack([q.key for q in queries]).astype(np.float32) if queries else np.zeros((0, 0), np.float32)
        retrievals = []
        found = self._search(keys)
        for query, key, hits, top in zip(queries, keys, found, self._top_similarities(keys, found)):
            retrieval = self._rank_and_select(query, hits)
            retrieval.info = {"top_similarity": top, "threshold": self.config.sim_threshold}
            retrieval.trace = PhaseA(key, hits, bool(retrieval.items))
            retrievals.append(retrieval)
        return retrievals

    def retrieve_step(self, query: Query, observation: str, step: int) -> Retrieval:
        return self.steps.retrieve(observation, rank_by="utility")

    def _top_similarities(self, keys: np.ndarray, found: list[Hits]) -> list[float | None]:
        """Each query's best similarity to any stored intent, below sim_threshold too (None:
        memory is empty): what the threshold is judged against (metrics' retrieval_similarity)."""
        if not len(self.group_keys):
            return [None] * len(keys)
        top: list[float | None] = [float(h.similarities[0]) if len(h.positions) else None for h in found]
        below = [i for i, t in enumerate(top) if t is None]  # nothing above the threshold: search without it
        for i, hits in zip(below, self.group_keys.search(keys[below], 1) if below else []):
            top[i] = float(hits.similarities[0])
        return top

    def _search(self, keys: np.ndarray) -> list[Hits]:
        """Phase A per key: the top k_groups groups with sim >= sim_threshold."""
        if not len(self.group_keys):
            return [empty_hits() for _ in keys]
        return self.group_keys.search(keys, self.config.k_groups, self.config.sim_threshold)

    def score(self, sims: np.ndarray, q: np.ndarray, q_stats_of: np.ndarray | None = None) -> np.ndarray:
        return combined_score(self.config, sims, q, q_stats_of)

    def _pool(self, groups: Hits) -> tuple[np.ndarray, np.ndarray]:
        """Memory positions of the chosen groups (group by group, members in order of writing), with their group's sim."""
        order, offsets = self._member_index()
        starts, ends = offsets[groups.positions], offsets[groups.positions + 1]
        positions = np.concatenate([order[s:e] for s, e in zip(starts, ends)]) if len(starts) else np.zeros(0, np.int64)
        return positions, np.repeat(groups.similarities.astype(np.float64), ends - starts)

    def _member_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Memory positions sorted by group (stable: in order of writing within a group; orphans first, in no group),
        and each group's offset."""
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

    def _q_estimates(self, positions: np.ndarray) -> np.ndarray:
        """Q as phase B reads it: stored Q, plus recency_boost when > 0, then floored at q_floor (official order)."""
        c = self.config
        q = self.store.column("q_value")[positions]
        if c.recency_boost > 0:
            q = q + c.recency_boost
        return q if c.q_floor is None else np.maximum(q, c.q_floor)

    def _score(self, positions: np.ndarray, sims: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Phase B before sorting: Q estimates, drop Q < q_min, score. Returns positions, sims, q, scores."""
        c = self.config
        q = pool_q = self._q_estimates(positions)
        keep = q >= c.q_min
        if not keep.all():
            positions, sims, q = positions[keep], sims[keep], q[keep]
        if not len(positions):
            return positions, sims, q, q
        return positions, sims, q, self.score(sims, q, q if c.q_stats_after_q_min else pool_q)

    def _explores(self, episode_id: str) -> bool:
        """Whether this episode's choice is anything but the greedy top k_select."""
        c = self.config
        return c.selection != "greedy" or (c.epsilon > 0 and self.ctx.rng_for("epsilon", episode_id).random() < c.epsilon)

    def _select(self, positions: np.ndarray, sims: np.ndarray, scores: np.ndarray, episode_id: str) -> list[int]:
        """Indices into the ranked pool (memory positions, their sims and scores) of the memories to inject."""
        c = self.config
        k = min(c.k_select, len(positions))
        if c.selection == "greedy":
            if self._explores(episode_id):  # a uniform sample, in the order drawn (official random.sample)
                return self.ctx.rng_for("sample", episode_id).choice(len(positions), size=k, replace=False).tolist()
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
        if not len(positions):
            return Retrieval()
        if self._explores(query.episode_id):
            order = np.argsort(-scores, kind="stable")
            positions, sims, q, scores = positions[order], sims[order], q[order], scores[order]
            picks = self._select(positions, sims, scores, query.episode_id)
        else:  # greedy: only the top k_select of the stable sort is needed
            picks = top_k(scores, self.config.k_select)[0]
        chosen = [RetrievedItem.of(self.store.items[positions[i]], sims[i], float(q[i]), float(scores[i])) for i in picks]
        return Retrieval(items=chosen, prompt_block=self._prompt_block(chosen), candidates=len(positions))

    def _prompt_block(self, chosen: list[RetrievedItem]) -> str:
        """Successes, then failures, under the official ALFWorld agent's headers (memrl/agent/memp_agent.py)."""
        if not chosen:
            return ""
        wins = [self.store.get(r.item_id).content for r in chosen if r.source_success]
        losses = [self.store.get(r.item_id).content for r in chosen if not r.source_success]
        return prompts.render(
            "memrl_memory_block",
            successes=prompts.render("memrl_successes", items="\n".join(wins)) if wins else "",
            failures=prompts.render("memrl_failures", items="\n".join(losses)) if losses else "",
        ).strip()

    # ---- learning --------------------------------------------------------------
    def learn(self, batch: list[Experience]) -> LearnResult:
        if not batch:
            return LearnResult()
        contents, usage, calls = self._write_contents(batch)
        retrievals = self._retrievals(batch)  # as retrieved: before this batch's Q updates and writes
        updates = self._update_q(batch)
        added = self._write_batch(batch, contents, retrievals)
        ops = {episode_id: updates[episode_id] + [added[episode_id]] for episode_id in added}
        if self.step_level:
            for exp in batch:
                ops[exp.episode.episode_id] += self._learn_steps(exp.episode)
        return LearnResult(usage_by_episode=usage, calls_by_episode=calls, ops_by_episode=ops)

    def _learn_steps(self, ep) -> list[dict]:
        """Step-level credit for the step memories the episode's steps were shown, then its own steps
        stored (module docstring). Returns the memory_op records."""
        c = self.config
        reward = c.reward_success if ep.success else c.reward_failure
        done, last = [], len(ep.turns) - 1
        for t, turn in enumerate(ep.turns):
            for used in turn.retrieval.items if turn.retrieval is not None else []:
                fields = self.steps.get(used.item_id).fields
                before, target = fields["q_value"], c.step_gamma ** (last - t) * reward
                fields["q_value"] = before + c.alpha * (target - before)
                fields["visits"] += 1
                done.append(
                    memory_op("step_q_update", used.item_id, q_before=float(before), q_after=float(fields["q_value"]), reward=target)
                )
        q_init = c.q_init if ep.success or c.q_init_failure is None else c.q_init_failure
        done += [memory_op("add_step", item.id, q=q_init, group=item.fields["cluster"]) for item in self.steps.add(ep, q_init)]
        return done

    def _retrievals(self, batch: list[Experience]) -> list[PhaseA]:
        """Each episode's phase A: its retrieval's trace, or (none with this key, e.g. a batch
        replayed from the log on resume) redone now, against the same memory as then."""
        keys = np.stack([exp.key for exp in batch]).astype(np.float32)
        kept = [exp.retrieval.trace if exp.retrieval is not None else None for exp in batch]
        found: list[PhaseA | None] = [a if isinstance(a, PhaseA) and np.array_equal(a.key, key) else None for a, key in zip(kept, keys)]
        missing = [i for i, a in enumerate(found) if a is None]
        for i, hits in zip(missing, self._search(keys[missing]) if missing else []):
            positions, _ = self._pool(hits)
            found[i] = PhaseA(keys[i], hits, bool((self._q_estimates(positions) >= self.config.q_min).any()))
        return found

    def _update_q(self, batch: list[Experience]) -> dict[str, list[dict]]:
        """Every injected memory, episode by episode: Q <- (1 - alpha) Q + alpha * target, floored
        (official QValueUpdater). Returns each episode's updates (memory_op records)."""
        c = self.config
        updates: dict[str, list[dict]] = {}
        for exp in batch:
            ep = exp.episode
            reward = reward_of(c, ep.success)
            done = updates[ep.episode_id] = []
            for used in ep.retrieved:
                fields = self.store.get(used.item_id).fields
                before = fields["q_value"]
                fields["q_value"] = updated_q(c, before, reward)
                fields["visits"] += 1
                fields["successes" if ep.success else "failures"] += 1
                done.append(memory_op("q_update", used.item_id, q_before=float(before), q_after=float(fields["q_value"]), reward=reward))
        return updates

    def _write_batch(self, batch: list[Experience], contents: list[str], retrievals: list[PhaseA]) -> dict[str, dict]:
        """Store the episodes' memories in order, each joining a group or founding one. Returns
        each episode's write (a memory_op record: its memory, Q, group, and the memories it orphaned)."""
        c = self.config
        first_new_group = len(self.group_keys)
        group_of: dict[str, int] = {}  # this batch's memories
        orphans_of: dict[str, list[str]] = {}
        orphaned = False
        for exp, found in zip(batch, retrievals):
            episode_id = exp.episode.episode_id
            group = self._joined_group(found, first_new_group)
            if group is None:
                group, orphans = self._found_group(exp, found.key)
                for member in orphans:
                    if member in group_of:
                        group_of[member] = ORPHANED
                    else:
                        self.store.get(member).fields["group"] = ORPHANED
                orphaned = orphaned or bool(orphans)
                if orphans:
                    orphans_of[episode_id] = orphans
            self.group_keys.items[group].fields["members"].append(episode_id)
            group_of[episode_id] = group
        memories = []
        for exp, content in zip(batch, contents):
            ep = exp.episode
            q_init = c.q_init if ep.success or c.q_init_failure is None else c.q_init_failure
            fields = {"q_value": q_init, "visits": 0, "successes": 0, "failures": 0, "group": group_of[ep.episode_id]}
            memories.append(MemoryItem(ep.episode_id, content, Provenance.of(ep), fields))
        first_position = len(self.store)
        if not orphaned:
            self._member_index()  # built over the memories before this batch, then extended
        self.store.add_many(memories, np.stack([exp.key for exp in batch]))
        if orphaned:
            self._members = None  # rebuilt when next needed
        else:
            self._add_members(first_position, np.array([m.fields["group"] for m in memories], dtype=np.int64))
        return {
            m.id: memory_op(
                "add",
                m.id,
                q=m.fields["q_value"],
                group=m.fields["group"],
                **({"orphaned": orphans_of[m.id]} if m.id in orphans_of else {}),
            )
            for m in memories
        }

    def _joined_group(self, found: PhaseA, first_new_group: int) -> int | None:
        """The group a new memory joins: its retrieval's most similar group (and, with
        group_within_batch, the groups founded since) if similar enough; else None."""
        c = self.config
        group, best = None, -np.inf
        if len(found.hits.positions) and (found.returned or c.join_after_empty_retrieval):
            group, best = int(found.hits.positions[0]), float(found.hits.similarities[0])  # the first maximum of the list
        if c.group_within_batch and len(self.group_keys) > first_new_group:
            sims = self.group_keys.similarities(found.key, start=first_new_group)
            newest = int(np.argmax(sims))
            if sims[newest] > best:  # on a tie the older group wins
                group, best = first_new_group + newest, float(sims[newest])
        return group if best >= c.add_similarity_threshold else None

    def _found_group(self, exp: Experience, key: np.ndarray) -> tuple[int, list[str]]:
        """A group for this memory's task text: a new one, or the one already keyed by the text.

        Officially (a dict keyed by text) the existing group is taken over: this memory
        becomes its only member, the others are orphaned, and the key is this memory's.
        Returns the group and the orphaned member ids.
        """
        text = exp.task.description
        groups = self._groups_by_text()
        existing = groups.get(text)
        if existing is None:
            groups[text] = len(self.group_keys)
            self.group_keys.add(MemoryItem(f"group-{len(self.group_keys)}", text, Provenance.of(exp.episode), {"members": []}), key)
            return groups[text], []
        if self.config.keep_repeated_task_members:
            return existing, []
        item = self.group_keys.items[existing]
        orphans, item.fields["members"] = item.fields["members"], []
        self.group_keys.replace(item, key)
        return existing, orphans

    def _groups_by_text(self) -> dict[str, int]:
        if self._group_of_text is None:
            self._group_of_text = {item.content: g for g, item in enumerate(self.group_keys.items)}
        return self._group_of_text

    def _write_contents(self, batch: list[Experience]) -> tuple[list[str], dict[str, Usage], dict[str, list[dict]]]:
        """Memory text per episode: with an LLM, a script (success) or reflection (failure, told
        how the episode ended) + trajectory; with the usage and transcript records of the calls."""
        c = self.config
        trajectories = [trajectory_text(exp.episode, c.max_trajectory_chars) for exp in batch]
        if not (c.write_with_llm and self.ctx.llm is not None):
            return (
                [
                    f"Task: {exp.task.description}\nOutcome: {'success' if exp.episode.success else 'failure'}\n{t}".rstrip()
                    for exp, t in zip(batch, trajectories)
                ],
                {},
                {},
            )

        def messages_of(exp: Experience, trajectory: str) -> list[dict[str, str]]:
            values = {"task": exp.task.description, "trajectory": trajectory}
            if not exp.episode.success:
                values["end_reason"] = end_reason(exp.episode)
            return [{"role": "user", "content": prompts.render(_summary_template(exp), **values)}]

        requests = [messages_of(e, t) for e, t in zip(batch, trajectories)]

        async def all_summaries():
            calls = (
                self.ctx.llm.chat(m, **({} if e.episode.success else {"temperature": c.reflection_temperature}))
                for e, m in zip(batch, requests)
            )
            return await asyncio.gather(*calls, return_exceptions=True)

        contents, usage, records = [], {}, {}
        for exp, trajectory, messages, result in zip(batch, trajectories, requests, self.ctx.run(all_summaries())):
            if isinstance(result, LLMError):
                summary, call_usage = "(not available: the LLM call failed)", Usage(calls=1, failures=1)
                records[exp.episode.episode_id] = [
                    memory_call(_summary_template(exp), messages, problem=f"{type(result).__name__}: {result}")
                ]
            elif isinstance(result, BaseException):
                raise result
            else:
                summary, call_usage = result.text.strip(), result.usage
                records[exp.episode.episode_id] = [memory_call(_summary_template(exp), messages, result, parsed=summary)]
            usage[exp.episode.episode_id] = call_usage
            # As the official agent shows a memory: its script or reflection, both "Archived Script".
            contents.append(prompts.render("memrl_item", task=exp.task.description, summary=summary, trajectory=trajectory).strip())
        return contents, usage, records

    # ---- state -----------------------------------------------------------------
    def snapshot(self, path: Path) -> None:
        self.store.save(path)
        groups = path / "groups"
        groups.mkdir(exist_ok=True)
        self.group_keys.save(groups)
        if self.step_level:  # written only at step granularity: task granularity's snapshots are what they were
            self.steps.save(path)

    def restore(self, path: Path) -> None:
        self.store.load(path)
        self.group_keys.load(path / "groups")
        self._members = None
        self._group_of_text = None
        self.steps.load(path)

    def stats(self) -> MemoryStats:
        step_bytes = sum(len(item.content.encode()) for item in self.steps.items)
        return MemoryStats(
            items=len(self.store) + len(self.steps),
            bytes=self.store.nbytes() + self.group_keys.keys.nbytes + step_bytes,
            groups=len(self.group_keys),
        )

    def items(self) -> list[MemoryItem]:
        return list(self.store.items) + self.steps.items


METHOD = MemRL
