"""Leaving out the tasks whose gold answer fails on this machine: one helper for every env
whose tasks carry a gold answer (LLB OS and DB, BigCodeBench; scripts/gold_check.py counts them).

A benchmark task whose own reference solution fails here (a package missing, MySQL-only
SQL, a time limit) would score every method 0 on it and say nothing about memory: it is
excluded, and `Env.excluded()` lists it with the reason, into the run's manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memrl_bench.core.config import cache_root
from memrl_bench.core.runfolder import MAX_SMALL_FILE_BYTES, CorruptRunFolderError, UnreadableJSONError, parse_json, read_regular
from memrl_bench.core.schema import Task
from memrl_bench.envs.base import Env, EnvBrokenError
from memrl_bench.envs.sandbox import CONTAINMENT, SandboxUnavailable, require_sandbox


class GoldFilter:
    """An env's task lists without the tasks whose gold fails on this machine.

    `run_gold(task)` returns "" when the gold passes, else why not. Each task is checked
    once (only as many as a `limit` needs). With `key_parts`, the results are kept in one
    JSON file under cache_root()/<env>/, whose name carries a hash of them: the data and
    whatever else decides the outcome (limits, Python version, packages), so a change
    re-checks; with `needs_sandbox`, `CONTAINMENT` is part of the hash too. Without,
    they are kept in memory (a check that takes milliseconds).
    """

    def __init__(
        self,
        env_name: str,
        key_parts: list[str] | None,
        all_tasks: dict[str, list[Task]],
        run_gold: Callable[[Task], str],
        limit: int | None = None,
        enabled: bool = True,
        workers: int = 2,
        needs_sandbox: bool = True,
    ):
        self.path: Path | None = None
        if key_parts is not None:
            key = hashlib.sha256("\n".join([*key_parts, *([CONTAINMENT] if needs_sandbox else [])]).encode()).hexdigest()[:16]
            self.path = cache_root() / env_name / f"gold_{key}.json"
        self.results: dict[str, str] = _read_cache(self.path, warn=True) if self.path is not None else {}
        self.env_name, self.all_tasks, self.run_gold = env_name, all_tasks, run_gold
        self.limit, self.enabled, self.workers, self.needs_sandbox = limit, enabled, workers, needs_sandbox
        self._served: dict[str, list[Task]] = {}

    def tasks(self, split: str) -> list[Task]:
        """The first `limit` tasks of `split` (all if None) whose gold passes (all of them if not enabled)."""
        if split not in self.all_tasks:
            raise KeyError(f"unknown split {split!r} of {self.env_name}; valid: {', '.join(self.all_tasks)}")
        if split not in self._served:
            listed = self.all_tasks[split]
            if self.enabled:
                if self.needs_sandbox:
                    require_sandbox()
                listed = self._keep_passing(listed)
            self._served[split] = listed[: self.limit] if self.limit is not None else listed
        return list(self._served[split])

    def excluded(self) -> dict[str, str]:
        """Task id -> why it is left out, for the tasks checked so far."""
        if not self.enabled:
            return {}
        known = {t.id for listed in self.all_tasks.values() for t in listed}
        return {task_id: reason for task_id, reason in sorted(self.results.items()) if reason and task_id in known}

    def reason(self, task: Task) -> str:
        """Why `task`'s gold fails here ("" if it passes), checking it now if it was not yet."""
        self._check([task] if task.id not in self.results else [])
        return self.results[task.id]

    def _keep_passing(self, tasks: list[Task]) -> list[Task]:
        kept: list[Task] = []
        position = 0
        while position < len(tasks) and (self.limit is None or len(kept) < self.limit):
            batch = tasks[position : len(tasks) if self.limit is None else position + self.limit - len(kept)]
            self._check([t for t in batch if t.id not in self.results])
            kept += [t for t in batch if not self.results[t.id]]
            position += len(batch)
        return kept

    def _check(self, tasks: list[Task]) -> None:
        if not tasks:
            return
        pool = ThreadPoolExecutor(max_workers=max(1, self.workers))
        try:
            for task, reason in zip(tasks, pool.map(self.run_gold, tasks)):
                self.results[task.id] = reason
        finally:
            pool.shutdown(cancel_futures=True)  # on Ctrl-C: finish the running checks only
            self._save()  # keep what was checked

    def _save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        on_disk = _read_cache(self.path, warn=False)
        on_disk.update(self.results)  # another process may have checked other tasks meanwhile
        temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"results": on_disk, "sha256": _digest(on_disk)}, indent=0, sort_keys=True))
        temporary.replace(self.path)
        self.results = on_disk


def _digest(results: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(results, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _read_cache(path: Path, warn: bool) -> dict[str, str]:
    """The gold results kept in `path` ({} if none), with the sha256 they were written with; a damaged file counts as none
    (its tasks are checked again and the file rewritten), with a warning if `warn`, and so does one whose results do not
    match their digest (an entry edited or a digit flipped changed the task set without a word: 43b), one written before
    the digest, one that is not a regular file (a FIFO would block the read, /dev/zero never end it) or is larger than a
    cache gets."""
    if not path.exists():
        return {}
    try:
        cache = parse_json(read_regular(path, MAX_SMALL_FILE_BYTES))
        results = cache.get("results") if isinstance(cache, dict) else None
        if not (isinstance(results, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in results.items())):
            problem = "not an object of results (task id -> reason) and their sha256"
        elif cache.get("sha256") != _digest(results):
            problem = "its results do not match their sha256: edited, or damaged"
        else:
            return results
    except (OSError, UnreadableJSONError, CorruptRunFolderError) as err:
        problem = str(err)
    if warn:
        print(
            f"memrl-bench: warning: {path}: the gold check cache is damaged ({problem}); checking the gold answers again", file=sys.stderr
        )
    return {}


def gold_failure(env: Env, task: Task) -> str:
    """ "" if playing `task.data["gold"]` (an answer, or a list of actions) through `env` succeeds, else why not."""
    gold = task.data["gold"]
    try:
        env.reset(task)
        for action in gold if isinstance(gold, list) else [gold]:
            observation, _, done, info = env.step(action)
            if done:
                return "" if info.get("success") else str(info.get("detail") or observation)
    except (SandboxUnavailable, EnvBrokenError):
        raise
    except Exception as err:  # a broken task (e.g. its setup fails) is a reason, not a crash
        return f"{type(err).__name__}: {err}"
    finally:
        env.close()
    return "the gold actions did not end the episode"
