"""The MMLU env on small hand-written questions, plus the real files when they are there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrl_bench.envs.base import DataMissingError
from memrl_bench.envs.checker import check_env
from memrl_bench.envs.gold import gold_failure
from memrl_bench.envs.mmlu import MMLUEnv

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "mmlu"


def question(subject: str, split: str, index: int, answer: str) -> dict:
    return {
        "id": f"{subject}/{split}/{index}",
        "subject": subject,
        "question": f"Q{index} about {subject}?",
        "choices": ["w", "x", "y", "z"],
        "answer": answer,
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "mmlu"
    folder.mkdir()
    for split, count in (("dev", 3), ("validation", 4), ("test", 5)):
        lines = [question(subject, split, i, "ABCD"[i % 4]) for subject in ("virology", "astronomy") for i in range(count)]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def test_gold_passes_wrong_fails(data: Path):
    env = MMLUEnv({"data_dir": str(data)})
    for split in env.splits():
        for task in env.tasks(split):
            assert gold_failure(env, task) == ""
    task = env.tasks("test")[1]
    prompt, info = env.reset(task)
    assert info == {
        "answer_format": "letter",
        "answer_letters": "ABCD",
        "answer_choices": ["w", "x", "y", "z"],
        "answer_question": "Q1 about virology?",
        "answer_key": task.data["gold"],
    }
    assert "about virology" in prompt and "B. x" in prompt and task.data["gold"] == "B"
    assert env.step(" (b) ")[3]["success"]
    for wrong in ("A", "look", "B is right", ""):
        env.reset(task)
        observation, reward, done, info = env.step(wrong)
        assert done and not info["success"] and reward == 0.0 and observation == "Wrong."


def test_splits_subjects_and_check_env(data: Path):
    env = MMLUEnv({"data_dir": str(data)})
    sizes = {split: len(env.tasks(split)) for split in env.splits()}
    assert sizes == {"train": 6, "validation": 8, "test": 10}
    ids = [t.id for split in env.splits() for t in env.tasks(split)]
    assert len(ids) == len(set(ids))
    check_env(env)
    only = MMLUEnv({"data_dir": str(data), "subjects": ["astronomy"], "tasks_per_split": 2})
    assert [t.id for t in only.tasks("test")] == ["mmlu/astronomy/test/0", "mmlu/astronomy/test/1"]
    with pytest.raises(ValueError, match="unknown MMLU subject.*astrology.*valid: astronomy, virology"):
        MMLUEnv({"data_dir": str(data), "subjects": ["astrology"]})


def test_missing_data_names_path_and_fetch_command(tmp_path: Path):
    with pytest.raises(DataMissingError, match="fetch_data.py mmlu") as missing:
        MMLUEnv({"data_dir": str(tmp_path / "nowhere")})
    assert str(tmp_path / "nowhere") in str(missing.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataMissingError, match="dev.jsonl is missing"):
        MMLUEnv({"data_dir": str(tmp_path / "empty")})


@pytest.mark.skipif(not SHARED.exists(), reason=f"shared MMLU data not at {SHARED}")
def test_real_files():
    env = MMLUEnv({"data_dir": str(SHARED)})
    assert {split: len(env.tasks(split)) for split in env.splits()} == {"train": 285, "validation": 1531, "test": 14042}
    assert len({t.data["subject"] for t in env.tasks("test")}) == 57
    assert all(gold_failure(env, task) == "" for task in env.tasks("validation")[:50])
