"""The synthetic env: a valid env, deterministic, with the ground truth it promises."""

import numpy as np
import pytest

from memrl_bench.actors.base import Job
from memrl_bench.core.schema import Retrieval, RetrievedItem
from memrl_bench.envs.checker import check_env
from memrl_bench.envs.synthetic import SyntheticActor, SyntheticEnv


@pytest.fixture(scope="module")
def env():
    return SyntheticEnv({"tasks": {"train": 200, "validation": 50, "test_in_distribution": 50, "test_out_of_distribution": 50}})


def test_check_env_passes(env):
    check_env(env)
    assert env.labels == ("synthetic",)


def test_tasks_are_deterministic_across_instances(env):
    again = SyntheticEnv(env.settings)  # the typed settings, as the runner hands them on
    assert [t.intent for t in again.tasks("train")] == [t.intent for t in env.tasks("train")]


def test_ood_tasks_have_unseen_types(env):
    train_types = {t.data["task_type"] for t in env.tasks("train")}
    ood_types = {t.data["task_type"] for t in env.tasks("test_out_of_distribution")}
    assert not train_types & ood_types


def test_successful_lessons_are_better_on_average_and_harmful_share_holds():
    env = SyntheticEnv({"harmful_share": 0.2})
    wins = [env.lesson_quality(f"ep{i}", True, 2) for i in range(3000)]
    losses = [env.lesson_quality(f"ep{i}", False, 2) for i in range(3000)]
    assert np.mean(wins) > np.mean(losses)
    assert np.mean([q == env.settings.harmful_quality for q in wins]) == pytest.approx(0.2, abs=0.03)


def test_harmful_early_share_applies_to_epoch_one_only():
    env = SyntheticEnv({"harmful_share": 0.0, "harmful_early_share": 1.0})
    assert env.lesson_quality("x", True, 1) == env.settings.harmful_quality
    assert env.lesson_quality("x", True, 2) != env.settings.harmful_quality


def test_a_good_memory_of_the_same_type_raises_success_and_utility_is_positive(env):
    task = env.tasks("train")[0]
    source = next(t for t in env.tasks("train")[1:] if t.data["task_type"] == task.data["task_type"])
    episode = next(f"train-e02-{i:05d}-s0" for i in range(1000) if env.lesson_quality(f"train-e02-{i:05d}-s0", True, 2) > 1.0)
    item = RetrievedItem("m", 0.9, source_task_id=source.id, source_episode_id=episode, source_epoch=2, source_success=True)
    _, p_without = env.outcome(task, [], "e")
    _, p_with = env.outcome(task, [item], "e")
    assert p_with > p_without
    assert env.lesson_utility(task.data["task_type"], 1.0) > 0 > env.lesson_utility(task.data["task_type"], -1.0)


def test_temperature_zero_outcome_depends_only_on_task_and_injected_set(env):
    task = env.tasks("train")[3]
    actor = SyntheticActor()
    outcomes = {actor.play_one(Job(task, Retrieval(), f"ep{i}"), env).success for i in range(50)}
    assert len(outcomes) == 1
    hot = SyntheticEnv(env.settings.model_copy(update={"outcome_temperature": 0.7}))
    hot_task = hot.tasks("train")[3]
    outcomes = {actor.play_one(Job(hot_task, Retrieval(), f"ep{i}"), hot).success for i in range(50)}
    assert outcomes == {True, False}
