"""Step-level retrieval (retrieval_granularity=step, after SLEA-RL): the step library and its
observation clusters, the methods' hook, memrl's step-level credit, the ReAct actor asking memory
before each step, the turn record, and the synthetic world's steps as its ground truth."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from memrl_bench.actors.base import Job
from memrl_bench.actors.llm_actors import ReActActor
from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Episode, Retrieval, RetrievedItem, StepRetrieval, Task, Turn, strip_measured
from memrl_bench.envs.synthetic import SyntheticEnv
from memrl_bench.methods.base import MethodContext
from memrl_bench.methods.checker import word_vectors
from memrl_bench.methods.memp import MemP
from memrl_bench.methods.memrl import MemRL
from memrl_bench.methods.rag import RAG
from memrl_bench.methods.step_library import StepLibrary, StepSettings, similarity
from tests.helpers import SMALL_WORLD, config
from tests.memory_llm_helpers import experience, query
from tests.unit.test_agent import RoomsEnv, ScriptedChat

# Observations as ALFWorld writes them: two visits of one countertop differ in a few objects.
COUNTER_A = "You arrive at countertop 1. On the countertop 1, you see a apple 1, a bread 1, a knife 2, and a saltshaker 1."
COUNTER_B = "You arrive at countertop 1. On the countertop 1, you see a apple 2, a bread 1, a knife 1, and a saltshaker 1."
FRIDGE = "You open the fridge 1. The fridge 1 is open. In it, you see a egg 3, a lettuce 1, and a tomato 2."


def episode(episode_id: str, success: bool, observations: list[str], actions: list[str]) -> Episode:
    """A training episode whose turn t was taken in observations[t - 1] (the first in the reset's)."""
    turns = [Turn(action, observation) for action, observation in zip(actions, observations + ["done"])]
    return Episode(episode_id, "task-" + episode_id, "train", "train", 1, 0, 0, success, float(success), "ok", turns)


def test_similar_observations_share_a_cluster_and_others_found_their_own():
    assert similarity(COUNTER_A, COUNTER_B) >= 0.85 > similarity(COUNTER_A, FRIDGE)
    library = StepLibrary(StepSettings())
    library.add(episode("e1", True, [COUNTER_A, FRIDGE], ["go to countertop 1", "take apple 1 from countertop 1", "open fridge 1"]))
    assert library.clusters == [COUNTER_A, FRIDGE]
    assert [item.fields["cluster"] for item in library.items] == [0, 1]
    assert [item.fields["source_step"] for item in library.items] == [1, 2]  # step 0 was taken in the reset's observation
    assert library.cluster_of(COUNTER_B) == 0
    assert library.cluster_of("Nothing happens.") is None
    assert StepLibrary(StepSettings(cluster_similarity=0.99)).cluster_of(COUNTER_B) is None  # an empty library has no cluster


def test_a_steps_tips_are_two_successes_and_one_failure_cut_to_the_official_lengths():
    library = StepLibrary(StepSettings())
    long_action = "take apple 1 from countertop 1 " + "and look at it carefully " * 10
    for n, success in enumerate([True, True, True, False, False]):
        library.add(episode(f"e{n}", success, [COUNTER_A if n % 2 else COUNTER_B], ["go to countertop 1", long_action]))
    before = [dataclasses.replace(item) for item in library.items]
    found = library.retrieve(COUNTER_A, rank_by="similarity")
    assert library.items == before  # retrieval changes nothing
    assert found.info == {"cluster": 0} and found.candidates == 5
    assert [item.source_success for item in found.items] == [True, True, False]
    assert [item.item_id for item in found.items][:1] == ["e1/step1"]  # the identical observation first
    tips, avoid = found.prompt_block.split("\n")
    assert tips.count(long_action.strip()[:100]) == 2 and long_action.strip()[:101] not in tips
    assert avoid.endswith(long_action.strip()[:80])
    assert len(found.prompt_block) <= 800 and len(
        library.retrieve(
            COUNTER_A,
            "similarity",
        ).prompt_block
    ) == len(found.prompt_block)
    assert library.retrieve(FRIDGE, "similarity") == Retrieval(info={"cluster": None})


def test_the_library_round_trips_through_a_snapshot(tmp_path):
    library = StepLibrary(StepSettings())
    library.add(episode("e1", True, [COUNTER_A, FRIDGE], ["a", "b", "c"]))
    library.add(episode("e2", False, [FRIDGE, COUNTER_B], ["a", "d", "e"]))
    library.save(tmp_path)
    twin = StepLibrary(StepSettings())
    twin.load(tmp_path)
    assert twin.clusters == library.clusters and twin.items == library.items
    assert twin.retrieve(COUNTER_B, "similarity") == library.retrieve(COUNTER_B, "similarity")


def test_step_granularity_is_refused_by_a_method_without_the_hook_and_task_granularity_writes_no_step_file(tmp_path):
    assert RAG.retrieves_steps() and MemRL.retrieves_steps() and not MemP.retrieves_steps()
    with pytest.raises(ConfigError, match="method.retrieval_granularity=step: method 'none' has no step-level retrieval.*memrl, rag"):
        from memrl_bench.runner.loop import run

        run(config(method={"name": "none", "retrieval_granularity": "step"}), tmp_path / "none")
    method = RAG({}, MethodContext(seed=0, embed=word_vectors))
    method.learn([experience(0, "open the red door", True)])
    method.snapshot(tmp_path)
    assert not method.step_level and not (tmp_path / "steps.jsonl").exists() and not method.steps.items


def test_memrl_credits_each_shown_step_memory_with_the_discounted_episode_return():
    method = MemRL({"retrieval_granularity": "step"}, MethodContext(seed=0, embed=word_vectors))
    method.learn([experience(0, "open the red door", True)])  # stores its step 1, taken in "You are in a room. open the red door"
    step_item = next(item for item in method.items() if item.id.endswith("/step1"))
    assert step_item.fields["q_value"] == 0.0 and step_item.content == "take key"
    later = experience(1, "open the blue door", False)
    found = method.retrieve_step(query("open the blue door"), later.episode.turns[0].observation, 1)
    assert [item.item_id for item in found.items] == [step_item.id] and found.items[0].q_value == 0.0
    shown = [
        later.episode.turns[0],
        dataclasses.replace(later.episode.turns[1], retrieval=StepRetrieval(found.items, found.info["cluster"], found.candidates)),
        Turn("look", "Nothing happens."),
    ]
    result = method.learn([dataclasses.replace(later, episode=dataclasses.replace(later.episode, turns=shown))])
    target = 0.95 ** (3 - 1 - 1) * -1.0  # G_t = gamma^(T-1-t) r, a failure's r = -1
    assert method.steps.get(step_item.id).fields["q_value"] == pytest.approx(0.3 * target)
    ops = result.ops_by_episode[later.episode.episode_id]
    assert [op["op"] for op in ops if op["item_id"] == step_item.id] == ["step_q_update"]
    assert sum(op["op"] == "add_step" for op in ops) == 2  # its own steps 1 and 2


def test_the_react_actor_shows_each_later_step_its_own_memories_by_observation_and_logs_them():
    asked = []

    item = RetrievedItem("m/step1", 1.0, source_task_id="t", source_episode_id="m", source_step=1)

    def step_retrieval(observation: str, step: int) -> Retrieval:
        asked.append((observation, step))
        return Retrieval([item], f"What worked here before: step tip {step}", 4, info={"cluster": 2})

    llm = ScriptedChat(["Action: go to kitchen", "Action: take apple", "Action: go to garden", "Action: put apple in basket"])
    task = Task("rooms-0", "train", "put the apple in the basket")
    job = Job(task, Retrieval(prompt_block="EPISODE BLOCK"), "ep-0", step_retrieval=step_retrieval)
    outcome = asyncio.run(ReActActor(llm).play(job, RoomsEnv({})))
    assert outcome.success
    systems = [call["messages"][0]["content"] for call in llm.calls]
    assert "EPISODE BLOCK" in systems[0] and "step tip" not in systems[0]
    assert all("EPISODE BLOCK" not in s and f"step tip {n}" in s for n, s in enumerate(systems[1:], start=1))
    assert asked[0] == ("You are in the kitchen.", 1) and [step for _, step in asked] == [1, 2, 3]  # keyed by the observation
    assert outcome.turns[0].retrieval is None and "retrieve" not in outcome.turns[0].latency_s
    assert outcome.turns[1].retrieval == StepRetrieval([item], 2, 4, len("What worked here before: step tip 1"))
    assert outcome.turns[1].latency_s["retrieve"] >= 0


def test_a_turn_is_written_as_before_without_a_step_retrieval_and_read_back_with_or_without_one():
    plain = Turn("look", "You see a door.", latency_s={"act": 0.1, "env": 0.0})
    assert "retrieval" not in plain.to_dict() and set(plain.to_dict()) == {f.name for f in dataclasses.fields(Turn)} - {"retrieval"}
    item = RetrievedItem("e1/step1", 0.9, 0.2, None, "t1", "e1", 1, True, 1)
    stepped = Turn(
        "look", "You see a door.", latency_s={"act": 0.1, "env": 0.0, "retrieve": 0.01}, retrieval=StepRetrieval([item], 0, 3, 40)
    )
    for turn in (plain, stepped):
        record = episode("e9", True, [], ["look"]).to_dict() | {"turns": [turn.to_dict()]}
        assert Episode.from_dict(json.loads(json.dumps(record))).turns == [turn]
    assert "source_step" not in RetrievedItem("e1", 0.9).to_dict() and item.to_dict()["source_step"] == 1


def test_synthetic_step_observations_cluster_by_step_type_and_one_step_is_the_old_world():
    world = SyntheticEnv({**SMALL_WORLD, "steps_per_task": 3}, seed=0)
    tasks = world.tasks("train")
    by_type: dict[int, list[str]] = {}
    for task in tasks:
        for step in (1, 2):
            by_type.setdefault(world.step_type(task, step), []).append(world.step_observation(task, step))
    assert len(by_type) == SMALL_WORLD["n_types"]
    library = StepLibrary(StepSettings())
    for observations in by_type.values():
        library.clusters.append(observations[0])
        library._members.append([])
    for step_type, observations in by_type.items():
        assert {library.cluster_of(o) for o in observations} == {list(by_type).index(step_type)}
    # the default world draws nothing more than it did: same tasks, same outcomes
    old, one = SyntheticEnv(SMALL_WORLD, seed=0), SyntheticEnv({**SMALL_WORLD, "steps_per_task": 1}, seed=0)
    assert old.tasks("train") == one.tasks("train") and [t.data for t in old.tasks("train")] == [t.data for t in one.tasks("train")]


def test_drift_scenes_redraw_each_step_types_scene_after_the_change_only():
    """env.drift_scenes: the changed world's observations join none of the old world's clusters, still one per step type; the
    step types (what decides a step's outcome) stay; before the change, and without the setting, scenes are as they were."""
    from memrl_bench.protocols.drift import DriftSettings

    plain, drifting = (SyntheticEnv({**SMALL_WORLD, "steps_per_task": 3, "drift_scenes": on}, seed=0) for on in (False, True))
    change = DriftSettings(epoch=3, flip_share=0.0)
    tasks = drifting.tasks("train")
    old = [drifting.step_observation(t, 1) for t in tasks]
    new = [drifting.step_observation(drifting.drifted(t, change), 1) for t in tasks]
    assert old == [plain.step_observation(t, 1) for t in tasks] == [plain.step_observation(plain.drifted(t, change), 1) for t in tasks]
    library = StepLibrary(StepSettings())
    for observation in old:
        if library.cluster_of(observation) is None:
            library.clusters.append(observation)
            library._members.append([])
    assert len(library.clusters) == SMALL_WORLD["n_types"]
    assert all(library.cluster_of(o) is None for o in new)
    assert len(set(new)) == len({drifting.step_type(t, 1) for t in tasks})
    assert [drifting.step_type(drifting.drifted(t, change), 1) for t in tasks] == [drifting.step_type(t, 1) for t in tasks]
    with pytest.raises(ValueError, match="env.drift_scenes changes the scenes of later steps: it needs env.steps_per_task > 1"):
        SyntheticEnv({**SMALL_WORLD, "drift_scenes": True}, seed=0)


def test_a_synthetic_step_is_helped_by_a_memory_of_its_own_step_type():
    world = SyntheticEnv({**SMALL_WORLD, "steps_per_task": 3, "harmful_share": 0.0}, seed=0)
    tasks = world.tasks("train")
    task = tasks[0]
    step_type = world.step_type(task, 2)
    source = next(t for t in tasks[1:] if world.step_type(t, 1) == step_type)
    other = next(t for t in tasks[1:] if world.step_type(t, 1) != step_type)

    def memory(source_task: Task, step: int | None) -> RetrievedItem:
        return RetrievedItem(
            f"m-{source_task.id}",
            1.0,
            source_task_id=source_task.id,
            source_episode_id=f"e-{source_task.id}",
            source_success=True,
            source_step=step,
        )

    base = world.step_outcome(task, 2, [], "e")[1]
    matching = memory(source, 1)
    assert world.item_effect(matching, step_type, None, 2) == pytest.approx(world._true_quality(matching))
    assert world.item_effect(memory(other, 1), step_type, None, 2) == 0.0  # cross_type_match 0
    if world._true_quality(matching) > 0:
        assert world.step_outcome(task, 2, [matching], "e")[1] > base
    # an episode's memory counts at step s as its source task's step s
    expected = world.match[world.step_type(source, 2), step_type]
    assert world.item_effect(memory(source, None), step_type, None, 2) == pytest.approx(
        expected * world._true_quality(memory(source, None))
    )


def test_a_step_run_logs_every_later_steps_retrieval_and_task_granularity_leaves_the_run_as_it_was(tmp_path):
    from memrl_bench.runner.loop import run

    world = {**SMALL_WORLD, "steps_per_task": 3, "type_logit_range": [0.0, 1.0]}
    for method in ("rag", "memrl"):
        run(config(env=world, method={"name": method, "retrieval_granularity": "step"}), tmp_path / method)
        records = [json.loads(line) for line in (tmp_path / method / "episodes.jsonl").read_text().splitlines()]
        later = [turn for r in records for turn in r["turns"][1:]]
        assert later and all("retrieval" in turn and "retrieve" in turn["latency_s"] for turn in later)
        assert all("retrieval" not in r["turns"][0] for r in records)
        assert any(turn["retrieval"]["items"] for turn in later)
        assert any((tmp_path / method).rglob("steps.jsonl"))  # the step library is in the snapshots
    logs = {}
    for name, method in (("default", {"name": "rag"}), ("task", {"name": "rag", "retrieval_granularity": "task"})):
        run(config(method=method), tmp_path / name)
        logs[name] = [strip_measured(json.loads(line)) for line in (tmp_path / name / "episodes.jsonl").read_text().splitlines()]
    assert logs["default"] == logs["task"]
    assert all(
        set(turn) == {f.name for f in dataclasses.fields(Turn)} - {"retrieval", "latency_s", "cache_hit"}
        for r in logs["task"]
        for turn in r["turns"]
    )
