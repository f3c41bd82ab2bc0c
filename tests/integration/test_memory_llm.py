"""A writer model apart from the acting model (memory_llm=openai|local, issue 30): acting calls go
to the llm group's server and memory calls to the writer's, each with its own key; both models are
in the manifest, each episode's usage is charged to the model that spent it, the report's cost
table names the writer, no key of either is written anywhere, and a resumed run refuses another
writer as it refuses another model. memory_llm=same (the default) composes nothing: every run
written before it keeps its config and config hash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memrl_bench.core.config import ConfigError, config_hash, validate_config
from tests.fault_server import FaultServer
from tests.helpers import composed, config, tiny_mmlu
from tests.memory_llm_helpers import ScriptedModel, generic_reply

ROOT = Path(__file__).resolve().parents[2]
ACTOR_KEY, WRITER_KEY = "sk-actor-canary-0123456789", "sk-writer-canary-9876543210"


def memrl_bench(*args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OPENAI_API_KEY": ACTOR_KEY, "WRITER_KEY": WRITER_KEY}
    return subprocess.run(
        [sys.executable, "-m", "memrl_bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=600, env=environment
    )


def writer_reply(messages: list[dict]) -> str:
    return generic_reply(messages[0]["content"])


def test_acting_calls_go_to_the_llm_and_memory_calls_to_the_writer(tmp_path):
    data, results, caches = tiny_mmlu(tmp_path / "mmlu", questions=3), tmp_path / "results", tmp_path / "caches"
    with FaultServer(reply=lambda m: "Answer: B") as actor, FaultServer(reply=writer_reply) as writer, FaultServer() as embedder:
        command = [
            f"results_dir={results}",
            "env=mmlu",
            f"env.data_dir={data}",
            "method=memp",
            "llm=openai",
            f"llm.base_url={actor.base_url}",
            "llm.model=actor-model",
            f"llm.cache_path={caches}/llm.sqlite",
            "memory_llm=openai",
            f"memory_llm.base_url={writer.base_url}",
            "memory_llm.model=writer-model",
            "memory_llm.api_key_env=WRITER_KEY",
            f"memory_llm.cache_path={caches}/llm.sqlite",  # one cache file serves both: its key holds the model
            "embedder=openai",
            f"embedder.base_url={embedder.base_url}",
            "embedder.model=e",
            f"embedder.cache_path={caches}/embed.sqlite",
            "protocol.epochs=1",
        ]
        out = memrl_bench(*command)
        assert out.returncode == 0, out.stderr[-3000:]
        (folder,) = [p for p in (results / "default").iterdir() if p.is_dir()]
        episodes = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
        assert sum(e["act_usage"]["calls"] for e in episodes) == actor.chat_requests() > 0
        assert sum(e["memory_usage"]["calls"] for e in episodes) == writer.chat_requests() > 0
        assert all(a == f"Bearer {ACTOR_KEY}" for a in actor.authorizations)
        assert writer.authorizations and all(a == f"Bearer {WRITER_KEY}" for a in writer.authorizations)
        assert all(b["model"] == "writer-model" for b in writer.chat_bodies) and all(b["model"] == "actor-model" for b in actor.chat_bodies)
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["model"]["model"] == "actor-model" and manifest["memory_model"]["model"] == "writer-model"

        # a resumed run refuses another writer, as it refuses another acting model (the config hash)
        other = memrl_bench(*[c.replace("writer-model", "other-writer") for c in command], f"hydra.run.dir='{folder}'")
        assert other.returncode == 2 and "refusing to mix them" in other.stderr, other.stderr[-2000:]

    from memrl_bench.report.aggregate import aggregate
    from memrl_bench.report.load import load
    from memrl_bench.report.tables import all_tables

    loaded = load(results / "default")
    usage = all_tables(loaded, aggregate(loaded))["usage"].view
    assert list(usage["memory: model"]) == ["writer-model"]

    written = [p for root in (results, caches) for p in root.rglob("*") if p.is_file()]
    assert not [str(p) for p in written for key in (ACTOR_KEY, WRITER_KEY) if key.encode() in p.read_bytes()]
    assert not [key for key in (ACTOR_KEY, WRITER_KEY) if key in out.stdout + out.stderr]


def test_same_composes_nothing_so_every_earlier_config_and_hash_stays():
    default = composed("method=memp", "llm=openai", "llm.model=m")
    assert "memory_llm" not in default and default == composed("method=memp", "llm=openai", "llm.model=m", "memory_llm=same")
    assert validate_config(default).memory_llm is None
    with_writer = composed("method=memp", "llm=openai", "llm.model=m", "memory_llm=openai", "memory_llm.model=big")
    assert with_writer["memory_llm"]["model"] == "big" and with_writer["memory_llm"]["base_url"] == default["llm"]["base_url"]
    assert config_hash(with_writer) != config_hash(default)
    # how the writer's calls go (its concurrency, cache, retries) is not what the run computes, as for the acting model
    raised = composed(
        "method=memp", "llm=openai", "llm.model=m", "memory_llm=openai", "memory_llm.model=big", "memory_llm.max_concurrency=2"
    )
    assert config_hash(raised) == config_hash(with_writer)


def test_a_second_local_server_for_the_writer_composes():
    cfg = composed("llm=local", "memory_llm=local", "memory_llm.model=qwen2.5-coder-0.5b")
    checked = validate_config(cfg)
    assert (cfg["llm"]["model"], cfg["memory_llm"]["model"]) == ("smollm2-135m", "qwen2.5-coder-0.5b")
    assert checked.memory_llm is not None and checked.memory_llm.settings.name == "local"


@pytest.mark.parametrize(
    "writer, message",
    [
        ({"name": "openai", "base_url": "http://127.0.0.1:9/v1"}, "memory_llm.model is required for memory_llm=openai"),
        ({"name": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "colour": 1}, "memory_llm.colour: Extra inputs"),
        ({"name": "openai", "model": "m", "base_url": "ftp://x"}, "memory_llm.base_url: must be an http(s) URL"),
        ({"name": "none"}, "memory_llm.name: 'none' serves no memory calls"),
        ({"name": "gpt"}, "memory_llm.name: "),
        ({"name": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "sk-abc"}, "memory_llm.api_key_env: must be"),
    ],
)
def test_a_bad_writer_setting_is_one_line_naming_its_key(writer, message):
    with pytest.raises(ConfigError) as err:
        validate_config(config(memory_llm=writer))
    assert str(err.value).startswith(message) and "\n" not in str(err.value) and "sk-abc" not in str(err.value)


def test_a_writer_fine_tuned_on_the_env_is_refused_as_the_actor_is_and_labelled_when_allowed(tmp_path):
    from memrl_bench.protocols import ProtocolViolation
    from memrl_bench.runner.loop import run

    writer = {"name": "openai", "model": "tuned", "base_url": "http://127.0.0.1:9/v1", "finetuned_on": "synthetic"}
    with pytest.raises(ProtocolViolation, match=r"^memory_llm.finetuned_on='synthetic': the backbone was fine-tuned"):
        run(config(memory_llm=writer), tmp_path / "refused")
    model = ScriptedModel(generic_reply)  # the writer the config names, given (no server)
    allowed = config(memory_llm=writer, method={"name": "selfrag"}, protocol={"epochs": 1, "allow_finetuned": True})
    metrics = run(allowed, tmp_path / "run", memory_llm=model)
    assert metrics["labels"].count("finetuned_backbone") == 1 and model.calls  # selfrag's judgements went to the writer
