"""LifelongAgentBench OS interaction (MemRL's "llb os" tasks), one throwaway sandbox per episode.

An episode starts a fresh `memrl_bench.envs.sandbox.Sandbox` (the host's filesystem seen
through a copy-on-write overlay, no network) and runs the task's initialization script.
Each action is a bash command (several lines allowed), run as root in a new bash: files,
users and permissions carry over between commands, the working directory and shell
variables do not (as with LLB's `docker exec` per command). `finish` or `commit` ends the
episode, and so does `answer: <text>`. Success: the task's evaluation script exits 0, run by
`Sandbox.check` with the host's system tools (what the episode did to /usr, /bin, /lib ... cannot
change what the check runs), and the episode changed no system file: an episode that modified,
replaced or deleted one, shadowed a system command, added a library or changed the loader's
configuration ends with status "tampered" (the patterns in info["tampering"]) and scores 0; so
does one whose check was refused memory or a process (`starves_the_check`: the episode's files fill the sandbox's
memory, and `! grep -q X file` read a killed grep as "not found"; processes the episode left take every process slot,
and `find ... | awk` read a `find` that could not start `stat` as nothing to report).

All 500 tasks check the final state (files, users, permissions, file contents) with
that script; none compares an answer string, so an `answer:` text is recorded in the
info but not scored. Gold: the task's ground-truth script, then `finish`.
"""

from __future__ import annotations

import copy
import hashlib
import platform
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import MAX_SECONDS, ConfigError
from memrl_bench.core.schema import Task
from memrl_bench.envs.base import DataMissingError, DataRecord, Env, data_bytes, data_dir, hash_fraction, read_data_file
from memrl_bench.envs.gold import GoldFilter, gold_failure
from memrl_bench.envs.sandbox import (
    DEFAULT_HIDDEN_PATHS,
    Limits,
    Sandbox,
    SandboxSettingError,
    check_hidden_paths,
    check_workdir,
    hidden_for_this_process,
    require_sandbox,
)
from memrl_bench.envs.settings import SandboxLimits

_FILES = {"train": "os_interaction_train.json", "validation": "os_interaction_val.json"}
_FETCH = "python scripts/fetch_data.py llb"
_FENCED = re.compile(r"```[\w-]*\n?(.*?)```", re.DOTALL)
_END_ACTIONS = ("finish", "commit", "act: finish")
# why a check that was refused a resource has no verdict (Sandbox.check's CheckResult.starved)
_STARVED = {
    "memory": "a process of the check was killed for lack of memory",
    "processes": "a process of the check could not start: the episode's processes hold every slot",
}


def parse_action(action: str) -> tuple[str, bool, str | None]:
    """(bash command, ends the episode, answer text) from one action; fenced code is unwrapped."""
    text = action.strip()
    blocks = _FENCED.findall(text)
    if blocks:
        text = "\n".join(block.strip("\n") for block in blocks).strip()
    lowered = text.lower()
    if lowered in _END_ACTIONS:
        return "", True, None
    if lowered.startswith("answer:"):
        return "", True, text[len("answer:") :].strip()
    return text, False, None


class _Script(DataRecord):
    script: str


class _Evaluation(DataRecord):
    evaluation_command_item: _Script
    ground_truth_command_item: _Script


class LLBOSRecord(DataRecord):
    """One task of an LLB OS file (os_interaction_train.json, os_interaction_val.json)."""

    instruction: str
    initialization_command_item: _Script
    evaluation_info: _Evaluation
    skill_list: list[str] = []


class LLBOSSettings(SandboxLimits):
    workdir: str = Field("/", min_length=1, description="Working directory of every command.")
    extra_hidden_paths: list[str] = Field(default_factory=list, description="Host folders shown empty inside.")
    command_timeout_s: float = Field(20, gt=0, le=MAX_SECONDS, description="Seconds per command.")


