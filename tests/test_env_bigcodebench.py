"""The BigCodeBench env on small hand-written tasks in BigCodeBench's format, and a few real ones."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from memrl_bench.envs.base import DataMissingError, hash_fraction
from memrl_bench.envs.bigcodebench import BigCodeBenchEnv, is_stdlib_only, solution_code
from memrl_bench.envs.checker import check_env
from memrl_bench.envs.gold import gold_failure
from memrl_bench.sandbox import unavailable_reason

REASON = unavailable_reason()
needs_sandbox = pytest.mark.skipif(REASON is not None, reason=f"sandbox unavailable here: {REASON}")
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "bigcodebench"

TEST_ADD = """import unittest
class TestCases(unittest.TestCase):
    def test_small(self):
        self.assertEqual(task_func(2, 3), 5)
    def test_negative(self):
        self.assertEqual(task_func(-2, -3), -5)
"""


def record(number: int, libs: list[str], canonical: str = "    return a + b\n", test: str = TEST_ADD) -> dict:
    code_prompt = "import math\ndef task_func(a, b):\n"
    return {
        "task_id": f"BigCodeBench/{number}",
        "complete_prompt": code_prompt + '    """Add a and b."""\n',
        "instruct_prompt": f"Write task_func(a, b) returning a + b (task {number}).",
        "canonical_solution": canonical,
        "code_prompt": code_prompt,
        "test": test,
        "entry_point": "task_func",
        "doc_struct": "{}",
        "libs": repr(libs),
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "bigcodebench"
    folder.mkdir()
    records = [record(n, ["math"]) for n in range(8)]
    records.append(record(12, ["math"], test="import not_installed_anywhere\n" + TEST_ADD))  # the tests need a missing package
    records.append(record(13, ["numpy"]))  # not stdlib-only
    with gzip.open(folder / "BigCodeBench.jsonl.gz", "wt") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)
    split = {"seed": 1, "train_ids": [f"BigCodeBench/{n}" for n in (12, 0, 1, 13)], "val_ids": [f"BigCodeBench/{n}" for n in range(2, 8)]}
    (folder / "full_seed123.json").write_text(json.dumps(split))
    return folder


@pytest.fixture
def env(data: Path, tmp_path: Path, monkeypatch) -> BigCodeBenchEnv:
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    return BigCodeBenchEnv({"data_dir": str(data), "timeout_s": 10})


def answer(env: BigCodeBenchEnv, task_id: str, completion: str) -> tuple[str, dict]:
    task = next(t for listed in env._all.values() for t in listed if t.id == task_id)
    prompt, info = env.reset(task)
    assert info["answer_format"] == "code" and prompt == task.description
    observation, _, done, step_info = env.step(completion)
    assert done
    return observation, step_info


def test_solution_code_keeps_a_full_definition_or_completes_a_body():
    assert solution_code("def task_func(a, b):\n    return 1\n", "PROMPT\n", "task_func") == "def task_func(a, b):\n    return 1\n"
    assert solution_code("    return 1\n", "import x\ndef task_func(a, b):\n", "task_func") == "import x\ndef task_func(a, b):\n    return 1\n"
    assert is_stdlib_only(["os", "collections.abc"]) and not is_stdlib_only(["os", "numpy"])


@needs_sandbox
def test_gold_body_and_wrong_answers(env: BigCodeBenchEnv):
    assert gold_failure(env, env.tasks("train")[0]) == ""
    assert answer(env, "BigCodeBench/0", "    return b + a\n")[1]["success"]  # a body completes the code prompt
    observation, info = answer(env, "BigCodeBench/0", "def task_func(a, b):\n    return a - b\n")
    assert not info["success"] and "FAILED" in observation
    assert not answer(env, "BigCodeBench/0", "look")[1]["success"]
    assert not answer(env, "BigCodeBench/0", "def task_func(a, b):\n    import os\n    os._exit(0)\n")[1]["success"]  # exit 0 before the suite ends


@needs_sandbox
def test_time_limit(env: BigCodeBenchEnv):
    env.runner.limits = type(env.runner.limits)(timeout_s=2)
    observation, info = answer(env, "BigCodeBench/0", "def task_func(a, b):\n    while True:\n        pass\n")
    assert not info["success"] and "time limit" in observation and info["seconds"] < 10


@needs_sandbox
def test_subsets_splits_exclusion_and_check_env(env: BigCodeBenchEnv, data: Path):
    train = [t.id for t in env.tasks("train")]
    assert train == ["BigCodeBench/0", "BigCodeBench/1"]  # 12 excluded (its tests need a missing package), 13 not stdlib
    assert list(env.excluded()) == ["BigCodeBench/12"] and "not_installed_anywhere" in env.excluded()["BigCodeBench/12"]
    validation, test = {t.id for t in env.tasks("validation")}, {t.id for t in env.tasks("test")}
    assert validation and test and not validation & test and len(validation | test) == 6
    assert all(hash_fraction(t) < 0.5 for t in validation) and all(hash_fraction(t) >= 0.5 for t in test)
    check_env(env)
    full = BigCodeBenchEnv({"data_dir": str(data), "subset": "full", "exclude_gold_failures": False, "prompt": "complete"})
    assert [t.id for t in full.tasks("train")] == ["BigCodeBench/12", "BigCodeBench/0", "BigCodeBench/1", "BigCodeBench/13"]
    assert full.tasks("train")[1].description.endswith('"""Add a and b."""\n')


def test_bad_config_and_missing_data(data: Path, tmp_path: Path):
    with pytest.raises(ValueError, match="unknown BigCodeBench subset 'easy'"):
        BigCodeBenchEnv({"data_dir": str(data), "subset": "easy"})
    with pytest.raises(DataMissingError, match="fetch_data.py bigcodebench") as missing:
        BigCodeBenchEnv({"data_dir": str(tmp_path / "nowhere")})
    assert str(tmp_path / "nowhere") in str(missing.value)
    with pytest.raises(DataMissingError, match="hard_seed42.json is missing"):
        BigCodeBenchEnv({"data_dir": str(data), "subset": "hard"})


@needs_sandbox
@pytest.mark.skipif(not SHARED.exists(), reason=f"shared BigCodeBench data not at {SHARED}")
def test_real_stdlib_tasks(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path))
    env = BigCodeBenchEnv({"data_dir": str(SHARED), "tasks_per_split": 1})
    assert len(env._all["train"]) + len(env._all["validation"]) + len(env._all["test"]) == 327
    real = env.tasks("train")[0]
    assert gold_failure(env, real) == ""
    env.reset(real)
    assert not env.step("    pass\n")[3]["success"]
