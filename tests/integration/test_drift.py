"""The drift protocol: the change schedule, the synthetic world's ground truth of stale
memories, LLB-DB's schema change, and each drift metric pinned on a hand-built log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import SMALL_WORLD, config, record, run_to

from memrl_bench.core.config import ConfigError
from memrl_bench.core.records import read_run
from memrl_bench.core.schema import RetrievedItem
from memrl_bench.envs.synthetic import SyntheticEnv
from memrl_bench.protocols import drift
from memrl_bench.protocols.drift import DriftSettings
from tests.helpers import build_schedule, protocol

LLB_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "llb"


# ---- metrics on a hand-built log ---------------------------------------------------------


def _log() -> list:
    """Drift at epoch 2, windows of 2. Before: 1 1 0 1 (the window before: 0 1, SR 0.5).
    After: 0 0 | 0 1 | 1 1 | 1 (windows 0, 0.5, 1; the last, short, is left out)."""
    before = [record(f"t{i}", 1, ok) for i, ok in enumerate([True, True, False, True])]
    stale = [[True, False], [True], [False], [], [True], [False, False], [False]]
    after = [
        record(f"t{i}", 2, ok, info={drift.STALE: s}) for i, (ok, s) in enumerate(zip([False, False, False, True, True, True, True], stale))
    ]
    test = [record("x", 2, True, phase="test", split="test_in_distribution", info={drift.STALE: [True, False]})]
    return before + after + test


def test_metrics_on_a_hand_built_log():
    m = drift.metrics(_log(), DriftSettings(epoch=2, window=2, tolerance=0.05))
    assert m["pre_sr"] == 0.5
    assert m["sr_by_window"] == [0.0, 0.5, 1.0]
    assert m["sr_dip"] == 0.5
    assert m["tasks_until_recovery"] == 4  # fell in window 0, back in window 1: 2 windows of 2 episodes
    assert m["post_sr"] == pytest.approx(4 / 7)
    assert m["pre_epoch_sr"] == 0.75 and m["sr_change"] == pytest.approx(4 / 7 - 0.75)
    assert m["stale_share"] == 3 / 8  # 8 injections with ground truth after the change, 3 stale
    assert m["stale_share_by_window"] == [2 / 3, 0.0, 1 / 3]
    assert m["last_stale_episode"] == 4
    assert m["test_stale_share"] == 0.5
    assert m["post_expected_sr"] is None  # no P(success) in this log


def test_recovery_cases():
    assert drift.recovery(0.5, [0.6, 0.46, 0.5], 10, 0.05) == 0  # never below 0.45: nothing to recover from
    assert drift.recovery(0.5, [0.2, 0.3, 0.4], 10, 0.05) is None  # never back: undefined, shown "-"
    assert drift.recovery(0.5, [0.5, 0.2, 0.3, 0.45], 10, 0.05) == 40  # fell in window 1, back in window 3
    assert drift.recovery(0.5, [0.2, 0.9], 5, 0.0) == 10


def test_a_log_without_ground_truth_has_no_stale_numbers():
    log = [r for r in _log() if r.phase == "train"]
    for r in log:
        r.info.pop(drift.STALE, None)
    m = drift.metrics(log, DriftSettings(epoch=2, window=2))
    assert "stale_share" not in m and m["sr_dip"] == 0.5


# ---- the schedule -----------------------------------------------------------------------


def test_batches_from_the_change_on_play_the_changed_tasks():
    env = SyntheticEnv({k: v for k, v in SMALL_WORLD.items() if k != "name"})
    tasks = {s: env.tasks(s) for s in ("train", "validation", "test_in_distribution")}
    roles = {"train": "train", "validation": "validation", "test": ["test_in_distribution"]}
    schedule = build_schedule({"name": "drift", "epochs": 3, "batch_size": 8, "drift": {"epoch": 2}}, roles, tasks, 0, env)
    for batch in schedule:
        changed = ["drift" in t.data for t in batch.tasks]
        assert all(changed) if batch.epoch >= 2 else not any(changed), batch.key
    assert [t.id for t in schedule[-1].tasks] == [t.id for t in tasks["test_in_distribution"][-len(schedule[-1].tasks) :]]


def test_a_change_after_the_last_epoch_and_an_env_without_drift_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"protocol.drift.epoch=4 is after the last epoch"):
        protocol({"name": "drift", "epochs": 3, "drift": {"epoch": 4}})
    with pytest.raises(ConfigError, match=r"protocol.drift.epoch: Input should be greater than or equal to 2"):
        protocol({"name": "drift", "epochs": 3, "drift": {"epoch": 1}})
    from memrl_bench.envs.mmlu import MMLUEnv

    with pytest.raises(ConfigError, match="env 'mmlu' has no drift"):
        build_schedule({"name": "drift", "epochs": 3}, {"train": "train"}, {"train": []}, 0, object.__new__(MMLUEnv))


# ---- the synthetic world's ground truth ---------------------------------------------------


def _helpful_lesson(env: SyntheticEnv, epoch: int) -> str:
    """An episode id whose successful lesson has quality > 0."""
    return next(e for e in (f"train-e{epoch:02d}-{i:05d}-s0" for i in range(100)) if env.lesson_quality(e, True, epoch) > 0)


def test_stale_is_written_before_the_change_for_a_flipped_type_and_the_outcome_follows_the_flip():
    env = SyntheticEnv({k: v for k, v in SMALL_WORLD.items() if k != "name"})
    setting = DriftSettings(epoch=2, flip_share=0.5)
    flipped = env.flipped_types(setting)
    assert len(flipped) == 2 and flipped == env.flipped_types(setting)  # round(0.5 * 4), seeded
    train = env.tasks("train")
    of_type = {t.data["task_type"]: t for t in train}
    kept = next(k for k in of_type if k not in flipped)

    def memory(task_type: int, epoch: int) -> RetrievedItem:
        episode = _helpful_lesson(env, epoch)
        return RetrievedItem(f"m-{task_type}-{epoch}", 1.0, None, None, of_type[task_type].id, episode, epoch, True)

    old_flipped, old_kept, new_flipped = memory(flipped[0], 1), memory(kept, 1), memory(flipped[0], 2)
    change = env.drifted(of_type[flipped[0]], setting).data["drift"]
    assert env.is_stale(old_flipped, change)
    assert not env.is_stale(old_kept, change)
    assert not env.is_stale(new_flipped, change)  # written after the change: the new world's lesson

    task = of_type[flipped[0]]
    after = env.drifted(task, setting)
    assert env.p_success(task, [old_flipped]) > env.p_success(task, [])  # helpful before the change
    assert env.p_success(after, [old_flipped]) < env.p_success(after, [])  # harmful after it
    assert env.p_success(after, [new_flipped]) > env.p_success(after, [])
    kept_task = of_type[kept]
    assert env.p_success(env.drifted(kept_task, setting), [old_kept]) == env.p_success(kept_task, [old_kept])


def test_a_synthetic_drift_run_logs_stale_per_injection_and_its_drift_block(tmp_path):
    cfg = config(
        method={"name": "rag"},
        protocol={"name": "drift", "epochs": 3, "batch_size": 8, "checkpoint_interval_s": 0, "drift": {"epoch": 2, "window": 8}},
    )
    metrics, folder = run_to(tmp_path, "rag", cfg)
    run = read_run(folder)
    env = SyntheticEnv({k: v for k, v in SMALL_WORLD.items() if k != "name"})
    setting = DriftSettings(epoch=2, window=8)
    change = {"epoch": 2, "flipped_types": env.flipped_types(setting)}
    stale_seen = 0
    for r in run.episodes:
        if r.epoch < 2:  # training and validation of epoch 1 play the world before the change
            assert drift.STALE not in r.info
            continue
        flags = r.info[drift.STALE]
        items = r.retrieved
        assert flags == [env.is_stale(i, change) for i in items]
        assert all(i.source_epoch < 2 for i, f in zip(items, flags) if f)
        task = env.drifted(next(t for t in env.tasks(r.split) if t.id == r.task_id), setting)
        assert r.info["p_success"] == pytest.approx(env.p_success(task, items))
        stale_seen += sum(flags)
    assert stale_seen > 0  # rag keeps injecting old lessons of the flipped types
    assert "drift" in metrics["labels"]
    assert json.loads((folder / "metrics.json").read_text())["drift"] == json.loads(json.dumps(drift.metrics(run.episodes, setting)))

    from memrl_bench.report.aggregate import aggregate
    from memrl_bench.report.load import load
    from memrl_bench.report.tables import all_tables

    results = load(tmp_path)
    table = all_tables(results, aggregate(results))["drift"].view.set_index("variant")
    block = metrics["drift"]
    assert table.loc["rag", "training SR after the change %"] == f"{100 * block['post_sr']:.1f} (n=1)"
    assert table.loc["rag", "stale share of injections after the change % (synthetic)"] == f"{100 * block['stale_share']:.1f} (n=1)"


# ---- LLB-DB: a schema change -----------------------------------------------------------------


@pytest.mark.skipif(not LLB_DATA.exists(), reason=f"shared LLB data not at {LLB_DATA}")
def test_llb_db_renamed_schema_keeps_every_task_solvable_and_old_names_fail():
    from memrl_bench.envs.llb_db import LLBDBEnv

    env = LLBDBEnv({"data_dir": str(LLB_DATA)})
    setting = DriftSettings()
    solved = total = 0
    for split in ("train", "validation", "test"):
        for task in env.tasks(split):
            changed = env.drifted(task, setting)
            observation, _ = env.reset(changed)
            assert observation.startswith(f"Table {task.data['table']['name']}_v2(")
            for action in changed.data["gold"]:
                _, _, done, info = env.step(action)
                if done:
                    break
            solved += bool(info.get("success"))
            total += 1
    assert solved == total
    task = next(t for t in env.tasks("train") if t.data["kind"] == "query")
    env.reset(env.drifted(task, setting))
    observation, *_ = env.step(task.data["gold"][0])  # the memory of the old schema
    assert "no such table" in observation


def test_rename_identifiers_leaves_string_literals_and_other_words():
    from memrl_bench.envs.llb_db import rename_identifiers

    sql = "UPDATE t AS x SET status = 'status' WHERE x.status_code = 1 AND T.status > 0"
    renamed = rename_identifiers(sql, {"t": "t_v2", "status": "status_v2", "status_code": "status_code_v2"})
    assert renamed == "UPDATE t_v2 AS x SET status_v2 = 'status' WHERE x.status_code_v2 = 1 AND t_v2.status_v2 > 0"


@pytest.mark.skipif(not LLB_DATA.exists(), reason=f"shared LLB data not at {LLB_DATA}")
def test_an_llb_db_drift_run_plays_the_renamed_schema_and_injects_the_old_one(tmp_path):
    """Control flow with a scripted model that reads the table it is shown: before the
    change it sees the old table, after it the renamed one, and rag's memories of epoch 1
    (injected after the change) hold the old name."""
    import re

    from scripted_llm import ScriptedChatModel

    from memrl_bench.envs.llb_db import LLBDBEnv
    from memrl_bench.runner.loop import run

    def reply(messages: list[dict[str, str]]) -> str:
        text = "\n".join(m["content"] for m in messages if m["role"] != "system")
        if "columns:" in text:  # the query ran: answer with its rows
            return "Action: COMMIT"
        return "Action: SQL: SELECT * FROM " + re.findall(r"Table (\w+)\(", text)[-1]

    env_cfg = {"name": "llb_db", "data_dir": str(LLB_DATA), "tasks_per_split": 3}
    cfg = config(
        method={"name": "rag"},
        embedder={"name": "minilm"},
        actor={"max_steps": 3},
        protocol={
            "name": "drift",
            "epochs": 2,
            "batch_size": 3,
            "checkpoint_interval_s": 0,
            "validate_every_epoch": False,
            "drift": {"epoch": 2, "window": 3},
        },
    )
    cfg["env"] = env_cfg
    metrics = run(cfg, tmp_path / "llb", llm=ScriptedChatModel(reply))
    episodes = read_run(tmp_path / "llb").episodes
    names = {t.id: t.data["table"]["name"] for t in LLBDBEnv({k: v for k, v in env_cfg.items() if k != "name"}).tasks("train")}
    for r in episodes:
        if r.phase == "train":
            assert r.turns[0].action == f"SQL: SELECT * FROM {names[r.task_id]}{'_v2' if r.epoch == 2 else ''}", r.epoch
    injected_old = [u for r in episodes if r.epoch == 2 and r.phase == "train" for u in r.retrieved if u.source_epoch == 1]
    assert injected_old and metrics["drift"]["post_sr"] is not None and "stale_share" not in metrics["drift"]
