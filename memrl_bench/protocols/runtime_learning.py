"""runtime_learning (MemRL's main tables): learn on and score the same tasks, CSR over epochs
(conf/protocol/runtime_learning.yaml). Labelled in every output; never the default."""

from __future__ import annotations

from pydantic import model_validator

from memrl_bench.protocols.base import Protocol, ProtocolSettings


class RuntimeLearningSettings(ProtocolSettings):
    @model_validator(mode="after")
    def _scores_training(self) -> RuntimeLearningSettings:
        if self.validate_every_epoch or self.test_at_end:
            raise ValueError(
                "protocol=runtime_learning scores the training episodes; set protocol.validate_every_epoch=false and "
                "protocol.test_at_end=false"
            )
        return self


class RuntimeLearning(Protocol):
    Settings = RuntimeLearningSettings
    labels = ("runtime_learning",)


PROTOCOL = RuntimeLearning
