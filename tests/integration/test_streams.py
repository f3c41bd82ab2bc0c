"""The streaming, replay and repair protocols (memrl_bench/protocols: streaming.py, replay.py, repair.py): their schedules, the
repair protocol's corrupted learning signal, and each metric pinned on a hand-built log."""

import json

import pytest

from memrl_bench.core import registry
from memrl_bench.core.schema import Episode, Task
from memrl_bench.methods.none import NoMemory
from memrl_bench.protocols import FLIPPED, epoch_order
from memrl_bench.protocols.repair import against_clean, repair_metrics
from memrl_bench.protocols.replay import replay_metrics
from memrl_bench.protocols.streaming import stream_metrics
from memrl_bench.runner.loop import run
from tests.helpers import build_schedule, config, crash_in_learn_then_resume, protocol, record

# a checkpoint only at epoch ends: with one task per batch, one after every batch is most of a stream's time
STREAM = {
    "name": "streaming",
    "epochs": 1,
    "batch_size": 1,
    "validate_every_epoch": False,
    "test_at_end": False,
    "checkpoint_interval_s": 1e9,
}
REPLAY = {**STREAM, "name": "replay", "replay_every": 10, "replay_tasks": 4}
REPAIR = {"name": "repair", "epochs": 3, "corrupt_share": 0.25, "corrupt_epochs": 2}


def tasks(n: int, split: str = "train") -> list[Task]:
    return [Task(f"{split}/{i}", split, "") for i in range(n)]


def log(path) -> list[dict]:
    return [json.loads(line) for line in (path / "episodes.jsonl").read_text().splitlines()]


# ---- schedules ---------------------------------------------------------------------


def test_a_stream_is_one_pass_in_the_seeded_order_one_task_per_memory_state():
    train = tasks(12)
    schedule = build_schedule(STREAM, {"train": "train"}, {"train": train}, task_order_seed=3)
    assert [b.tasks for b in schedule] == [(t,) for t in epoch_order(train, 3, 1, None)]
    assert {b.phase for b in schedule} == {"train"}
    other = build_schedule(STREAM, {"train": "train"}, {"train": train}, task_order_seed=4)
    assert [b.tasks for b in other] != [b.tasks for b in schedule]  # the order is the seed's


def test_replay_retests_a_sample_of_the_learned_tasks_after_every_m():
    train = tasks(25)
    schedule = build_schedule(REPLAY, {"train": "train"}, {"train": train}, task_order_seed=0)
    learned: list[str] = []
    retested: dict[int, list[str]] = {}
    for batch in schedule:
        if batch.phase == "train":
            learned += [t.id for t in batch.tasks]
        else:
            assert batch.phase == "replay" and len(learned) == 10 * batch.epoch
            retested.setdefault(batch.epoch, []).extend(t.id for t in batch.tasks)
    assert list(retested) == [1, 2] and len(learned) == 25  # no point after 25: it is not a multiple of m
    for point, ids in retested.items():
        assert len(set(ids)) == 4 and set(ids) <= set(learned[: 10 * point])
    ids = [batch.episode_id(i, 0) for batch in schedule for i in range(len(batch.tasks))]
    assert len(ids) == len(set(ids))


def test_a_replay_point_inside_a_batch_comes_after_it_and_samples_the_first_m():
    schedule = build_schedule(REPLAY | {"batch_size": 4}, {"train": "train"}, {"train": tasks(12)}, task_order_seed=0)
    phases = [(b.phase, len(b.tasks)) for b in schedule]
    assert phases == [("train", 4), ("train", 4), ("train", 4), ("replay", 4)]  # the 10th task is learned in the third batch
    learned = [t.id for b in schedule[:3] for t in b.tasks]
    assert {t.id for t in schedule[3].tasks} <= set(learned[:10])


def test_the_corrupted_share_is_seeded_and_only_in_the_corrupted_epochs():
    train = tasks(40)
    schedule = build_schedule(REPAIR, {"train": "train"}, {"train": train}, task_order_seed=0)
    flipped = {e: set().union(*(b.flipped for b in schedule if b.phase == "train" and b.epoch == e)) for e in (1, 2, 3)}
    assert len(flipped[1]) == len(flipped[2]) == 10 and flipped[3] == set() and flipped[1] != flipped[2]
    again = build_schedule(REPAIR, {"train": "train"}, {"train": train}, task_order_seed=5)
    assert {t for b in again if b.epoch == 1 for t in b.flipped} == flipped[1]  # the corrupt seed's, not the order's
    other = build_schedule(REPAIR | {"corrupt_seed": 1}, {"train": "train"}, {"train": train}, task_order_seed=0)
    assert {t for b in other if b.epoch == 1 for t in b.flipped} != flipped[1]


# ---- the repair protocol's corruption touches only the learning signal --------------


