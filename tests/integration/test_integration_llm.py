"""The real LLM path end to end: the harness starts a local SmolLM2 server itself, plays
TextWorldExpress with memrl and rag through the `openai` package, stops the server, and a
cached re-run reproduces the log without one completion from the server."""

import json
import os
from pathlib import Path

import pytest

from memrl_bench.core.schema import strip_measured
from memrl_bench.runner.loop import run
from tests.helpers import composed

pytestmark = [pytest.mark.llm, pytest.mark.slow]


def child_processes() -> list[str]:
    """Command lines of this process's live children."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                out.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, IndexError, ValueError):
            continue
    return out


def twx_config(method: str, cache: Path) -> dict:
    return composed(
        "env=textworld_express",
        "env.game=coin",
        "+env.game_params={numLocations: 2, includeDoors: 0}",
        f"method={method}",
        "llm=local",
        "llm.threads=1",
        "llm.max_tokens=40",
        "llm.max_concurrency=2",
        f"llm.cache_path={cache}",
        "embedder=minilm",
        "actor.max_steps=4",
        "protocol.epochs=2",
        "protocol.batch_size=2",
        "protocol.validate_every_epoch=false",
        "+protocol.max_tasks={train: 2, test: 2}",
        "progress=false",
    )


def log(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("method", ["memrl", "rag", "mem0"])
def test_local_model_plays_textworld_express_end_to_end_and_the_cache_replays_it(tmp_path, monkeypatch, method):
    cache = tmp_path / "llm_cache.sqlite"
    metrics = run(twx_config(method, cache), tmp_path / "first")
    assert not [c for c in child_processes() if "xllamacpp" in c or "llama" in c], "the local server outlived the run"
    episodes = log(tmp_path / "first")
    assert (tmp_path / "first" / "COMPLETE").exists()
    assert len(episodes) == 2 * 2 + 2 and {e["phase"] for e in episodes} == {"train", "test"}
    assert all(
        e["act_usage"]["calls"] >= 1 and e["act_usage"]["prompt_tokens"] > 0 and e["act_usage"]["completion_tokens"] > 0 for e in episodes
    )
    assert all(e["latency_s"]["act"] > 0 for e in episodes)
    # A fresh cache: epoch 1's prompts are all new (later ones may repeat one exactly,
    # e.g. when memory did not change the prompt, and are then served from the cache).
    assert all(e["act_usage"]["cache_hits"] == 0 for e in episodes if e["phase"] == "train" and e["epoch"] == 1)
    assert all(e["turns"] and e["turns"][0]["raw_output"] for e in episodes)
    manifest = json.loads((tmp_path / "first" / "manifest.json").read_text())
    assert manifest["model"]["model"] == "smollm2-135m" and "api_key" not in json.dumps(manifest["model"]).lower()
    second_epoch = [e for e in episodes if e["phase"] == "train" and e["epoch"] == 2]
    if method != "mem0":  # mem0 stores only the facts the model extracts, maybe none
        assert all(e["retrieved"] for e in second_epoch), "epoch 2 retrieves the memories written in epoch 1"
    if method == "memrl":
        assert sum(e["memory_usage"]["calls"] for e in episodes) == 4  # a script or reflection per training episode
        assert all(e["memory_usage"]["completion_tokens"] > 0 for e in episodes if e["phase"] == "train")
    if method == "mem0":
        assert all(e["memory_usage"]["calls"] >= 1 for e in episodes if e["phase"] == "train")  # fact extraction at least
    assert metrics["usage"]["act"]["calls"] == sum(e["act_usage"]["calls"] for e in episodes)

    run(twx_config(method, cache), tmp_path / "again")
    replay = log(tmp_path / "again")
    for e in replay:
        for usage in (e["act_usage"], e["memory_usage"]):
            assert usage["cache_hits"] == usage["calls"], "a cached re-run made a server call"
    assert [strip_measured(e) for e in replay] == [strip_measured(e) for e in episodes]

    # Crash inside learn() after the first batch, resume: snapshot -> restore -> continue
    # gives the uninterrupted run's log (cached LLM, temperature 0).
    from memrl_bench.core import registry

    method_cls = registry.get("method", method)
    real_learn = method_cls.learn
    calls = {"n": 0}

    def crashing_learn(self, batch):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("simulated crash")
        return real_learn(self, batch)

    monkeypatch.setattr(method_cls, "learn", crashing_learn)
    with pytest.raises(KeyboardInterrupt):
        run(twx_config(method, cache), tmp_path / "resumed")
    monkeypatch.setattr(method_cls, "learn", real_learn)
    run(twx_config(method, cache), tmp_path / "resumed")
    assert [strip_measured(e) for e in log(tmp_path / "resumed")] == [strip_measured(e) for e in episodes]
