"""MMLU: four-choice questions over 57 subjects; one letter answer, exact match.

The answer must be the right letter; case, surrounding spaces and brackets or a trailing
period ("(B)", "b.") are ignored, anything else is wrong.

Splits are MMLU's own: train = dev (285, the few-shot pool), validation = validation (1531),
test = test (14042), each in file order (by subject). `subjects` keeps only some subjects.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from memrl_bench import prompts
from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Task
from memrl_bench.envs.base import DataMissingError, DataRecord, Env, data_dir, read_data_file
from memrl_bench.envs.settings import DataEnvSettings

_FETCH = "python scripts/fetch_data.py mmlu"
_FILES = {"train": "dev.jsonl", "validation": "validation.jsonl", "test": "test.jsonl"}
LETTERS = "ABCD"


class MMLURecord(DataRecord):
    """One line of an MMLU split file."""

    id: str | int
    subject: str
    question: str
    choices: list[str] = Field(min_length=len(LETTERS), max_length=len(LETTERS))
    answer: Literal["A", "B", "C", "D"]


def read_questions(folder: Path) -> dict[str, dict[str, Any]]:
    """Every question of the MMLU files in `folder` by task id (mmlu/<id>): question, choices, answer, subject."""
    return {f"mmlu/{record['id']}": record for file_name in _FILES.values() for record in read_data_file(folder / file_name, MMLURecord)}


def format_question(question: str, choices: list[str]) -> str:
    return question.strip() + "\n" + "\n".join(f"{letter}. {choice}" for letter, choice in zip(LETTERS, choices))


class MMLUSettings(DataEnvSettings):
    subjects: list[str] | None = Field(None, description="Keep only these subjects (null: all 57).")


class MMLUEnv(Env):
    """One multiple-choice question per task."""

    name = "mmlu"
    grades_in_observation = True
    Settings = MMLUSettings
    settings: MMLUSettings
    labels = ("mmlu", "multiple-choice")
    default_roles: ClassVar[dict[str, Any]] = {"train": "train", "validation": "validation", "test": ["test"]}
    default_actor = "single_turn"

    def __init__(self, settings: MMLUSettings | Mapping[str, Any], seed: int = 0):
        super().__init__(settings, seed)
        self.tasks_per_split = self.settings.tasks_per_split
        folder = data_dir(self.settings.data_dir, "MEMRL_BENCH_MMLU_DIR", "mmlu", _FETCH)
        self._all: dict[str, list[Task]] = {}
        for split, file_name in _FILES.items():
            path = folder / file_name
            if not path.exists():
                raise DataMissingError(f"MMLU file {path} is missing; fetch it with: {_FETCH}")
            self._all[split] = [self._make_task(r, split) for r in read_data_file(path, MMLURecord)]
        known = sorted({t.data["subject"] for listed in self._all.values() for t in listed})
        self.subjects: list[str] | None = self.settings.subjects
        if self.subjects is not None:
            unknown = sorted(set(self.subjects) - set(known))
            if unknown:
                raise ConfigError(f"env.subjects: unknown MMLU subject(s) {', '.join(unknown)}; valid: {', '.join(known)}")
        self._task: Task | None = None

    @staticmethod
    def _make_task(record: dict[str, Any], split: str) -> Task:
        data = {
            "subject": record["subject"],
            "question": record["question"].strip(),
            "choices": list(record["choices"]),
            "gold": record["answer"],
        }
        return Task(id=f"mmlu/{record['id']}", split=split, description=format_question(record["question"], record["choices"]), data=data)

    def splits(self) -> dict[str, str]:
        which = f" of subjects {', '.join(self.subjects)}" if self.subjects else ""
        return {split: f"MMLU's {file_name.split('.')[0]} split{which}, in file order (by subject)" for split, file_name in _FILES.items()}

    def tasks(self, split: str) -> list[Task]:
        if split not in self._all:
            raise KeyError(f"unknown split {split!r} of {self.name}; valid: {', '.join(self._all)}")
        listed = [t for t in self._all[split] if self.subjects is None or t.data["subject"] in self.subjects]
        return listed[: self.tasks_per_split] if self.tasks_per_split is not None else listed

    def instructions(self) -> str:
        return prompts.load("mmlu_instructions")

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._task = task
        subject = task.data["subject"].replace("_", " ")
        # For the harness, never shown to the model: the options and the stem to read the answer
        # with (memrl_bench.core.answers), the key for the report's chance references.
        info = {
            "answer_format": "letter",
            "answer_letters": LETTERS,
            "answer_choices": task.data["choices"],
            "answer_question": task.data["question"],
            "answer_key": task.data["gold"],
        }
        return f"The following is a multiple choice question about {subject}.\n\n{task.description}", info

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self._task is None:
            raise RuntimeError(f"{self.name}: step() before reset() or after the episode ended")
        task, self._task = self._task, None
        answer = action.strip().rstrip(".)").lstrip("(").upper()
        success = answer == task.data["gold"]
        return ("Correct." if success else "Wrong."), float(success), True, {"success": success, "answer": answer}

    def spawn(self) -> MMLUEnv:
        twin = copy.copy(self)  # shares the loaded questions, not the episode
        twin._task = None
        return twin


ENV = MMLUEnv
