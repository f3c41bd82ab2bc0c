"""Check that a memory method keeps the MemoryMethod contract (methods/base.py), as
envs/checker.py does for environments and Gymnasium's env_checker for its envs.

`check_method(cls, settings, llm=...)` builds the method and runs every named check below in
order, each on fresh instances with the same settings; each raises its own subclass of
MethodCheckError naming the method, the check and what is wrong. The methods learn from
hand-built episodes (six tasks, some solved), keyed by a bag of hashed words; a method
that manages memory with an LLM is given the `llm` passed in (a scripted model answering
its own prompts: only its author knows what well-formed answers look like).
memrl_bench.cli.contracts.check_method takes a method by name.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import pickle
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from memrl_bench.core.config import config_error
from memrl_bench.core.schema import Episode, MemoryStats, Retrieval, StepRetrieval, Task, Turn
from memrl_bench.methods.base import Experience, MemoryMethod, MethodContext, Query, fingerprint
from memrl_bench.protocols.base import Protocol, ProtocolSettings, ProtocolViolation

TASKS = ("open the red door", "take the blue key", "put the apple in the fridge", "heat the soup", "open the blue door", "take the red key")


class MethodCheckError(Exception):
    """A memory method breaks the MemoryMethod contract."""


class InterfaceError(MethodCheckError):
    """Not a MemoryMethod subclass with a name, or its methods return the wrong types."""


class SettingsError(MethodCheckError):
    """The settings are refused, or given to a method that has none (no pydantic model in `self.config`)."""


class RetrievalError(MethodCheckError):
    """retrieve_batch changed state, or chose differently from the same memory."""


class ReplayError(MethodCheckError):
    """learn given the retrievals ends elsewhere than learn without them (a resumed run)."""


class SnapshotError(MethodCheckError):
    """snapshot / restore do not round-trip the whole state."""


class ItemsError(MethodCheckError):
    """items() holds a memory that did not come from a training episode it learned from."""


def word_vectors(texts: list[str]) -> np.ndarray:
    """Bag of words hashed into 64 dimensions, unit norm: the check's text embedder."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"[a-z]+", text.lower()):
            out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)


def experience(n: int, task: str, success: bool) -> Experience:
    """A played training episode of two turns, as learn receives it."""
    episode = Episode(
        episode_id=f"train-e01-{n:05d}-s0",
        task_id=f"task-{n}",
        split="train",
        phase="train",
        epoch=1,
        batch_index=0,
        order_index=n,
        success=success,
        reward=float(success),
        status="ok",
        turns=[Turn("look", f"You are in a room. {task}"), Turn("take key", "Taken." if success else "There is no key here.")],
    )
    return Experience(episode, Task(episode.task_id, "train", task), word_vectors([task])[0])


def query(exp: Experience) -> Query:
    """A validation query for the task of `exp`."""
    episode_id = exp.episode.episode_id
    return Query(Task("q-" + episode_id, "validation", exp.task.description), exp.key, episode_id, "validation")


def first_batch() -> list[Experience]:
    return [experience(n, TASKS[n % len(TASKS)], n % 3 != 0) for n in range(6)]


def second_batch() -> list[Experience]:
    return [experience(n, TASKS[(n + 2) % len(TASKS)], n % 2 == 0) for n in range(6, 12)]


def _chosen(method: MemoryMethod, queries: list[Query]) -> list[list[str]]:
    found = method.retrieve_batch(queries)
    if not isinstance(found, list) or len(found) != len(queries) or not all(isinstance(r, Retrieval) for r in found):
        raise InterfaceError(f"{method.name}: retrieve_batch must return one Retrieval per query, got {found!r:.200}")
    return [[item.item_id for item in r.items] for r in found]


def _step_chosen(method: MemoryMethod, experiences: list[Experience]) -> list[list[str]]:
    """At step granularity, the items retrieve_step chooses for each episode's second step (by the observation of its first); else []."""
    if not method.step_level:
        return []
    found = [method.retrieve_step(query(e), e.episode.turns[0].observation, 1) for e in experiences]
    if not all(isinstance(r, Retrieval) for r in found):
        raise InterfaceError(f"{method.name}: retrieve_step must return a Retrieval, got {found!r:.200}")
    return [[item.item_id for item in r.items] for r in found]


def _with_step_retrievals(method: MemoryMethod, experiences: list[Experience]) -> list[Experience]:
    """The episodes as played at step granularity: the second turn logs what retrieve_step showed it."""
    if not method.step_level:
        return experiences
    played = []
    for e in experiences:
        found = method.retrieve_step(query(e), e.episode.turns[0].observation, 1)
        shown = dataclasses.replace(e.episode.turns[1], retrieval=StepRetrieval(found.items, found.info.get("cluster"), found.candidates))
        played.append(dataclasses.replace(e, episode=dataclasses.replace(e.episode, turns=[e.episode.turns[0], shown])))
    return played


def _state(method: MemoryMethod) -> dict[str, bytes]:
    """Everything the method holds but the services it was given (the run's LLM, embedder, event loop), pickled."""
    held = {}
    for name, value in vars(method).items():
        if name == "ctx":
            continue
        try:
            held[name] = pickle.dumps(value)
        except Exception as err:  # any failure to pickle means the same here
            raise RetrievalError(
                f"{method.name}: attribute {name!r} cannot be pickled ({err}); the check compares a method's state by pickling it"
            ) from None
    return held


Build = Callable[[], MemoryMethod]


