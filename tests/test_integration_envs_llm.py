"""Every environment and every LLM-managed method, end to end with the real local model.

SmolLM2-135M solves little; these runs show the whole path works (the local server, the
actors, the envs' checkers and sandboxes, the methods' LLM calls) and that each run
folder is complete and valid. Its success rate is whatever it is.
"""

import json
from pathlib import Path

import pytest

from memrl_bench.runner import run
from tests.helpers import composed

pytestmark = [pytest.mark.llm, pytest.mark.slow]

COMMON = ["llm=local", "llm.threads=1", "llm.max_tokens=48", "llm.max_concurrency=2", "embedder=minilm", "actor.max_steps=3", "protocol.batch_size=2", "progress=false"]

ENVS = {
    "alfworld": ["+protocol.max_tasks={train: 2, test: 1}", "protocol.epochs=1", "protocol.validate_every_epoch=false"],
    "llb_os": ["env.tasks_per_split=2", "protocol.epochs=1", "protocol.validate_every_epoch=false"],
    "llb_db": ["env.tasks_per_split=2", "protocol.epochs=1", "protocol.validate_every_epoch=false"],
    "bigcodebench": ["env.tasks_per_split=2", "env.timeout_s=20", "protocol.epochs=1", "protocol.validate_every_epoch=false"],
    "mmlu": ["env.tasks_per_split=3", "protocol.epochs=1"],
}


def episodes(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("env", sorted(ENVS))
def test_memrl_with_the_local_model_on_each_env(tmp_path, env):
    cfg = composed(f"env={env}", "method=memrl", f"llm.cache_path={tmp_path / 'cache.sqlite'}", *COMMON, *ENVS[env])
    metrics = run(cfg, tmp_path / env)
    log = episodes(tmp_path / env)
    assert (tmp_path / env / "COMPLETE").exists()
    assert {e["phase"] for e in log} >= {"train", "test"}
    assert all(e["status"] in ("ok", "step_limit", "parse_error") for e in log), [e["error"] for e in log]
    assert all(e["act_usage"]["completion_tokens"] > 0 for e in log)
    assert metrics["memory_final"]["items"] == sum(1 for e in log if e["phase"] == "train")


# MemP's default (adjustment) and ExpeL learn only from successes (or failures next to a
# stored success); SmolLM2 rarely wins, so MemP runs with `vanilla` (every trajectory is
# distilled into a script) and ExpeL on one-room coin games, where "take coin" wins.
METHODS = {"mem0": [], "memp": ["method.update=vanilla"], "expel": ["env.game_params.numLocations=1", "actor.max_steps=5"]}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_llm_managed_methods_on_textworld_express(tmp_path, method):
    cfg = composed(
        "env=textworld_express", "env.game=coin", "+env.game_params={numLocations: 2, includeDoors: 0}", f"method={method}",
        f"llm.cache_path={tmp_path / 'cache.sqlite'}", *COMMON, "protocol.epochs=2", "protocol.validate_every_epoch=false",
        "+protocol.max_tasks={train: 2, test: 2}", *METHODS[method],
    )
    metrics = run(cfg, tmp_path / method)
    log = episodes(tmp_path / method)
    train = [e for e in log if e["phase"] == "train"]
    assert (tmp_path / method / "COMPLETE").exists() and len(train) == 4
    memory = metrics["usage"]["memory"]
    assert memory["calls"] > 0 and memory["prompt_tokens"] > 0 and memory["completion_tokens"] > 0 and memory["latency_s"] > 0
    assert metrics["usage"]["act"]["calls"] > 0
    # Acting and memory management are counted apart: no evaluation episode spends memory calls
    # on learning (retrieval-time calls, e.g. MemP's avefact keywords, are the only exception).
    assert all(e["memory_usage"]["calls"] == 0 for e in log if e["phase"] == "test") or method == "memp"
