"""BigCodeBench (MemRL's "bcb" tasks): write one Python function; the task's unittests decide.

Single turn. The prompt is the task's instruct prompt (config `prompt: complete` for the
docstring-completion form); the answer is code. The solution run is the completion when it
defines the entry point (`def task_func(`), else the task's code_prompt followed by the
completion (a function body). The program is the solution, then the task's tests, then a
runner that prints a fresh random marker only after the whole suite passed: success needs
exit code 0 and that marker, so code that exits early with status 0 does not pass.
It runs in `memrl_bench.sandbox.CodeRunner`: by default a fresh sandbox per program (time
limit, memory and process caps, no network, own folder, nothing written to the host).

Subsets: `stdlib` (the 327 tasks whose libs are all standard library), `hard` (MemRL's hard
split file, 148 tasks), `full` (1140). Splits come from MemRL's split files
(full_seed123.json for full and stdlib, hard_seed42.json for hard): train = train_ids;
val_ids are split into validation / test by a fixed hash of the task id. Tasks whose
canonical solution fails here (a package the tests import is missing, the time limit) are
excluded; that is checked once per task and cached under
${MEMRL_BENCH_CACHE:-~/.cache/memrl-bench}/bigcodebench/.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib.metadata
import re
import sys
import uuid
from pathlib import Path
from typing import Any, ClassVar

from pydantic import field_validator

from memrl_bench import prompts
from memrl_bench.envs.base import DataFileError, DataMissingError, DataRecord, Env, data_dir, hash_fraction, read_data_file, tasks_per_split
from memrl_bench.envs.gold import GoldFilter, gold_failure
from memrl_bench.sandbox import DEFAULT_HIDDEN_PATHS, CodeRunner, Limits
from memrl_bench.types import Task

_FETCH = "python scripts/fetch_data.py bigcodebench"
_DATA_FILE = "BigCodeBench.jsonl.gz"
_SPLIT_FILES = {"full": "full_seed123.json", "stdlib": "full_seed123.json", "hard": "hard_seed42.json"}
SUBSETS = tuple(_SPLIT_FILES)
PROMPTS = ("instruct", "complete")
_RUNNER = """

if __name__ == "__main__":
    import sys as _memrl_sys
    import unittest as _memrl_unittest

    _memrl_suite = _memrl_unittest.defaultTestLoader.loadTestsFromTestCase(TestCases)
    _memrl_result = _memrl_unittest.TextTestRunner(stream=_memrl_sys.stdout, verbosity=1).run(_memrl_suite)
    if _memrl_result.wasSuccessful():
        print("{marker}", flush=True)
    _memrl_sys.exit(0 if _memrl_result.wasSuccessful() else 1)
"""


class BigCodeBenchRecord(DataRecord):
    """One line of BigCodeBench.jsonl.gz."""

    task_id: str
    code_prompt: str
    canonical_solution: str
    test: str
    entry_point: str
    instruct_prompt: str
    complete_prompt: str
    libs: str  # a Python list of module names, as text

    @field_validator("libs")
    @classmethod
    def _module_list(cls, libs: str) -> str:
        try:
            names = ast.literal_eval(libs)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            names = None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"must be a Python list of module names, got {libs[:60]!r}")
        return libs


class BigCodeBenchSplits(DataRecord):
    """MemRL's split file (full_seed123.json, hard_seed42.json)."""

    train_ids: list[str]
    val_ids: list[str]


def is_stdlib_only(libs: list[str]) -> bool:
    return all(lib.split(".")[0] in sys.stdlib_module_names for lib in libs)


def solution_code(completion: str, code_prompt: str, entry_point: str) -> str:
    """The completion if it defines the entry point, else code_prompt + completion (a body)."""
    if re.search(rf"^\s*(async\s+)?def\s+{re.escape(entry_point)}\s*\(", completion, re.MULTILINE):
        return completion
    return code_prompt + completion


def _packages_fingerprint() -> str:
    names = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


