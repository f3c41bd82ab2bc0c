"""held_out (the default, the fair protocol): learn on the train split only; validate after every
epoch and test at the end with memory frozen (conf/protocol/held_out.yaml)."""

from __future__ import annotations

from typing import Any

from memrl_bench.protocols.base import Protocol


class HeldOut(Protocol):
    @classmethod
    def kind(cls, settings: dict[str, Any]) -> str:
        """held_out; "order" when epoch_order_seeds sets per-epoch orders (the order counterfactuals);
        held_out@k with k evaluation samples (pass@k)."""
        if settings.get("epoch_order_seeds"):
            return "order"
        return f"held_out@{settings['eval_samples']}" if settings.get("eval_samples", 1) > 1 else "held_out"


PROTOCOL = HeldOut
