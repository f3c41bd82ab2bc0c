"""Step-level retrieval after SLEA-RL (arXiv 2603.18079): a library of the steps of training
episodes, indexed by observation clusters, that a method consults at every step of an episode.

Source: kingofspace0wzz/slea-rl @ d247621c8ac64a23824abb37aa82ec65a61faa0e (the code still calls
it FORGE; read here at 763ccb4): verl/trainer/ppo/forge/step_experience.py (are_observations_similar,
ObservationIndex.find_or_create_cluster: leader clustering; StepExperienceManager's defaults and
its "minimal" format), forge/experience_library.py (golden and warning zones),
agent_system/multi_turn_rollout/rollout_loop.py (injection before each step's observation).

Followed: an observation joins the first cluster whose representative is identical to it or has a
difflib SequenceMatcher ratio >= 0.85 on the first 500 characters, else it founds a cluster (no
k-means, no embedding); a step's prompt shows the top 2 steps of successful episodes ("golden",
each cut to 100 characters) and the top 1 of a failed one ("warning", 80 characters), the block
capped at 800 characters (top_k_golden, top_k_warning, max_experience_length).
Deviations: the library stores every executed step of every training episode (the observation it
was taken in, its action, the episode's outcome) rather than text extracted by rules from one
response per episode, with no admission capacity, novelty filter, 300-character signature, cluster
cap or warm-up; clusters are created only by learn (SLEA-RL creates them and counts usage while
retrieving; here retrieval changes no state). The first step has no observation of its own in the
log (turns keep the observation after each action), so the library indexes steps 2..T and step 1
uses the episode's task-level retrieval. Ranking within a cluster is the method's: by similarity of
the stored observation to the current one (rag), by a per-step utility (memrl, see there). SLEA-RL's
step-level advantage for the policy gradient (GiGPO-style) is training and out of scope: the
harness keeps the model frozen.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Literal

from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import Settings
from memrl_bench.core.schema import Episode, MemoryItem, Provenance, Retrieval, RetrievedItem

STEPS_FILE = "steps.jsonl"  # in a method's snapshot, only at step granularity (task granularity writes what it wrote before)


class StepSettings(Settings):
    """The step-level keys of a method that supports them; unlisted, so task granularity composes the config it always did."""

    unlisted = (
        "retrieval_granularity",
        "cluster_similarity",
        "cluster_chars",
        "top_k_golden",
        "top_k_warning",
        "golden_chars",
        "warning_chars",
        "max_experience_length",
    )

    retrieval_granularity: Literal["task", "step"] = Field(
        "task", description="task: one retrieval per episode, by the task; step: also one per step after the first, by its observation."
    )
    cluster_similarity: float = Field(
        0.85, ge=0, le=1, description="difflib ratio at which an observation joins a cluster (SLEA-RL step_experience.py)."
    )
    cluster_chars: int = Field(500, ge=1, description="Characters of an observation compared for clustering (SLEA-RL).")
    top_k_golden: int = Field(2, ge=0, description="Steps of successful episodes shown per step (SLEA-RL top_k_golden).")
    top_k_warning: int = Field(1, ge=0, description="Steps of failed episodes shown per step (SLEA-RL top_k_warning).")
    golden_chars: int = Field(100, ge=1, description="A success tip is cut to this many characters (SLEA-RL minimal format).")
    warning_chars: int = Field(80, ge=1, description="A warning is cut to this many characters (SLEA-RL minimal format).")
    max_experience_length: int = Field(800, ge=1, description="A step's memory block is cut to this many characters (SLEA-RL).")


def similarity(a: str, b: str) -> float:
    """difflib's ratio, as SLEA-RL compares observations."""
    return 1.0 if a == b else difflib.SequenceMatcher(None, a, b).ratio()


