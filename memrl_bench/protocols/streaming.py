"""streaming (conf/protocol/streaming.yaml): one pass over the train split in the order the
task-order seed fixes; each task is attempted once, scored, then learned from, before the next
(prequential evaluation: StreamBench, Wu et al. 2024, arXiv:2406.08747; Evo-Memory's streaming
task sequences; AgentMemoryBench's online mode). The episodes are logged as training episodes
of epoch 1; their success is the score."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field, model_validator

from memrl_bench.core.schema import Episode, MemoryItem
from memrl_bench.protocols.base import Protocol, ProtocolSettings


class StreamingSettings(ProtocolSettings):
    stream_windows: int = Field(4, ge=2, description="Equal windows the stream is cut into for learning gain and stability loss.")

    @model_validator(mode="after")
    def _single_pass(self) -> StreamingSettings:
        if self.epochs != 1:
            raise ValueError(f"protocol={self.name} is a single pass: set protocol.epochs=1 (got {self.epochs})")
        return self


def stream(records: list[Episode]) -> list[Episode]:
    """The stream's scored attempts in stream order (the first sample of each)."""
    return sorted((r for r in records if r.phase == "train" and r.played and r.sample_index == 0), key=lambda r: (r.epoch, r.order_index))


def stream_metrics(records: list[Episode], windows: int) -> dict[str, Any]:
    """The streaming protocol's metrics, over the stream's attempts in order.

    running_success[t]: the share of the first t+1 tasks solved (StreamBench's accuracy
    curve over time steps). window_success: the SR of each of `windows` consecutive, near
    equal windows of the stream (numpy.array_split). learning_gain: the last window's SR
    minus the first's (AgentMemoryBench's LG, whose formula is not public: ours; against
    `none` on the same stream the report pairs runs). stability_loss: the largest drop of
    a window's SR below the best window before it, 0 when the windowed SR never falls
    (AgentMemoryBench's SL, formula not public: ours).
    """
    attempts = stream(records)
    if not attempts:
        return {}
    solved = np.array([r.success for r in attempts], dtype=np.float64)
    window_sr = [float(w.mean()) for w in np.array_split(solved, min(windows, len(solved)))]
    best_before = np.maximum.accumulate(window_sr)
    return {
        "tasks": len(attempts),
        "success_rate": float(solved.mean()),
        "running_success": (np.cumsum(solved) / np.arange(1, len(solved) + 1)).tolist(),
        "window_success": window_sr,
        "learning_gain": window_sr[-1] - window_sr[0],
        "stability_loss": float(np.max(best_before - window_sr)),
    }


class Streaming(Protocol):
    Settings = StreamingSettings
    labels = ("streaming",)
    metrics_keys = ("streaming",)
    report_columns = {
        "stream_sr": ("stream SR %", 100, 1),
        "learning_gain": ("learning gain (last - first window) pp", 100, 1),
        "stability_loss": ("stability loss pp", 100, 1),
        "stream_gain_over_none": ("stream SR - none's on the same stream pp", 100, 1),
    }
    settings: StreamingSettings

    @classmethod
    def report_numbers(cls, blocks: dict[str, Any]) -> dict[str, float | None]:
        s = blocks["streaming"]
        return {"stream_sr": s["success_rate"], "learning_gain": s["learning_gain"], "stability_loss": s["stability_loss"]}

    def metrics(self, records: list[Episode], items: list[MemoryItem], roles: dict[str, Any]) -> dict[str, Any]:
        return {"streaming": stream_metrics(records, self.settings.stream_windows)}


PROTOCOL = Streaming