class Recording(NoMemory):
    """No memory, so that play does not depend on learning: records what learn() saw."""

    name = "recording"
    seen: dict[str, bool] = {}

    def learn(self, batch):
        Recording.seen.update({exp.episode.episode_id: exp.episode.success for exp in batch})
        return super().learn(batch)


def test_reward_corruption_touches_only_the_learning_signal(tmp_path, monkeypatch):
    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda kind, name: Recording if name == "recording" else real_get(kind, name))
    Recording.seen = {}
    clean = run(config(method={"name": "recording"}, protocol=REPAIR | {"corrupt_share": 0.0}), tmp_path / "clean")
    learned_clean = dict(Recording.seen)
    Recording.seen = {}
    corrupted = run(config(method={"name": "recording"}, protocol=REPAIR), tmp_path / "corrupted")
    train = {r["episode_id"]: r for r in log(tmp_path / "corrupted") if r["phase"] == "train"}
    flipped = {i for i, r in train.items() if r["info"].get(FLIPPED)}
    assert len(flipped) == 20 and all(train[i]["epoch"] <= 2 for i in flipped)  # 25% of 40, in epochs 1 and 2
    # the log keeps the true success: the same as the clean run's, episode by episode
    assert {i: r["success"] for i, r in train.items()} == {
        r["episode_id"]: r["success"] for r in log(tmp_path / "clean") if r["phase"] == "train"
    }
    assert learned_clean == {i: r["success"] for i, r in train.items()}
    # learn() saw the flipped success on exactly the flipped episodes
    assert {i for i, s in Recording.seen.items() if s != train[i]["success"]} == flipped
    assert corrupted["success_rate"] == clean["success_rate"]
    assert corrupted["repair"]["flipped"] == 20 and clean["repair"]["flipped"] == 0
    assert "corrupted_rewards" in corrupted["labels"] and "corrupted_rewards" not in clean["labels"]


def test_learn_replayed_from_the_log_after_a_resume_sees_the_same_flip():
    logged = Episode("train-e01-00000-s0", "t", "train", "train", 1, 0, 0, success=True, reward=1.0, status="ok", info={FLIPPED: True})
    replayed = Episode.from_dict(logged.to_dict())
    repair = protocol(REPAIR)
    assert repair.learning_signal(replayed) is False and replayed.success is True  # learn() is told it failed; the log keeps the truth
    clean = Episode("train-e01-00001-s0", "u", "train", "train", 1, 0, 1, success=False, reward=0.0, status="ok")
    assert repair.learning_signal(clean) is False and protocol({}).learning_signal(replayed) is True


# ---- runs on the synthetic env ------------------------------------------------------


def test_a_replay_run_retests_with_memory_frozen_and_reports_forgetting(tmp_path):
    metrics = run(config(protocol=REPLAY), tmp_path / "run")
    records = log(tmp_path / "run")
    replays = [r for r in records if r["phase"] == "replay"]
    assert len(replays) == 4 * 4 and {r["epoch"] for r in replays} == {1, 2, 3, 4}  # 40 tasks, m=10, n=4
    assert sum(r["phase"] == "train" for r in records) == 40
    assert set(metrics["replay"]["points"]) == {1, 2, 3, 4} and metrics["labels"][:2] == ["streaming", "replay"]
    assert metrics["streaming"]["tasks"] == 40 and len(metrics["streaming"]["running_success"]) == 40


# no checkpoint inside an epoch: the resume replays learn() from the log (with the flips, for repair)
@pytest.mark.parametrize("protocol, crash_at", [(REPLAY, 23), (REPAIR, 4)])  # after the second replay point; epoch 2's second batch
def test_a_run_interrupted_then_resumed_equals_uninterrupted(tmp_path, monkeypatch, protocol, crash_at):
    from memrl_bench.core.schema import strip_measured

    cfg = config(protocol=protocol | {"checkpoint_interval_s": 1e9})
    run(cfg, tmp_path / "reference")
    crash_in_learn_then_resume(monkeypatch, cfg, tmp_path / "resumed", [crash_at])
    assert [strip_measured(r) for r in log(tmp_path / "resumed")] == [strip_measured(r) for r in log(tmp_path / "reference")]


def test_a_method_that_learns_during_a_replay_fails_the_run(tmp_path, monkeypatch):
    from memrl_bench.protocols import ProtocolViolation
    from tests.integration.test_protocol import MutatingMethod

    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda kind, name: MutatingMethod if name == "mutating" else real_get(kind, name))
    with pytest.raises(ProtocolViolation, match="memory changed during the replay phase"):
        run(config(method={"name": "mutating"}, protocol=REPLAY), tmp_path / "run")


# ---- metrics pinned on hand-built logs -----------------------------------------------


def stream_log(successes: list[bool]) -> list:
    return [record(f"t{i}", 1, s, order_index=i) for i, s in enumerate(successes)]