class BigCodeBenchEnv(Env):
    """One function per task, checked by the task's unittests in a sandbox."""

    name = "bigcodebench"
    labels = ("bigcodebench", "code", "sandboxed")
    default_roles: ClassVar[dict[str, Any]] = {"train": "train", "validation": "validation", "test": ["test"]}
    default_actor = "single_turn"

    def __init__(self, cfg: dict[str, Any], seed: int = 0):
        super().__init__(cfg, seed)
        self.subset: str = self.cfg.get("subset", "stdlib")
        if self.subset not in SUBSETS:
            raise ValueError(f"env.subset: unknown BigCodeBench subset {self.subset!r}; valid: {', '.join(SUBSETS)}")
        self.prompt: str = self.cfg.get("prompt", "instruct")
        if self.prompt not in PROMPTS:
            raise ValueError(f"env.prompt: unknown prompt form {self.prompt!r}; valid: {', '.join(PROMPTS)}")
        self.tasks_per_split = tasks_per_split(self.cfg)
        self.isolation: str = self.cfg.get("isolation", "sandbox")
        limits = Limits(
            timeout_s=float(self.cfg.get("timeout_s", 60)),
            output_bytes=int(self.cfg.get("max_output_chars", 4000)),
            memory_bytes=int(self.cfg.get("memory_mb", 2048)) << 20,
            max_processes=int(self.cfg.get("max_processes", 256)),
            disk_bytes=int(self.cfg.get("disk_mb", 512)) << 20,
        )
        folder = data_dir(self.cfg, "MEMRL_BENCH_BIGCODEBENCH_DIR", "bigcodebench", _FETCH)
        self.runner = CodeRunner(limits, self.isolation, DEFAULT_HIDDEN_PATHS + (str(folder),))  # the tests must stay unreadable
        self._all, data_hash = self._load(folder)
        key = ["bigcodebench v1", data_hash, sys.version, repr(limits), self.isolation, _packages_fingerprint()]
        enabled, workers = bool(self.cfg.get("exclude_gold_failures", True)), int(self.cfg.get("gold_workers", 2))
        self._gold = GoldFilter(self.name, key, self._all, self._gold_failure, self.tasks_per_split, enabled, workers, needs_sandbox=self.isolation == "sandbox")
        self._task: Task | None = None

    def _load(self, folder: Path) -> tuple[dict[str, list[Task]], str]:
        paths = [folder / _DATA_FILE, folder / _SPLIT_FILES[self.subset]]
        for path in paths:
            if not path.exists():
                raise DataMissingError(f"BigCodeBench file {path} is missing; fetch it with: {_FETCH}")
        digest = hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest()
        records = {r["task_id"]: r for r in read_data_file(paths[0], BigCodeBenchRecord)}
        split_file = read_data_file(paths[1], BigCodeBenchSplits)
        listed: dict[str, list[Task]] = {"train": [], "validation": [], "test": []}
        for source, ids in (("train", split_file["train_ids"]), ("val", split_file["val_ids"])):
            for record_id in ids:
                if record_id not in records:
                    raise DataFileError(f"{paths[1]}: task {record_id!r} is not in {paths[0]}")
                record = records[record_id]
                libs = ast.literal_eval(record["libs"])
                if self.subset == "stdlib" and not is_stdlib_only(libs):
                    continue
                split = "train" if source == "train" else ("validation" if hash_fraction(record_id) < 0.5 else "test")
                data = {
                    "code_prompt": record["code_prompt"],
                    "test": record["test"],
                    "entry_point": record["entry_point"],
                    "libs": libs,
                    "gold": record["code_prompt"] + record["canonical_solution"],
                }
                description = record["instruct_prompt" if self.prompt == "instruct" else "complete_prompt"]
                listed[split].append(Task(id=record_id, split=split, description=description, data=data))
        return listed, digest

    def splits(self) -> dict[str, str]:
        split_file = _SPLIT_FILES[self.subset]
        subset = {"stdlib": "tasks whose libs are all standard library", "hard": "MemRL's hard subset", "full": "all tasks"}[self.subset]
        return {
            "train": f"BigCodeBench, {subset}: train_ids of MemRL's {split_file}, in file order",
            "validation": f"BigCodeBench, {subset}: val_ids of MemRL's {split_file} with hash_fraction(task id) < 0.5",
            "test": f"BigCodeBench, {subset}: val_ids of MemRL's {split_file} with hash_fraction(task id) >= 0.5",
        }

    def tasks(self, split: str) -> list[Task]:
        return self._gold.tasks(split)

    def excluded(self) -> dict[str, str]:
        """Task id -> why it is left out: its canonical solution fails here."""
        return self._gold.excluded()

    def instructions(self) -> str:
        return prompts.load("bigcodebench_instructions")

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._task = task
        return task.description, {"answer_format": "code"}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self._task is None:
            raise RuntimeError(f"{self.name}: step() before reset() or after the episode ended")
        task, self._task = self._task, None
        marker = uuid.uuid4().hex
        program = solution_code(action, task.data["code_prompt"], task.data["entry_point"]) + "\n\n" + task.data["test"] + _RUNNER.format(marker=marker)
        result = self.runner.run(program)
        success = result.exit_code == 0 and marker in result.output
        report = result.output.replace(marker, "").strip()
        if result.timed_out:
            report = f"killed after the {self.runner.limits.timeout_s:g} s time limit\n{report}"
        observation = "All tests pass." if success else f"The tests fail:\n{report[-1500:]}"
        return observation, float(success), True, {"success": success, "detail": report[-300:], "seconds": round(result.seconds, 2)}

    def spawn(self) -> BigCodeBenchEnv:
        twin = copy.copy(self)  # shares the loaded tasks and the gold cache, not the episode
        twin._task = None
        return twin

    def _gold_failure(self, task: Task) -> str:
        return gold_failure(self.spawn(), task)


ENV = BigCodeBenchEnv