def check_interface(build: Build, scratch: Path) -> None:
    method = build()
    if not isinstance(method, MemoryMethod) or not isinstance(getattr(method, "name", None), str) or not method.name:
        raise InterfaceError(
            f"{type(method).__name__}: a method must be a MemoryMethod subclass with a class attribute `name` (a non-empty str)"
        )
    method.learn(first_batch())
    if not isinstance(method.stats(), MemoryStats):
        raise InterfaceError(f"{method.name}: stats() must return a MemoryStats, got {method.stats()!r:.200}")
    _chosen(method, [query(e) for e in second_batch()])


def check_retrieval_changes_no_state(build: Build, scratch: Path) -> None:
    method = build()
    method.learn(first_batch())
    before, held = fingerprint(method, scratch / "before"), _state(method)
    queries = [query(e) for e in second_batch()]
    found, again = _chosen(method, queries) + _step_chosen(method, second_batch()), _chosen(method, queries)
    again += _step_chosen(method, second_batch())
    if fingerprint(method, scratch / "after") != before:
        raise RetrievalError(f"{method.name}: retrieve_batch changed the memory (its snapshot differs after retrieving)")
    now = _state(method)
    changed = sorted(name for name in held.keys() | now.keys() if held.get(name) != now.get(name))
    if changed:
        raise RetrievalError(
            f"{method.name}: retrieve_batch changed self.{changed[0]}; retrieval changes no state, and what learn needs of it travels in "
            "Retrieval.trace"
        )
    if found != again:
        raise RetrievalError(f"{method.name}: retrieving twice from the same memory chose other items the second time")


def check_learn_replays(build: Build, scratch: Path) -> None:
    retrieving, replaying = build(), build()
    for method in (retrieving, replaying):
        method.learn(first_batch())
    second = _with_step_retrievals(retrieving, second_batch())
    found = retrieving.retrieve_batch([query(e) for e in second])
    played = [dataclasses.replace(e, episode=dataclasses.replace(e.episode, retrieved=r.items)) for e, r in zip(second, found)]
    retrieving.learn([dataclasses.replace(e, retrieval=r) for e, r in zip(played, found)])
    replaying.learn(played)  # as on a resume: the retrievals are gone, the method redoes what it needs
    if fingerprint(retrieving, scratch / "retrieving") != fingerprint(replaying, scratch / "replaying"):
        raise ReplayError(
            f"{retrieving.name}: learn given the batch's retrievals (Experience.retrieval) ends in another memory than learn without them, "
            "as a resumed run replays its log; learn must redo what it needs when Experience.retrieval is None"
        )


def check_snapshot_restores(build: Build, scratch: Path) -> None:
    method, twin = build(), build()
    method.learn(first_batch())
    (scratch / "snapshot").mkdir()
    method.snapshot(scratch / "snapshot")
    twin.restore(scratch / "snapshot")
    if fingerprint(twin, scratch / "twin") != fingerprint(method, scratch / "method"):
        raise SnapshotError(f"{method.name}: a method restored from a snapshot writes another snapshot than the method it came from")
    second = second_batch()
    if _chosen(twin, [query(e) for e in second]) + _step_chosen(twin, second) != _chosen(method, [query(e) for e in second]) + _step_chosen(
        method, second
    ):
        raise SnapshotError(f"{method.name}: a method restored from a snapshot retrieves other items than the method it came from")
    for each in (method, twin):
        each.learn(second)
    if fingerprint(twin, scratch / "twin") != fingerprint(method, scratch / "method"):
        raise SnapshotError(
            f"{method.name}: after the same learn, a restored method holds another memory than the method it came from: the snapshot "
            "misses state learn reads"
        )


def check_items(build: Build, scratch: Path) -> None:
    method = build()
    learned = first_batch()
    method.learn(learned)
    items = method.items()
    try:
        Protocol(ProtocolSettings()).audit(items, {e.episode.episode_id for e in learned}, {"train": "train"})  # the held-out audit
    except ProtocolViolation as err:
        raise ItemsError(f"{method.name}: {err}") from None
    except AttributeError:
        raise InterfaceError(f"{method.name}: items() must return MemoryItems (memrl_bench.core.schema), got {items!r:.200}") from None


CHECKS = (check_interface, check_retrieval_changes_no_state, check_learn_replays, check_snapshot_restores, check_items)


def check_method(cls: type, settings: dict[str, Any] | None = None, llm: Any = None) -> None:
    """Run every check of CHECKS on instances of `cls` built with `settings`; the first that fails
    raises its MethodCheckError. `llm` (a chat model) serves methods that manage memory with one."""
    if not (isinstance(cls, type) and issubclass(cls, MemoryMethod)):
        raise InterfaceError(f"{cls!r} is not a MemoryMethod subclass (memrl_bench.methods.base)")
    settings = dict(settings or {})
    loop = asyncio.new_event_loop()

    def build() -> MemoryMethod:
        try:
            method = cls(settings, MethodContext(seed=0, embed=word_vectors, llm=llm, run=loop.run_until_complete))
        except ValidationError as err:
            raise SettingsError(f"{cls.__name__}: {config_error(err, 'method')}") from None
        if settings and not isinstance(getattr(method, "config", None), BaseModel):  # as the runner refuses them
            raise SettingsError(
                f"{cls.__name__}: settings given ({', '.join(sorted(settings))}) but the method has none (no pydantic model in self.config)"
            )
        return method

    try:
        for check in CHECKS:
            with tempfile.TemporaryDirectory(prefix="memrl-bench-check-") as scratch:
                check(build, Path(scratch))
    finally:
        loop.close()
