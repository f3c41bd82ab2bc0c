"""Reward noise on the synthetic world (env.reward_flip_share): the method learns a flipped
success for a seeded share of training episodes; the log keeps the true one."""

from __future__ import annotations

import json

from memrl_bench.core.records import read_run
from memrl_bench.core.schema import RetrievedItem
from memrl_bench.envs.synthetic import SyntheticEnv
from tests.helpers import SMALL_WORLD, config, run_to


def test_flipped_rewards_reach_only_what_the_method_learns(tmp_path):
    cfg = config(env={"reward_flip_share": 0.3})
    run_to(tmp_path, "noisy", cfg)
    run = read_run(tmp_path / "noisy", require_complete=True)
    env = SyntheticEnv({k: v for k, v in cfg["env"].items() if k != "name"})
    train = {r.episode_id: r for r in run.episodes if r.phase == "train"}
    # the logged success is the outcome model's: P(success) drawn with the injected memories
    for r in train.values():
        task = next(t for t in env.tasks("train") if t.id == r.task_id)
        assert r.success == env.outcome(task, r.retrieved, r.episode_id)[0]
    # every stored memory carries the success its method learned: flipped for about 30% of them
    stored = {i.provenance.episode_id: i.provenance.success for i in run.items}
    flipped = [eid for eid, learned in stored.items() if learned != train[eid].success]
    assert flipped and set(flipped) == {eid for eid in stored if env.learned_success(eid, True) is False}
    assert 0.2 < len(flipped) / len(stored) < 0.4


def test_without_reward_noise_the_method_learns_the_logged_success(tmp_path):
    run_to(tmp_path, "clean", config())
    run = read_run(tmp_path / "clean", require_complete=True)
    train = {r.episode_id: r.success for r in run.episodes if r.phase == "train"}
    assert all(i.provenance.success == train[i.provenance.episode_id] for i in run.items)


def test_a_flipped_memory_keeps_the_effect_of_the_lesson_its_episode_wrote():
    env = SyntheticEnv({**SMALL_WORLD, "reward_flip_share": 1.0})
    clean = SyntheticEnv(SMALL_WORLD)
    task = env.tasks("train")[0]
    episode = "train-e01-b000-i000-s00"
    for success in (True, False):
        stored = RetrievedItem("m", 1.0, source_task_id=task.id, source_episode_id=episode, source_epoch=1, source_success=not success)
        truth = RetrievedItem("m", 1.0, source_task_id=task.id, source_episode_id=episode, source_epoch=1, source_success=success)
        assert env.learned_success(episode, success) is (not success)
        assert env.item_effect(stored, task.data["task_type"]) == clean.item_effect(truth, task.data["task_type"])


def test_the_flip_is_a_seeded_function_of_the_episode():
    a, b = (SyntheticEnv({**SMALL_WORLD, "reward_flip_share": 0.5}) for _ in range(2))
    ids = [f"train-e01-b000-i{i:03d}-s00" for i in range(200)]
    assert [a.learned_success(i, True) for i in ids] == [b.learned_success(i, True) for i in ids]
    assert 60 < sum(not a.learned_success(i, True) for i in ids) < 140
    assert json.dumps(SyntheticEnv(SMALL_WORLD).settings.reward_flip_share) == "0.0"
