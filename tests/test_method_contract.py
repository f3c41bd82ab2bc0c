"""Every method keeps the MemoryMethod contract (memrl_bench/methods/base.py): retrieval changes
no state (not memory, nor anything learn reads; what learn needs travels in Retrieval.trace),
and a learn given the retrievals ends where a learn that redoes them (a resume) ends."""

from __future__ import annotations

import asyncio
import dataclasses
import pickle

import pytest

from memrl_bench import registry
from memrl_bench.methods.base import fingerprint
from tests.memory_llm_helpers import ScriptedModel, context, experience, generic_reply, query

CASES = [(name, {}) for name in registry.names("method")] + [("memp", {"retrieve": "avefact"}), ("memrl", {"epsilon": 0.5, "sim_threshold": -1.0}), ("memrl", {"selection": "thompson"})]
TASKS = ["open the red door", "take the blue key", "put the apple in the fridge", "heat the soup", "open the blue door", "take the red key"]


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def state(method) -> dict[str, bytes]:
    """Everything the method holds but the services it was given (the run's LLM, embedder, event loop)."""
    return {name: pickle.dumps(value) for name, value in vars(method).items() if name != "ctx"}


def build(name: str, cfg: dict, loop):
    return registry.get("method", name)(cfg, context(ScriptedModel(generic_reply), loop))


@pytest.mark.parametrize("name, cfg", CASES, ids=lambda v: v if isinstance(v, str) else ",".join(f"{k}={x}" for k, x in v.items()) or "defaults")
def test_retrieval_changes_no_state_and_learn_takes_what_it_needs_from_the_retrieval(name, cfg, loop, tmp_path):
    first = [experience(n, TASKS[n % len(TASKS)], n % 3 != 0) for n in range(6)]
    second = [experience(n, TASKS[(n + 2) % len(TASKS)], n % 2 == 0) for n in range(6, 12)]
    retrieving, replaying = build(name, cfg, loop), build(name, cfg, loop)
    for method in (retrieving, replaying):
        method.learn(first)

    before, held = fingerprint(retrieving, tmp_path / "before"), state(retrieving)
    found = retrieving.retrieve_batch([query(e.task.description, e.episode.episode_id, e.key) for e in second])
    again = retrieving.retrieve_batch([query(e.task.description, e.episode.episode_id, e.key) for e in second])
    assert fingerprint(retrieving, tmp_path / "after") == before
    assert state(retrieving) == held
    assert [[i.item_id for i in r.items] for r in again] == [[i.item_id for i in r.items] for r in found]  # nothing it did changed the next choice

    played = [dataclasses.replace(e, episode=dataclasses.replace(e.episode, retrieved=r.items)) for e, r in zip(second, found)]
    retrieving.learn([dataclasses.replace(e, retrieval=r) for e, r in zip(played, found)])
    replaying.learn(played)  # as on a resume: the retrievals are gone, the method redoes what it needs
    assert fingerprint(retrieving, tmp_path / "a") == fingerprint(replaying, tmp_path / "b")