def test_stream_metrics_on_a_hand_built_stream():
    # windows of 2: [0,0] [1,0] [1,1] [0,1] -> 0, .5, 1, .5
    m = stream_metrics(stream_log([False, False, True, False, True, True, False, True]), windows=4)
    assert m["window_success"] == [0.0, 0.5, 1.0, 0.5]
    assert m["learning_gain"] == 0.5 and m["stability_loss"] == 0.5 and m["success_rate"] == 0.5
    assert m["running_success"] == [0.0, 0.0, 1 / 3, 0.25, 0.4, 0.5, 3 / 7, 0.5]
    rising = stream_metrics(stream_log([False, False, True, True]), windows=2)
    assert (rising["learning_gain"], rising["stability_loss"]) == (1.0, 0.0)


def test_stream_metrics_follow_the_stream_order_not_the_log_order():
    shuffled = list(reversed(stream_log([False, True, True, True])))
    assert stream_metrics(shuffled, windows=2)["window_success"] == [0.5, 1.0]


def test_replay_metrics_on_a_hand_built_log():
    stream = stream_log([True, True, False, True])  # t0, t1 solved, t2 failed, t3 solved at first attempt
    replays = [
        record("t0", 1, False, phase="replay"),
        record("t2", 1, True, phase="replay"),  # failed first: not counted as forgetting or retention
        record("t0", 2, True, phase="replay"),
        record("t1", 2, False, phase="replay"),
        record("t3", 2, True, phase="replay"),
    ]
    m = replay_metrics(stream + replays, replay_every=2)
    assert m["points"][1] == {"after_tasks": 2, "retested": 2, "success_rate": 0.5, "forgotten": 1.0}
    assert m["points"][2] == {"after_tasks": 4, "retested": 3, "success_rate": 2 / 3, "forgotten": 1 / 3}
    # per task solved first: t0 failed 1 of 2 re-tests, t1 1 of 1, t3 0 of 1 -> mean(.5, 1, 0)
    assert m["forgetting_rate"] == pytest.approx(0.5) and m["tasks_with_replays"] == 3


def test_repair_metrics_and_the_pairing_with_a_clean_run():
    def validation(epoch: int, solved: int) -> list:
        return [record(f"v{i}", epoch, i < solved, phase="validation") for i in range(4)]

    train = [record("t0", 1, True, info={FLIPPED: True}), record("t1", 1, False), record("t0", 3, True)]
    corrupted = repair_metrics(train + validation(1, 1) + validation(2, 1) + validation(3, 3), corrupt_epochs=2)
    assert corrupted["validation_success"] == {1: 0.25, 2: 0.25, 3: 0.75}
    assert (corrupted["sr_after_corruption"], corrupted["sr_after_repair"], corrupted["repair_gain"]) == (0.25, 0.75, 0.5)
    assert corrupted["flipped"] == 1 and corrupted["flipped_share_of_corrupted_phase"] == 0.5
    clean = repair_metrics(validation(1, 2) + validation(2, 3) + validation(3, 4), corrupt_epochs=2)
    assert against_clean(corrupted, clean) == {"error_robustness": -0.5, "net_recovery": -0.25}


# ---- the report ------------------------------------------------------------------------


@pytest.mark.slow  # five runs and a report: ~16 s alone on 2 cores
def test_the_report_pairs_twins_and_draws_each_protocol(tmp_path):
    from memrl_bench.report import report

    runs = tmp_path / "runs"
    stream = run(config(protocol=STREAM), runs / "stream_memrl")
    none = run(config(method={"name": "none"}, protocol=STREAM), runs / "stream_none")
    corrupted = run(config(protocol=REPAIR), runs / "repair")
    clean = run(config(protocol=REPAIR | {"corrupt_share": 0.0}), runs / "repair_clean")
    run(config(protocol=REPLAY), runs / "replay")
    report(runs, tmp_path / "report")
    gain = 100 * (stream["streaming"]["success_rate"] - none["streaming"]["success_rate"])
    robustness = 100 * (corrupted["repair"]["sr_after_corruption"] - clean["repair"]["sr_after_corruption"])
    recovery = 100 * (corrupted["repair"]["sr_after_repair"] - clean["repair"]["sr_after_repair"])
    view = (tmp_path / "report" / "tables" / "protocols.md").read_text()
    assert f"| {gain:.1f} (n=1) |" in view and f"| {robustness:.1f} (n=1) | {recovery:.1f} (n=1) |" in view
    page = (tmp_path / "report" / "report.html").read_text()
    for name in ("streaming", "replay", "repair"):
        assert (tmp_path / "report" / "figures" / f"{name}.svg").read_text().count("series-") >= 1
        assert f'<figure id="fig-{name}">' in page  # the report page shows each protocol's figure
    assert "fig-transfer" not in page and "Figure skipped" not in page.split('id="protocols"')[1].split("</section>")[0]
