"""Whole runs against a misbehaving OpenAI-compatible server (loopback fault server).

Every fault kind is injected; the run completes with retries and failures counted per
episode. A server that goes down for good stops the run fast with LLMOutageError, with
no episode of the broken batch logged, and the same command resumes once it is back.
"""

import json
from pathlib import Path

import pytest

from memrl_bench.core.schema import strip_measured
from memrl_bench.llm import LLMOutageError
from memrl_bench.runner.loop import run
from tests.fault_server import Fault, FaultServer
from tests.helpers import composed


def answer_b(messages) -> str:
    return "Answer: B"


def mmlu_config(server: FaultServer, **extra: str) -> dict:
    overrides = {
        "env": "mmlu",
        "env.tasks_per_split": "4",
        "method": "rag",
        "llm": "openai",
        "llm.base_url": server.base_url,
        "llm.model": "fault-server-model",
        "llm.timeout_s": "0.5",
        "llm.max_retries": "3",
        "llm.backoff_base_s": "0.01",
        "llm.backoff_max_s": "0.05",
        "llm.cache_mode": "off",
        "llm.max_concurrency": "1",
        "llm.max_consecutive_failures": "3",
        "embedder": "openai",
        "embedder.base_url": server.base_url,
        "embedder.model": "fault-server-embed",
        "protocol.epochs": "2",
        "protocol.batch_size": "2",
        "progress": "false",
        **extra,
    }
    return composed(*(f"{k}={v}" for k, v in overrides.items()))


def log(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-a-secret")


def test_every_fault_kind_is_survived_and_counted(tmp_path):
    with FaultServer(reply=answer_b) as server:
        server.script(
            Fault.http_error(429, retry_after="0.05"),
            Fault.http_error(500),
            Fault.http_error(503),
            Fault.slow(1.5),
            Fault("reset"),
            Fault("truncated"),
            Fault("invalid_json"),
            Fault("empty"),
            Fault("ignore_format"),
        )
        metrics = run(mmlu_config(server, **{"llm.max_retries": "10"}), tmp_path / "run")
    episodes = log(tmp_path / "run")
    assert (tmp_path / "run" / "COMPLETE").exists() and len(episodes) == metrics["episodes"] == 2 * 4 + 2 * 4 + 4
    retries = sum(e["act_usage"]["retries"] for e in episodes)
    assert retries == 7  # 429, 500, 503, timeout, reset, truncated body, invalid JSON: each retried once
    not_answered = [e for e in episodes if e["status"] == "parse_error"]
    assert len(not_answered) == 2  # the empty completion and the one that ignored the format
    assert all(e["success"] is False for e in not_answered)
    assert sum(e["success"] for e in episodes) > 0


def test_a_call_that_fails_after_its_retries_is_an_llm_error_episode_not_a_crash(tmp_path):
    with FaultServer(reply=answer_b) as server:
        server.script(*[Fault.http_error(500)] * 4)
        metrics = run(mmlu_config(server), tmp_path / "run")
    failed = [e for e in log(tmp_path / "run") if e["status"] == "llm_error"]
    assert len(failed) == 1 and failed[0]["act_usage"]["retries"] == 3 and failed[0]["act_usage"]["failures"] == 1
    assert failed[0]["success"] is False and "500" in failed[0]["error"]
    assert metrics["status_counts"]["llm_error"] == 1


def test_an_outage_stops_the_run_fast_and_the_same_command_resumes(tmp_path):
    with FaultServer(reply=answer_b) as server:
        run(mmlu_config(server), tmp_path / "reference")
        calls = {"n": 0}

        def failing_after_five(messages):
            calls["n"] += 1
            if calls["n"] == 5:
                server.down = True
            return answer_b(messages)

        server.reply = failing_after_five
        with pytest.raises(LLMOutageError, match=server.base_url.split("/v1")[0]):
            run(mmlu_config(server), tmp_path / "stopped")
        stopped = log(tmp_path / "stopped")
        assert len(stopped) == 4  # two whole batches; the broken one is not logged as failures
        assert not any(e["status"] == "llm_error" for e in stopped)
        server.down = False
        server.reply = answer_b
        run(mmlu_config(server), tmp_path / "stopped")
    assert [strip_measured(e) for e in log(tmp_path / "stopped")] == [strip_measured(e) for e in log(tmp_path / "reference")]


def test_the_cli_names_an_unreachable_base_url_and_leaves_no_folder(tmp_path):  # exit 3: an outage, not bad input
    import socket
    import subprocess
    import sys

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "memrl_bench",
            f"results_dir={tmp_path}",
            "env=mmlu",
            "env.tasks_per_split=2",
            "llm=openai",
            f"llm.base_url=http://127.0.0.1:{port}/v1",
            "llm.model=m",
            "embedder=minilm",
            "protocol.epochs=1",
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 3 and f"127.0.0.1:{port}" in out.stderr and "Traceback" not in out.stderr
    assert not list(tmp_path.rglob("manifest.json"))


def test_a_refused_key_stops_the_run_before_anything_is_logged(tmp_path):
    """A 401 on chat while /models answers: the run stops with the batch unlogged (no
    llm_error episode to keep), naming the key variable; with the key fixed, the same
    command ends with the log of a run that never had the wrong key."""
    from memrl_bench.llm import LLMAuthError

    with FaultServer(reply=answer_b) as server:
        run(mmlu_config(server), tmp_path / "reference")
        calls = {"n": 0}

        def refusing_after_five(messages):
            calls["n"] += 1
            if calls["n"] == 5:
                server.script(Fault.http_error(401, message="Incorrect API key provided"))
            return answer_b(messages)

        server.reply = refusing_after_five
        with pytest.raises(LLMAuthError, match=r"refused the key in \$OPENAI_API_KEY \(HTTP 401.*set a valid key in OPENAI_API_KEY"):
            run(mmlu_config(server), tmp_path / "stopped")
        stopped = log(tmp_path / "stopped")
        assert len(stopped) == 4 and not any(e["status"] == "llm_error" for e in stopped)
        server.reply = answer_b
        run(mmlu_config(server), tmp_path / "stopped")
    assert [strip_measured(e) for e in log(tmp_path / "stopped")] == [strip_measured(e) for e in log(tmp_path / "reference")]
