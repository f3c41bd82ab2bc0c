"""Every method that writes its memory with an LLM runs with a real local model: on
LifelongAgentBench-DB (its tasks, its SQL) and on the synthetic env (the world decides outcomes,
the model writes the memory). SmolLM2-135M is the writer here because it is fast; what it writes
is often poor, which is the point: a method must survive what a small model really answers."""

import json
from pathlib import Path

import pytest

from memrl_bench.runner.loop import run
from tests.helpers import composed

pytestmark = [pytest.mark.llm, pytest.mark.slow]

# Each method that manages memory with an LLM, with the settings that make it write in two epochs.
LLM_METHODS = {
    "mem0": [],
    "memp": ["method.update=vanilla"],  # its default writes successes only, and SmolLM2 solves few
    "expel": [],  # learns from successes only: on LLB-DB, where SmolLM2 solves none, its writing is shown on the synthetic env
    "simplemem": [],
    # llm.max_tokens=96 cuts their JSON items, tagged cheatsheets and judge verdicts: their own calls get more
    "reasoningbank": ["method.max_tokens=384"],
    "dynamic_cheatsheet": ["method.max_tokens=384"],
    "awm": ["method.max_tokens=384"],  # its default judge (the model) is called on every training episode, solved or not
    "skillbank": [],  # distils from successes and failures alike: SmolLM2's failures on LLB-DB give it mistakes to write
    "selfrag": [],  # its calls are retrievals' (the decision, IsREL), charged to the episodes retrieved for from epoch 2 on
}

TINY_RUN = (
    "llm=local",
    "llm.max_tokens=96",
    "llm.max_concurrency=2",
    "protocol.epochs=2",
    "protocol.batch_size=2",
    "protocol.validate_every_epoch=false",
    "progress=false",
)


def episodes(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]


# Methods whose valid answer may write nothing: mem0 extracts no fact, simplemem's lessons fall under its
# floor, selfrag decides against retrieving.
MAY_WRITE_NOTHING = {"mem0", "simplemem", "selfrag"}
# Methods that write memory only from a solved episode.
LEARN_FROM_SUCCESSES = {"expel"}


def check_the_run(folder: Path, method: str) -> list[dict]:
    log = episodes(folder)
    assert (folder / "COMPLETE").exists()
    training = [e for e in log if e["phase"] == "train"]
    assert training and all(e["status"] != "llm_error" for e in log), [(e["status"], e["error"]) for e in log]
    if method in LEARN_FROM_SUCCESSES and not any(e["success"] for e in training):
        return log
    # The memory was managed by the model: calls were made and charged to training episodes.
    assert sum(e["memory_usage"]["calls"] for e in training) >= 1
    assert sum(e["memory_usage"]["completion_tokens"] for e in training) > 0
    return log


@pytest.mark.parametrize("method", sorted(LLM_METHODS))
def test_the_method_runs_on_llb_db_with_a_local_model(tmp_path, method):
    cfg = composed(
        "env=llb_db",
        f"method={method}",
        *LLM_METHODS[method],
        *TINY_RUN,
        f"llm.cache_path={tmp_path / 'cache.sqlite'}",
        "actor.max_steps=2",
        "+protocol.max_tasks={train: 2, test: 1}",
    )
    run(cfg, tmp_path / "run")
    log = check_the_run(tmp_path / "run", method)
    assert all(e["turns"] and e["turns"][0]["raw_output"] for e in log)


@pytest.mark.parametrize("method", sorted(LLM_METHODS))
def test_the_method_runs_on_the_synthetic_env_with_a_local_model_writing(tmp_path, method):
    cfg = composed(
        "env=synthetic",
        "+env.tasks={train: 4, validation: 2, test_in_distribution: 2, test_out_of_distribution: 2}",
        f"method={method}",
        *LLM_METHODS[method],
        *TINY_RUN,
        f"llm.cache_path={tmp_path / 'cache.sqlite'}",
    )
    run(cfg, tmp_path / "run")
    log = check_the_run(tmp_path / "run", method)
    training = [e for e in log if e["phase"] == "train"]
    written = any(e["retrieved"] for e in training if e["epoch"] == 2)
    # What SmolLM2 writes is often unusable: then the method refused it and counted it, never silently.
    refused = sum(e["memory_op_errors"] for e in training)
    assert written or refused or method in MAY_WRITE_NOTHING, f"{method}: nothing written in epoch 1 and no refusal counted"


def test_memory_calls_go_to_a_writer_on_a_second_local_server(tmp_path):
    """memory_llm=local: a second llama.cpp server, started and stopped with the run's, serves the memory calls."""
    cfg = composed(
        "env=llb_db",
        "method=memp",
        "method.update=vanilla",
        *TINY_RUN,
        f"llm.cache_path={tmp_path / 'cache.sqlite'}",
        "memory_llm=local",
        "memory_llm.max_tokens=96",
        "memory_llm.max_concurrency=1",
        f"memory_llm.cache_path={tmp_path / 'cache.sqlite'}",
        "actor.max_steps=2",
        "+protocol.max_tasks={train: 2, test: 1}",
    )
    run(cfg, tmp_path / "run")
    check_the_run(tmp_path / "run", "memp")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["memory_model"]["model"] == manifest["model"]["model"] == "smollm2-135m"
    assert manifest["memory_model"]["base_url_host"] != manifest["model"]["base_url_host"]  # two servers, two ports
