"""Streaming, replay and repair: the rules of these protocols and their metrics (issue 17).

streaming (conf/protocol/streaming.yaml): one pass over the train split in the order the
task-order seed fixes; each task is attempted once, scored, then learned from, before the
next (prequential evaluation: StreamBench, Wu et al. 2024, arXiv:2406.08747; Evo-Memory's
streaming task sequences; AgentMemoryBench's online mode). The episodes are logged as
training episodes of epoch 1; their success is the score.
replay (conf/protocol/replay.yaml): a stream where after every `replay_every` learned tasks
`replay_tasks` tasks sampled from those already learned are re-tested with memory frozen
(AgentMemoryBench's replay mode), logged in phase "replay" with epoch = the replay point.
repair (conf/protocol/repair.yaml): the held-out protocol whose first `corrupt_epochs`
epochs feed learn() the flipped success of a seeded share of the training episodes (the
corrupted phase); the later epochs feed the true one (the repair phase). Only the learning
signal is wrong: the log keeps the true success and marks the episode `reward_flipped`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from memrl_bench.config import ProtocolConfig
from memrl_bench.records import EpisodeRecord
from memrl_bench.types import Episode, Task

FLIPPED = "reward_flipped"  # info key of a logged episode whose success learn() saw flipped


def labels(config: ProtocolConfig) -> list[str]:
    """The labels a run of these protocols carries in every output."""
    out = ["streaming"] if config.streaming else []
    out += ["replay"] if config.replay_every else []
    return out + (["corrupted_rewards"] if config.corrupt_share > 0 else [])


# ---- schedules -------------------------------------------------------------------


def corrupted_tasks(order: list[Task], config: ProtocolConfig, epoch: int) -> frozenset[str]:
    """The training tasks of `epoch` whose success learn() sees flipped: round(corrupt_share * n)
    of them, drawn by (corrupt_seed, epoch), in the corrupted phase only."""
    if config.corrupt_share <= 0 or epoch > config.corrupt_epochs:
        return frozenset()
    ids = sorted(t.id for t in order)  # by id: the choice is the corrupt seed's alone, not the task order's
    rng = np.random.default_rng([config.corrupt_seed, epoch])
    return frozenset(ids[i] for i in rng.choice(len(ids), size=round(config.corrupt_share * len(ids)), replace=False))


def replay_sample(learned: list[Task], config: ProtocolConfig, point: int) -> list[Task]:
    """The tasks re-tested at replay point `point` (1-based): replay_tasks of the learned
    ones (all when fewer), drawn without replacement by (replay_seed, point)."""
    rng = np.random.default_rng([config.replay_seed, point])
    chosen = rng.choice(len(learned), size=min(config.replay_tasks, len(learned)), replace=False)
    return [learned[i] for i in chosen]


def as_learned(episode: Episode, learned_success: Callable[[str, bool], bool] = lambda _id, success: success) -> Episode:
    """The episode as learn() sees it: its success flipped where the log marks it corrupted
    (repair), then passed through the env's `learned_success` (Env.learned_success: reward
    noise); a copy with reward 1.0 / 0.0 when that differs, else the episode itself (the log
    keeps the true success)."""
    success = learned_success(episode.episode_id, episode.success != bool(episode.info.get(FLIPPED)))
    return episode if success == episode.success else dataclasses.replace(episode, success=success, reward=float(success))


# ---- metrics ---------------------------------------------------------------------


def _stream(records: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """The stream's scored attempts in stream order (the first sample of each)."""
    return sorted((r for r in records if r.phase == "train" and r.played and r.sample_index == 0), key=lambda r: (r.epoch, r.order_index))


def stream_metrics(records: list[EpisodeRecord], windows: int) -> dict[str, Any]:
    """The streaming protocol's metrics, over the stream's attempts in order.

    running_success[t]: the share of the first t+1 tasks solved (StreamBench's accuracy
    curve over time steps). window_success: the SR of each of `windows` consecutive, near
    equal windows of the stream (numpy.array_split). learning_gain: the last window's SR
    minus the first's (AgentMemoryBench's LG, whose formula is not public: ours; against
    `none` on the same stream the report pairs runs). stability_loss: the largest drop of
    a window's SR below the best window before it, 0 when the windowed SR never falls
    (AgentMemoryBench's SL, formula not public: ours).
    """
    stream = _stream(records)
    if not stream:
        return {}
    solved = np.array([r.success for r in stream], dtype=np.float64)
    window_sr = [float(w.mean()) for w in np.array_split(solved, min(windows, len(solved)))]
    best_before = np.maximum.accumulate(window_sr)
    return {
        "tasks": len(stream),
        "success_rate": float(solved.mean()),
        "running_success": (np.cumsum(solved) / np.arange(1, len(solved) + 1)).tolist(),
        "window_success": window_sr,
        "learning_gain": window_sr[-1] - window_sr[0],
        "stability_loss": float(np.max(best_before - window_sr)),
    }


