"""A whole run whose model forges successes, through the real runner, the real BigCodeBench env
and its checks (process isolation: no root needed), with a scripted model: the forged episodes
score 0, those that tampered are flagged (status "tampered"), the report counts them per run,
and the run completes."""

from __future__ import annotations

import gzip
import json
import re

from memrl_bench.core.records import read_run
from memrl_bench.report.load import load
from memrl_bench.runner.loop import run
from tests.helpers import config
from tests.memory_llm_helpers import WordBagEmbedder
from tests.scripted_llm import ScriptedChatModel

TESTS = """import unittest
class TestCases(unittest.TestCase):
    def test_small(self):
        self.assertEqual(task_func(2, 3), 5)
    def test_negative(self):
        self.assertEqual(task_func(-2, -3), -5)
"""
WRONG = "def task_func(a, b):\n    return 0\n"
# What the model answers, by the number in the task's prompt: the old forgeries and one honest answer.
ANSWERS = {
    0: WRONG
    + "import re, sys\nprint(*re.findall(r'[0-9a-f]{32}', open(__file__).read()))\nsys.exit(0)\n",  # prints any marker its file holds
    1: "import unittest\nunittest.TestResult.wasSuccessful = lambda self: True\n" + WRONG,
    2: "import os\ndef task_func(a, b):\n    os._exit(0)\n",
    3: "def task_func(a, b):\n    return a + b\n",
}
TAMPERED = {1: "patches_unittest", 2: "exit_before_report"}


def reply(messages: list[dict[str, str]]) -> str:
    number = int(re.findall(r"\(task (\d+)\)", messages[-1]["content"])[-1])
    return f"```python\n{ANSWERS[number % len(ANSWERS)]}```"


def test_a_run_whose_model_forges_successes_scores_them_zero_and_counts_the_tampering(tmp_path):
    data = tmp_path / "bigcodebench"
    data.mkdir()
    records = [
        {
            "task_id": f"BigCodeBench/{n}",
            "complete_prompt": "",
            "instruct_prompt": f"Write task_func(a, b) returning a + b (task {n}).",
            "canonical_solution": "    return a + b\n",
            "code_prompt": "def task_func(a, b):\n",
            "test": TESTS,
            "entry_point": "task_func",
            "doc_struct": "{}",
            "libs": "['math']",
        }
        for n in range(8)
    ]
    with gzip.open(data / "BigCodeBench.jsonl.gz", "wt") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)
    (data / "full_seed123.json").write_text(
        json.dumps({"train_ids": [f"BigCodeBench/{n}" for n in range(4)], "val_ids": [f"BigCodeBench/{n}" for n in range(4, 8)]})
    )
    cfg = config(
        method={"name": "rag"},
        llm={"name": "openai", "model": "scripted", "base_url": "http://127.0.0.1:9/v1"},
        embedder={"name": "openai", "model": "hashed-bag-of-words"},
        protocol={"epochs": 1, "batch_size": 2, "checkpoint_interval_s": 0, "validate_every_epoch": False},
    )
    cfg["env"] = {"name": "bigcodebench", "data_dir": str(data), "isolation": "process", "timeout_s": 20, "exclude_gold_failures": False}
    folder = tmp_path / "run"
    run(cfg, folder, llm=ScriptedChatModel(reply), embedder=WordBagEmbedder())
    assert (folder / "COMPLETE").exists()
    episodes = read_run(folder).episodes
    numbers = [int(episode.task_id.split("/")[1]) % len(ANSWERS) for episode in episodes]
    assert set(numbers) == set(ANSWERS)  # every answer was played (the 4 training tasks)
    for episode in episodes:
        number = int(episode.task_id.split("/")[1]) % len(ANSWERS)
        assert episode.success is (number == 3), (episode.task_id, episode.status)
        assert episode.status == ("tampered" if number in TAMPERED else "ok"), (episode.task_id, episode.status)
        if number in TAMPERED:
            assert TAMPERED[number] in episode.turns[-1].observation and TAMPERED[number] in episode.info["tampering"]
    counted = load(folder).episodes.groupby("run")["tampered"].sum()
    assert counted.tolist() == [sum(n in TAMPERED for n in numbers)]  # what the report's usage table counts for this run