class StepLibrary:
    """The executed steps of training episodes (steps 1.. counted from 0), each a MemoryItem whose content is
    its action, grouped into observation clusters. Its items are the method's memories too (audited)."""

    def __init__(self, settings: StepSettings):
        self.settings = settings
        self.items: list[MemoryItem] = []
        self.clusters: list[str] = []  # each cluster's representative: the first observation that founded it, cut
        self._members: list[list[int]] = []
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.items)

    def cluster_of(self, observation: str) -> int | None:
        """The first cluster the observation is similar enough to (leader clustering), or None. Pure."""
        text, floor = observation.strip()[: self.settings.cluster_chars], self.settings.cluster_similarity
        for cluster, representative in enumerate(self.clusters):
            if text == representative:
                return cluster
            matcher = difflib.SequenceMatcher(None, text, representative)
            if matcher.real_quick_ratio() >= floor and matcher.quick_ratio() >= floor and matcher.ratio() >= floor:
                return cluster
        return None

    def add(self, episode: Episode, q_init: float = 0.0) -> list[MemoryItem]:
        """Store the episode's executed steps after the first, each in the cluster of the observation it was taken in."""
        added = []
        for step, (before, turn) in enumerate(zip(episode.turns, episode.turns[1:]), start=1):
            if turn.format_failure is not None:
                continue  # nothing was executed: no step to learn from
            observation = before.observation.strip()[: self.settings.cluster_chars]
            cluster = self.cluster_of(observation)
            if cluster is None:
                cluster = len(self.clusters)
                self.clusters.append(observation)
                self._members.append([])
            fields = {"source_step": step, "cluster": cluster, "observation": observation, "q_value": q_init, "visits": 0}
            item = MemoryItem(f"{episode.episode_id}/step{step}", turn.action, Provenance.of(episode), fields)
            self._members[cluster].append(len(self.items))
            self._index[item.id] = len(self.items)
            self.items.append(item)
            added.append(item)
        return added

    def get(self, item_id: str) -> MemoryItem:
        return self.items[self._index[item_id]]

    def retrieve(self, observation: str, rank_by: Literal["similarity", "utility"]) -> Retrieval:
        """The tips for a step taken in `observation` from its cluster: top golden and warning steps,
        ranked by the stored observation's similarity or by q_value (ties: similarity, then the older).
        The cluster is the retrieval's info["cluster"] (None: the observation joins none, nothing shown). Pure."""
        s = self.settings
        cluster = self.cluster_of(observation)
        if cluster is None:
            return Retrieval(info={"cluster": None})
        text = observation.strip()[: s.cluster_chars]
        members = [(self.items[p], similarity(text, self.items[p].fields["observation"])) for p in self._members[cluster]]
        if rank_by == "utility":
            members.sort(key=lambda pair: (-pair[0].fields["q_value"], -pair[1]))
        else:
            members.sort(key=lambda pair: -pair[1])
        golden = [pair for pair in members if pair[0].provenance.success][: s.top_k_golden]
        warning = [pair for pair in members if not pair[0].provenance.success][: s.top_k_warning]
        chosen = [RetrievedItem.of(item, sim, item.fields["q_value"] if rank_by == "utility" else None) for item, sim in golden + warning]
        lines = []
        if golden:
            lines.append(prompts.render("step_tips", tips="; ".join(item.content.strip()[: s.golden_chars] for item, _ in golden)))
        if warning:
            lines.append(prompts.render("step_avoid", actions="; ".join(item.content.strip()[: s.warning_chars] for item, _ in warning)))
        block = "\n".join(line.strip() for line in lines)[: s.max_experience_length]
        return Retrieval(items=chosen, prompt_block=block, candidates=len(members), info={"cluster": cluster})

    def save(self, path: Path) -> None:
        with open(path / STEPS_FILE, "w") as f:
            f.writelines(json.dumps(item.to_dict(), sort_keys=True) + "\n" for item in self.items)

    def load(self, path: Path) -> None:
        """Read the steps back; clusters are rebuilt in the order they were founded (each step keeps its cluster number)."""
        self.__init__(self.settings)
        file = path / STEPS_FILE
        if not file.exists():
            return
        with open(file) as f:
            self.items = [MemoryItem.from_dict(json.loads(line)) for line in f if line.strip()]
        for position, item in enumerate(self.items):
            cluster = item.fields["cluster"]
            if cluster == len(self.clusters):
                self.clusters.append(item.fields["observation"])
                self._members.append([])
            self._members[cluster].append(position)
            self._index[item.id] = position