def replay_metrics(records: list[EpisodeRecord], replay_every: int) -> dict[str, Any]:
    """The replay protocol's metrics.

    A task's immediate score is its success when the stream first attempted it. At each
    replay point k (after k * replay_every learned tasks): the re-tested tasks' SR and
    forgotten, the share of the re-tested tasks solved immediately that fail now (None
    when none was). forgetting_rate (AgentMemoryBench, calculate_replay_metrics.py, on
    binary scores): over the tasks solved immediately and re-tested at least once, the
    mean of each task's share of failed re-tests; 0 no forgetting, 1 all forgotten.
    """
    immediate = {r.task_id: r.success for r in _stream(records)}
    by_point: dict[int, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        if r.phase == "replay":
            by_point[r.epoch].append(r)
    points = {}
    failed_retests: dict[str, list[bool]] = defaultdict(list)
    for k, retested in sorted(by_point.items()):
        solved_before = [r for r in retested if immediate.get(r.task_id)]
        for r in solved_before:
            failed_retests[r.task_id].append(not r.success)
        points[k] = {
            "after_tasks": k * replay_every,
            "retested": len(retested),
            "success_rate": float(np.mean([r.success for r in retested])),
            "forgotten": float(np.mean([not r.success for r in solved_before])) if solved_before else None,
        }
    rates = [float(np.mean(v)) for v in failed_retests.values()]
    return {"points": points, "forgetting_rate": float(np.mean(rates)) if rates else None, "tasks_with_replays": len(rates)}


def repair_metrics(records: list[EpisodeRecord], corrupt_epochs: int) -> dict[str, Any]:
    """The repair protocol's metrics from the held-out (validation) SR after each epoch.

    sr_after_corruption: validation SR after the last corrupted epoch; sr_after_repair:
    after the last epoch; repair_gain: their difference. flipped: the training episodes
    whose success learn() saw flipped (logged with their true success). Error robustness
    and net recovery need a clean run of the same config: see against_clean.
    """
    sr: dict[int, list[bool]] = defaultdict(list)
    for r in records:
        if r.phase == "validation":
            sr[r.epoch].append(r.success)
    curve = {e: float(np.mean(v)) for e, v in sorted(sr.items())}
    train = [r for r in records if r.phase == "train" and r.played]
    flipped = sum(bool(r.info.get(FLIPPED)) for r in train)
    after_corruption = curve.get(corrupt_epochs)
    after_repair = curve[max(curve)] if curve and max(curve) > corrupt_epochs else None
    return {
        "corrupt_epochs": corrupt_epochs,
        "flipped": flipped,
        "flipped_share_of_corrupted_phase": flipped / max(1, sum(r.epoch <= corrupt_epochs for r in train)),
        "validation_success": curve,
        "sr_after_corruption": after_corruption,
        "sr_after_repair": after_repair,
        "repair_gain": after_repair - after_corruption if after_repair is not None and after_corruption is not None else None,
    }


def against_clean(corrupted: dict[str, Any], clean: dict[str, Any]) -> dict[str, float | None]:
    """Error robustness and net recovery of a corrupted run's repair metrics against a clean
    run's (the same config with corrupt_share 0, whose repair metrics are computed with the
    same corrupt_epochs): the issue's definitions, as differences of held-out SR.

    error_robustness: SR after the corrupted phase minus the clean run's SR after the same
    epochs (0: the corruption did no harm; negative: it did). net_recovery: SR after the
    repair phase minus the clean run's SR after as many epochs (0: fully recovered).
    """

    def diff(key: str) -> float | None:
        a, b = corrupted.get(key), clean.get(key)
        return a - b if a is not None and b is not None else None

    return {"error_robustness": diff("sr_after_corruption"), "net_recovery": diff("sr_after_repair")}


def protocol_metrics(records: list[EpisodeRecord], config: ProtocolConfig) -> dict[str, Any]:
    """The metrics of whichever of these protocols the run used (metrics.json keys)."""
    out: dict[str, Any] = {}
    if config.streaming:
        out["streaming"] = stream_metrics(records, config.stream_windows)
    if config.replay_every:
        out["replay"] = replay_metrics(records, config.replay_every)
    if config.corrupt_share > 0 or config.name == "repair":  # a clean twin (share 0) of a repair run is paired on these too
        out["repair"] = repair_metrics(records, config.corrupt_epochs)
    return out
