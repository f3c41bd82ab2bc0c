"""An embedder, an actor and an LLM kind of one's own, outside the package (tests/contracts/test_own_parts.py),
each with its own settings model beside its class: named in their YAMLs (tests/own_parts_conf/) as
`tests.own_parts:<Class>`, their config groups are checked by those models through the registry
(memrl_bench.core.config.validate_config) and the parts get them typed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from pydantic import Field

from memrl_bench.actors.base import Actor, Job
from memrl_bench.core.config import Settings
from memrl_bench.core.registry import with_settings
from memrl_bench.core.schema import Outcome, Turn
from memrl_bench.core.vector_index import unit_rows
from memrl_bench.envs.base import Env
from memrl_bench.llm.embedders import Embedder, EmbedderSettings


class DigitCountsSettings(EmbedderSettings):
    digits: str = Field("0123456789", min_length=1, description="The digits counted, one dimension each.")


class DigitCounts(Embedder):
    """A text's key: how often each digit of `digits` occurs in it, plus one (no zero rows)."""

    Settings = DigitCountsSettings

    def __init__(self, digits: str = "0123456789"):
        self.digits = digits

    @property
    def dim(self) -> int:
        return len(self.digits)

    @property
    def identity(self) -> dict[str, Any]:
        return {"model": "digit-counts", "digits": self.digits}

    def embed(self, texts: list[str]) -> np.ndarray:
        return unit_rows(np.array([[text.count(d) + 1.0 for d in self.digits] for text in texts], dtype=np.float32))


class OracleSettings(Settings):
    kind: str
    wrong_every: int = Field(3, ge=2, description="Answers wrong on the multiples of this.")


class Oracle(Actor):
    """Answers tests/own_env.py's parity questions without an LLM, wrong on the multiples of `wrong_every`."""

    Settings = OracleSettings
    needs_llm = False

    async def play(self, job: Job, env: Env) -> Outcome:
        first, _ = env.reset(job.task)
        n = job.task.data["n"]
        right = "yes" if n % 2 == 0 else "no"
        answer = right if n % self.cfg.wrong_every else {"yes": "no", "no": "yes"}[right]
        observation, reward, _, info = env.step(answer)
        return Outcome(success=bool(info["success"]), reward=reward, turns=[Turn(action=answer, observation=observation, reward=reward)])


class SilentSettings(Settings):
    name: str
    reason: str = Field(min_length=1, description="Why this run needs no model.")


@with_settings(SilentSettings)
@contextmanager
def open_silent(cfg: dict[str, Any]) -> Iterator[None]:
    """An LLM kind of one's own: no model, for a run whose actor needs none."""
    yield None
