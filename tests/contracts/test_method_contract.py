"""Every method keeps the MemoryMethod contract (memrl_bench/methods/base.py), as
memrl_bench.cli.contracts.check_method checks it (the checks: memrl_bench/methods/checker.py):
retrieval changes no state (not memory, nor anything learn reads; what learn needs travels in
Retrieval.trace), a learn given the retrievals ends where a learn that redoes them (a resume)
ends, snapshot and restore round-trip the state, and every item comes from a learned
training episode. LLM-managed methods get a model answering each of their prompts well-formed."""

from __future__ import annotations

import pytest

from memrl_bench.cli.contracts import check_method
from memrl_bench.core import registry
from memrl_bench.methods.checker import ReplayError, RetrievalError, SnapshotError
from memrl_bench.methods.none import NoMemory
from tests.memory_llm_helpers import ScriptedModel, generic_reply

CASES = [(name, {}) for name in registry.names("method")] + [
    ("memp", {"retrieve": "avefact"}),
    ("dynamic_cheatsheet", {"variant": "retrieval_synthesis"}),
    ("memrl", {"epsilon": 0.5, "sim_threshold": -1.0}),
    ("memrl", {"selection": "thompson"}),
    ("skillbank", {"retrieval_mode": "embedding", "q_learning": True}),
    ("skillbank", {"q_learning": True, "evolve_min_episodes": 1}),
    ("selfrag", {"mode": "always_retrieve"}),
    ("rag", {"retrieval_granularity": "step"}),
    ("memrl", {"retrieval_granularity": "step"}),
]


@pytest.mark.parametrize(
    "name, cfg", CASES, ids=lambda v: v if isinstance(v, str) else ",".join(f"{k}={x}" for k, x in v.items()) or "defaults"
)
def test_every_method_keeps_the_contract(name, cfg):
    check_method(name, cfg, llm=ScriptedModel(generic_reply))


class CountsRetrievals(NoMemory):
    """Breaks the first promise: retrieval writes state."""

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.retrievals = 0

    def retrieve(self, query):
        self.retrievals += 1
        return super().retrieve(query)


class NeedsTheTrace(NoMemory):
    """Breaks the second: learn counts the retrievals handed back, which a resume does not have."""

    def __init__(self, cfg, ctx):
        super().__init__(cfg, ctx)
        self.seen = 0

    def learn(self, batch):
        self.seen += sum(e.retrieval is not None for e in batch)
        return super().learn(batch)

    def snapshot(self, path):
        (path / "seen").write_text(str(self.seen))


class ForgetsOnRestore(NeedsTheTrace):
    """Breaks the third: learn counts episodes, which snapshot writes and restore does not read."""

    def learn(self, batch):
        self.seen += len(batch)
        return super(NeedsTheTrace, self).learn(batch)


@pytest.mark.parametrize(
    "cls, error, message",
    [
        (CountsRetrievals, RetrievalError, "none: retrieve_batch changed self.retrievals"),
        (NeedsTheTrace, ReplayError, "none: learn given the batch's retrievals"),
        (ForgetsOnRestore, SnapshotError, "none: a method restored from a snapshot writes another snapshot"),
    ],
)
def test_a_broken_promise_is_its_own_error(cls, error, message):
    with pytest.raises(error, match=message):
        check_method(cls)
