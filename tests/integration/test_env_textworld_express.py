"""TextWorldExpress env: real JVM simulator, gold paths, folds, and process cleanup."""

from __future__ import annotations

import pytest

pytest.importorskip("textworld_express", reason="needs pip package textworld-express==1.1.0 (and Java 17)")

from memrl_bench.envs.checker import check_env  # noqa: E402
from memrl_bench.envs.textworld_express import ENV  # noqa: E402

TASKS_PER_SPLIT = 4


@pytest.fixture(scope="module")
def env():
    instance = ENV({"game": "twc", "game_params": {}, "tasks_per_split": TASKS_PER_SPLIT})
    yield instance
    instance.close()


def play(env, task, actions: list[str]) -> tuple[bool, bool, int]:
    """Play `actions` until done; (done, success, steps taken)."""
    env.reset(task)
    done, info, steps = False, {}, 0
    for action in actions:
        _, _, done, info = env.step(action)
        steps += 1
        if done:
            break
    return done, bool(info.get("success")), steps


def test_check_env_passes(env):
    check_env(env)


def test_splits_are_the_package_folds_and_disjoint(env):
    assert set(env.splits()) == {"train", "validation", "test"}
    seeds = {split: [t.data["seed"] for t in env.tasks(split)] for split in env.splits()}
    assert seeds == {"train": [0, 1, 2, 3], "validation": [10000, 10001, 10002, 10003], "test": [20000, 20001, 20002, 20003]}
    ids = [t.id for split in env.splits() for t in env.tasks(split)]
    assert len(ids) == len(set(ids)) == 3 * TASKS_PER_SPLIT
    assert env.tasks("train")[1].id == "twx/twc/train/1"
    assert all(t.description.startswith("Your task is to") for t in env.tasks("test"))


@pytest.mark.parametrize("split", ["train", "validation", "test"])
def test_gold_actions_win_every_split(env, split):
    for task in env.tasks(split)[:2]:
        done, success, _ = play(env, task, env.gold_actions(task))
        assert done and success, f"gold path of {task.id} did not win"


def test_noop_actor_fails(env):
    task = env.tasks("train")[0]
    observation, info = env.reset(task)
    assert "look around" in info["admissible_commands"] and observation
    done, success, steps = play(env, task, ["look around", "inventory"] * 15)
    assert not done and not success and steps == 30


def test_reward_is_score_delta_and_sums_to_one_on_win(env):
    task = env.tasks("validation")[0]
    gold = env.gold_actions(task)
    env.reset(task)
    total = 0.0
    for action in gold:
        _, reward, done, info = env.step(action)
        total += reward
        if done:
            break
    assert info["success"] and total == pytest.approx(1.0)


def test_game_params_change_the_game_and_the_ids():
    small = ENV({"game": "coin", "game_params": {"numLocations": 2, "includeDoors": False}, "tasks_per_split": 1})
    try:
        task = small.tasks("train")[0]
        assert task.id == "twx/coin[includeDoors=0,numLocations=2]/train/0"
        assert len(small.gold_actions(task)) < 6
    finally:
        small.close()


def test_drift_changes_the_layout_and_keeps_every_task_winnable(env):
    from memrl_bench.protocols.drift import DriftSettings

    changed_any = False
    for task in env.tasks("train"):
        changed = env.drifted(task, DriftSettings())
        assert changed.id == task.id and changed.data["game_params"] == "includeDoors=1"
        gold = env.gold_actions(changed)
        assert play(env, changed, gold)[1]
        changed_any |= gold != env.gold_actions(task)
    assert changed_any


def test_a_drift_that_changes_nothing_or_has_no_default_is_refused(env):
    from memrl_bench.core.config import ConfigError
    from memrl_bench.protocols.drift import DriftSettings

    task = env.tasks("train")[0]
    with pytest.raises(ConfigError, match="protocol.drift.game_params"):
        env.drifted(task, DriftSettings(game_params={}))
    sorting = ENV({"game": "sorting", "tasks_per_split": 1})
    try:
        with pytest.raises(ConfigError, match="no default change for game 'sorting'"):
            sorting.drifted(sorting.tasks("train")[0], DriftSettings())
    finally:
        sorting.close()


def test_bad_config_names_the_key():
    with pytest.raises(ValueError, match="env.game"):
        ENV({"game": "chess"})
    with pytest.raises(ValueError, match="numLocationz"):
        ENV({"game": "coin", "game_params": {"numLocationz": 3}})


def test_spawn_is_independent_and_close_ends_each_jvm(env):
    other = env.spawn()
    try:
        assert other.java_process().pid != env.java_process().pid
        first, second = env.tasks("train")[0], other.tasks("test")[0]
        env.reset(first)
        other.reset(second)
        # Steps in one instance do not move the other's game.
        done, success, _ = play(other, second, other.gold_actions(second))
        assert done and success
        _, _, done, _ = env.step("inventory")
        assert not done
    finally:
        process = other.java_process()
        other.close()
    assert process.poll() is not None, "close() left the JVM running"
    assert other.java_process() is None
    other.close()  # idempotent


def noise(output: str) -> list[str]:
    """Lines of py4j's logging or of a traceback."""
    return [
        line for line in output.splitlines() if any(mark in line for mark in ("[HYDRA]", "Traceback", "Py4J", "Gateway", "Callback Server"))
    ]


def twx_command(results, server, *extra: str) -> list[str]:
    """A whole run on TextWorldExpress against the loopback fault server (its answers are not moves)."""
    import sys

    return [
        sys.executable,
        "-m",
        "memrl_bench",
        f"results_dir={results}",
        "env=textworld_express",
        "method=none",
        "llm=openai",
        f"llm.base_url={server.base_url}",
        "llm.model=m",
        "llm.cache_mode=off",
        "embedder=openai",
        f"embedder.base_url={server.base_url}",
        "embedder.model=e",
        "actor.max_steps=3",
        "progress=false",
        *extra,
    ]


def test_a_run_ends_quietly_on_success_and_on_ctrl_c(tmp_path):
    """The JVMs of a run (one per pool slot) close without a line from py4j, on success and on Ctrl-C."""
    import os
    import signal
    import subprocess
    import time
    from pathlib import Path

    from tests.fault_server import FaultServer
    from tests.helpers import default_sigint

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "OPENAI_API_KEY": "test-key-not-a-secret"}
    with FaultServer() as server:
        done = subprocess.run(
            twx_command(tmp_path / "done", server, "env.tasks_per_split=2", "protocol.epochs=1", "llm.max_concurrency=2"),
            cwd=root,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert not noise(done.stdout), done.stdout
        proc = subprocess.Popen(
            twx_command(tmp_path / "stopped", server, "env.tasks_per_split=6", "protocol.epochs=40", "protocol.batch_size=2"),
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
            preexec_fn=default_sigint,
        )
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("stopped/default/*/episodes.jsonl")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the JVMs too
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err == "memrl-bench: interrupted; re-run the same command to resume\n", err
    assert not noise(out), out
