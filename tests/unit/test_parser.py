"""The ReAct parser on what models write: real completions of the local models on every env
(tests/fixtures/completions_local.jsonl, collected by scripts/collect_completions.py and
labelled by reading each one), and the usual hosted-model styles written out by hand
(tests/fixtures/completions_hosted.jsonl). Each entry's `expected` is the action a careful
reader takes from the completion, or "(no action)" when it holds none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrl_bench.actors.llm_actors import parse_action
from memrl_bench.core.answers import read_answer

FIXTURES = Path(__file__).parents[1] / "fixtures"
NO_ACTION = "(no action)"
LOCAL_MODELS = {"qwen2.5-coder-0.5b", "smollm2-135m"}
ENVS = {"llb_db", "llb_os", "textworld_express", "alfworld", "mmlu", "bigcodebench"}


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def read(entry: dict) -> str:
    """What the actor takes from the completion, as the corpus labels it."""
    if entry["kind"] == "react":
        parsed = parse_action(entry["completion"], entry["multiline"])
        return parsed.action if parsed.usable else NO_ACTION
    answer = read_answer(entry["completion"], entry["kind"], finished=entry.get("finish_reason") != "length").answer
    return NO_ACTION if answer is None else answer


LOCAL = load("completions_local.jsonl")
HOSTED = load("completions_hosted.jsonl")


def test_the_local_corpus_is_real_labelled_and_covers_every_env_and_both_models():
    assert len(LOCAL) >= 40
    assert {e["model"] for e in LOCAL} == LOCAL_MODELS
    assert {e["env"] for e in LOCAL} == ENVS
    assert {(e["model"], e["env"]) for e in LOCAL} == {(m, env) for m in LOCAL_MODELS for env in ENVS}
    unlabelled = [e["id"] for e in LOCAL if e["expected"] is None]
    assert not unlabelled, f"label these re-collected completions (the `expected` field): {unlabelled}"
    assert all(len(e["prompt_sha256"]) == 64 and e["context"] and e["finish_reason"] for e in LOCAL)


@pytest.mark.parametrize("entry", LOCAL, ids=lambda e: e["id"])
def test_real_completions_of_the_local_models(entry):
    assert read(entry) == entry["expected"]


@pytest.mark.parametrize("entry", HOSTED, ids=lambda e: e["id"])
def test_hosted_model_styles(entry):
    assert read(entry) == entry["expected"]


def test_one_action_cut_at_the_next_label_line():
    # The case: the model's next "Think:" line ran as part of its SQL.
    completion = "Think: Insert the row.\nAction: INSERT INTO t (a) VALUES (1)\nThink: The next step would be to COMMIT the transaction."
    assert parse_action(completion, multiline=True).action == "INSERT INTO t (a) VALUES (1)"
    assert parse_action("Action: look\nAction: take coin", multiline=False).action == "look"
    assert parse_action("Action: SELECT 1\nObservation: columns: ('1',)\n(1,)", multiline=True).action == "SELECT 1"


def test_a_completion_without_an_action_is_reported_unusable():
    for completion in ("Think: I should look for the key.", "", "   \n", "Think: query it.\nAction:\nObservation: ..."):
        assert not parse_action(completion, multiline=True).usable, completion
    bare = parse_action("go to kitchen", multiline=False)
    assert bare.usable and bare.action == "go to kitchen"  # a bare command is an action


def test_recollection_keeps_the_labels_of_unchanged_completions():
    from scripts.collect_completions import merge

    old = [
        {"id": "m/e/t/turn0", "model": "m", "env": "e", "prompt_sha256": "p0", "completion": "Action: look", "expected": "look"},
        {"id": "m/e/t/turn1", "model": "m", "env": "e", "prompt_sha256": "p1", "completion": "Action: wait", "expected": "wait"},
        {"id": "m/other/t/turn0", "model": "m", "env": "other", "prompt_sha256": "p2", "completion": "x", "expected": "x"},
    ]
    new = [
        {"id": "m/e/t/turn0", "model": "m", "env": "e", "prompt_sha256": "p0", "completion": "Action: look", "expected": None},
        {"id": "m/e/t/turn1", "model": "m", "env": "e", "prompt_sha256": "p1", "completion": "Action: run", "expected": None},
    ]
    merged = {r["id"]: r["expected"] for r in merge(old, new)}
    assert merged == {"m/e/t/turn0": "look", "m/e/t/turn1": None, "m/other/t/turn0": "x"}


def test_only_a_pair_around_the_whole_action_is_stripped():
    assert parse_action('Action: "/usr/bin/printf" "%s" x', multiline=True).action == '"/usr/bin/printf" "%s" x'
    assert parse_action("Action: SELECT * FROM t WHERE a = '*'", multiline=True).action == "SELECT * FROM t WHERE a = '*'"
    assert parse_action('Action: "open fridge 1"').action == "open fridge 1"