class LLBOSEnv(Env):
    """Bash tasks checked by an evaluation script, each in its own sandbox."""

    name = "llb_os"
    grades_in_observation = True
    Settings = LLBOSSettings
    settings: LLBOSSettings
    labels = ("lifelongagentbench", "tool-use", "sandboxed")
    default_roles: ClassVar[dict[str, Any]] = {"train": "train", "validation": "validation", "test": ["test"]}
    default_actor = "react"

    def __init__(self, settings: LLBOSSettings | Mapping[str, Any], seed: int = 0):
        super().__init__(settings, seed)
        self.tasks_per_split = self.settings.tasks_per_split
        self.workdir: str = self.settings.workdir
        self.limits = Limits(
            timeout_s=float(self.settings.command_timeout_s),
            output_bytes=self.settings.max_output_chars,
            memory_bytes=self.settings.memory_mb << 20,
            max_processes=self.settings.max_processes,
            disk_bytes=self.settings.disk_mb << 20,
        )
        extra = tuple(self.settings.extra_hidden_paths)
        _refuse("extra_hidden_paths", check_hidden_paths, extra)
        _refuse("workdir", check_workdir, self.workdir, DEFAULT_HIDDEN_PATHS + extra)  # before the data is looked for
        folder = data_dir(self.settings.data_dir, "MEMRL_BENCH_LLB_DIR", "llb", _FETCH)
        _refuse("data_dir", check_hidden_paths, (str(folder),))
        # the task data (with its checks) stays unreadable inside, wherever it lives
        self.hidden_paths = DEFAULT_HIDDEN_PATHS + (str(folder),) + extra
        # and so do the folders this process writes: a workdir inside the data or the run's results_dir (44b: every episode
        # an env error, the run complete with nothing played)
        _refuse("workdir", check_workdir, self.workdir, self.hidden_paths + hidden_for_this_process())
        self._all, data_hash = self._load(folder)
        key = ["llb_os v1", data_hash, self.workdir, repr(self.hidden_paths), repr(self.limits), platform.release(), _os_release()]
        self._gold = GoldFilter(
            self.name,
            key,
            self._all,
            self._gold_failure,
            self.tasks_per_split,
            self.settings.exclude_gold_failures,
            self.settings.gold_workers,
        )
        self._sandbox: Sandbox | None = None
        self._task: Task | None = None

    @staticmethod
    def _load(folder: Path) -> tuple[dict[str, list[Task]], str]:
        digest = hashlib.sha256()
        raw: dict[str, dict[str, Any]] = {}
        for split, file_name in _FILES.items():
            path = folder / file_name
            if not path.exists():
                raise DataMissingError(f"LLB OS file {path} is missing; fetch it with: {_FETCH}")
            digest.update(data_bytes(path))
            raw[split] = read_data_file(path, LLBOSRecord, by_id=True)
        listed: dict[str, list[Task]] = {"train": [], "validation": [], "test": []}
        for source, entries in raw.items():
            for key in sorted(entries, key=int):
                entry = entries[key]
                task_id = f"llb_os/{key}"
                split = source if source == "train" else ("validation" if hash_fraction(task_id) < 0.5 else "test")
                data = {
                    "initialization": entry["initialization_command_item"]["script"],
                    "evaluation": entry["evaluation_info"]["evaluation_command_item"]["script"],
                    "gold": [entry["evaluation_info"]["ground_truth_command_item"]["script"], "finish"],
                    "skills": list(entry.get("skill_list", [])),
                }
                listed[split].append(Task(id=task_id, split=split, description=entry["instruction"], data=data))
        return listed, digest.hexdigest()

    def splits(self) -> dict[str, str]:
        return {
            "train": "LifelongAgentBench OS tasks of MemRL's train file os_interaction_train.json (350), in id order",
            "validation": "MemRL's val file os_interaction_val.json (150): the tasks with hash_fraction(task id) < 0.5",
            "test": "MemRL's val file os_interaction_val.json (150): the tasks with hash_fraction(task id) >= 0.5",
        }

    def tasks(self, split: str) -> list[Task]:
        return self._gold.tasks(split)

    def excluded(self) -> dict[str, str]:
        """Task id -> why it is left out: its gold commands do not pass here."""
        return self._gold.excluded()

    def instructions(self) -> str:
        return prompts.render(
            "llb_os_instructions", workdir=self.workdir, timeout_s=f"{self.limits.timeout_s:g}", max_output_chars=self.limits.output_bytes
        )

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.close()
        self._sandbox = self._start(task)
        self._task = task
        return f"You are root in a fresh Linux shell; commands run in {self.workdir}.", {"multiline_actions": True}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self._sandbox is None or self._task is None:
            raise RuntimeError(f"{self.name}: step() before reset() or after the episode ended")
        command, ends, answer = parse_action(action)
        if ends:
            check = self._sandbox.check(self._task.data["evaluation"])
            self.close()
            result, changes = check.result, dict(check.system_changes)
            if check.starved:
                changes["starves_the_check"] = [_STARVED[resource] for resource in check.starved]
            info: dict[str, Any] = {
                "success": result.ok and not changes,
                "answer": answer,
                "detail": (
                    f"evaluation script: exit {result.exit_code}, timed out: {result.timed_out}, output: {result.output[-300:].strip()!r}"
                ),
            }
            if changes:
                changed = "; ".join(f"{pattern}: {', '.join(paths)}" for pattern, paths in sorted(changes.items()))
                info.update(
                    status="tampered", tampering=sorted(changes), detail=f"{info['detail']}; the episode tampered ({changed})"[-600:]
                )
                return f"The task is not solved: the episode tampered with its check ({', '.join(sorted(changes))}).", 0.0, True, info
            return ("The task is solved." if info["success"] else "The task is not solved."), float(info["success"]), True, info
        if not command:
            return "Empty command: give a bash command, or `finish` when the task is done.", 0.0, False, {"multiline_actions": True}
        result = self._sandbox.run(command)
        if result.timed_out:
            observation = f"The command was killed after {self.limits.timeout_s:g} s (time limit).\n{result.output}".rstrip()
        else:
            observation = f"{result.output.rstrip() or '(no output)'}\n(exit code {result.exit_code})"
        return observation, 0.0, False, {"multiline_actions": True}

    def judge_at_step_limit(self) -> dict[str, Any] | None:
        # LifelongAgentBench's OS task runs its evaluation in _complete whatever the session's
        # status (TASK_LIMIT_REACHED included), and MemRL's LLB runner scores that outcome.
        return self.step("finish")[3] if self._sandbox is not None else None

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
        self._sandbox = None
        self._task = None

    def _start(self, task: Task) -> Sandbox:
        require_sandbox()
        sandbox = Sandbox(self.limits, workdir=self.workdir, hidden_paths=self.hidden_paths)
        sandbox.start()
        if task.data["initialization"].strip():
            result = sandbox.run(task.data["initialization"])
            if not result.ok:
                sandbox.close()
                raise RuntimeError(
                    f"{self.name}: task {task.id}: initialization script failed (exit {result.exit_code}, timed out: {result.timed_out}): "
                    f"{result.output[-500:]}"
                )
        return sandbox

    def spawn(self) -> LLBOSEnv:
        twin = copy.copy(self)  # shares the loaded tasks and the gold cache, not the episode
        twin._sandbox, twin._task = None, None
        return twin

    def _gold_failure(self, task: Task) -> str:
        return gold_failure(self.spawn(), task)


def _refuse(key: str, check: Callable[..., None], *values: Any) -> None:
    """Raise ConfigError naming env.<key> when `check(*values)` refuses a sandbox setting."""
    try:
        check(*values)
    except SandboxSettingError as err:
        raise ConfigError(f"env.{key}: {err}") from err


def _os_release() -> str:
    path = Path("/etc/os-release")
    return path.read_text() if path.exists() else ""


ENV = LLBOSEnv
