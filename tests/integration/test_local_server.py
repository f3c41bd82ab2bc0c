"""The real local llama.cpp server (xllamacpp, SmolLM2-135M) through the openai package."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from memrl_bench.llm.client import open_local
from memrl_bench.llm.local_server import LocalLlamaServer, LocalServerError, available_cores, busy_cores_now, cpu_settings

HELLO = [{"role": "user", "content": "Name one colour."}]


def child_pids() -> set[int]:
    """Live children of this process, from /proc."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            children.add(int(stat.parent.name))
    return children


def port_is_closed(address: str) -> bool:
    host, port = address.removeprefix("http://").split(":")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def assert_gone(pid: int, address: str, before: set[int]) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert child_pids() == before
    assert port_is_closed(address)


@pytest.mark.llm
def test_chat_has_real_token_counts(local_chat_model):
    completion = asyncio.run(local_chat_model.chat(HELLO))
    assert completion.text.strip()
    assert completion.finish_reason in ("stop", "length")
    usage = completion.usage
    assert usage.prompt_tokens > 5 and 1 <= usage.completion_tokens <= 32
    assert usage.latency_s > 0 and usage.retries == 0
    assert local_chat_model.identity["served_model"] == "smollm2-135m"


@pytest.mark.llm
def test_temperature_zero_and_seed_give_identical_answers(local_chat_model):
    prompt = [{"role": "user", "content": "Write one short sentence about rivers."}]

    async def twice():
        return [await local_chat_model.chat(prompt, temperature=0.0, seed=7, max_tokens=16) for _ in range(2)]

    first, second = asyncio.run(twice())
    assert first.text == second.text and first.text
    assert first.usage.completion_tokens == second.usage.completion_tokens


@pytest.mark.llm
def test_embedding_mode_then_nothing_left_behind(local_llm_server):
    before = child_pids()
    with LocalLlamaServer(local_llm_server.model_path, threads=1, ctx_size=256, embedding=True) as server:
        pid, address, log_path = server.pid, server.address, server.log_path
        assert pid in child_pids() and address is not None and address.startswith("http://127.0.0.1:")
        client = openai.OpenAI(base_url=server.base_url, api_key="no-key", max_retries=0)
        vectors = client.embeddings.create(model=server.alias, input=["a red apple", "a green pear"]).data
        client.close()
        assert len(vectors) == 2 and len(vectors[0].embedding) == 576 and vectors[0].embedding != vectors[1].embedding
    assert pid is not None and log_path is not None
    assert_gone(pid, address, before)
    assert not log_path.exists()


@pytest.mark.llm
def test_llm_local_starts_and_stops_the_server():
    cfg = {
        "name": "local",
        "model": "smollm2-135m",
        "max_tokens": 4,
        "cache_mode": "off",
        "threads": 1,
        "ctx_size": 256,
        "parallel": 1,
    }
    before = child_pids()
    with open_local(cfg) as model:
        assert model is not None
        started = child_pids() - before
        assert len(started) == 1
        completion = asyncio.run(model.chat(HELLO))
        assert completion.usage.completion_tokens >= 1
        address = model.base_url.removesuffix("/v1")
        assert model.identity["model_sha256"] == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        assert model.identity["served_model"] == "smollm2-135m" and model.identity["backend"].startswith("llama.cpp")
    assert_gone(started.pop(), address, before)


def test_a_broken_model_file_fails_clearly_and_leaves_nothing(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file" * 100)
    before = child_pids()
    with pytest.raises(LocalServerError, match=f"server for {broken} cannot size its context: {broken} is not a GGUF file"):
        LocalLlamaServer(broken).start()  # the context comes from the file's metadata: read before anything starts
    assert child_pids() == before
    server = LocalLlamaServer(broken, ctx_size=512, startup_timeout_s=60)
    with pytest.raises(LocalServerError, match=f"llama.cpp server for {broken} exited with code"):
        server.start()
    assert child_pids() == before and server.pid is None
    assert server.log_path is not None and server.log_path.exists()  # kept for the error message
    server.log_path.unlink()


def test_missing_model_file_and_bad_settings(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.gguf does not exist"):
        LocalLlamaServer(tmp_path / "missing.gguf").start()
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"x")
    with pytest.raises(ValueError, match="threads must be >= 1"):
        LocalLlamaServer(model_file, threads=0).start()


def test_threads_default_to_the_cores_other_processes_leave_idle(tmp_path):
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"x")
    cores = available_cores()
    assert cores == len(os.sched_getaffinity(0))
    assert cpu_settings(busy_cores=0.0) == {"threads": cores, "batch_threads": cores, "poll": 0}
    assert cpu_settings(busy_cores=0.6)["threads"] == max(1, cores - 1)  # a core 3/5 busy is not free
    assert cpu_settings(busy_cores=0.2)["threads"] == cores
    assert cpu_settings(busy_cores=cores + 3.0)["threads"] == 1
    server = LocalLlamaServer(model_file)
    assert 1 <= server.threads == server.batch_threads <= cores and server.poll == 0
    assert LocalLlamaServer(model_file, threads=1).threads == 1


def test_a_busy_core_is_seen_by_the_sampler():
    """Another process spinning on a core: the sample sees about one busy core (more with other jobs)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert busy_cores_now(0.5) >= 0.7
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.llm
def test_the_local_server_gets_one_slot_per_request_in_flight():
    cfg = {
        "name": "local",
        "model": "smollm2-135m",
        "max_tokens": 4,
        "cache_mode": "off",
        "ctx_size": 256,
        "max_concurrency": 3,
        "parallel": None,
        "threads": None,
    }
    with open_local(cfg) as model:
        assert model is not None
        assert model.identity["parallel"] == 3 and 1 <= model.identity["threads"] <= available_cores()
    with open_local({**cfg, "parallel": 1, "threads": 1}) as model:
        assert model is not None and (model.identity["parallel"], model.identity["threads"]) == (1, 1)


@pytest.mark.llm
def test_prompt_tokens_are_counted_before_sending_as_the_server_counts_them(local_llm_server):
    from memrl_bench.llm.client import OpenAIChatModel

    model = OpenAIChatModel(
        local_llm_server.base_url,
        "smollm2-135m",
        generation={"temperature": 0.0, "max_tokens": 8},
        context_size=local_llm_server.ctx_size,
        tokenizer_url=local_llm_server.address,
    )
    try:
        messages = [{"role": "system", "content": "You sort things."}, *HELLO]
        counted = asyncio.run(model.count_tokens(messages))
        assert counted.exact and counted.tokens == asyncio.run(model.chat(messages)).usage.prompt_tokens
        assert model.prompt_budget({}) == local_llm_server.ctx_size - 8
    finally:
        model.close()


KILLED_AS_IT_LOADS = """
import sys
from memrl_bench.llm import catalogue as models
from memrl_bench.llm.local_server import LocalLlamaServer
LocalLlamaServer(models.ensure(sys.argv[1]), threads=1, ctx_size=512, parallel=1).start()
sys.stdin.read()  # until killed
"""


def processes_naming(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:  # gone meanwhile
            pass
    return found


@pytest.mark.parametrize("after_s", [0.0, 3.0])
def test_a_harness_killed_as_its_server_loads_leaves_no_server_and_no_log(local_llm_server, tmp_path, after_s):
    """61b: a harness killed (SIGKILL, or SIGTERM, which it does not handle) before its server told its address left the
    server's print failing, and then at times its destructor hung: the server alive for good (891 MB, listening), and
    every such kill left its log in /tmp. The server now leaves at once when the harness is gone, with its log; so does
    one whose harness died after it had loaded."""
    logs = tmp_path / "tmp"
    logs.mkdir()
    harness = subprocess.Popen(
        [sys.executable, "-c", KILLED_AS_IT_LOADS, "smollm2-135m"],
        env={**os.environ, "TMPDIR": str(logs)},
        cwd=tmp_path,
        stdin=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not processes_naming(str(logs)) and time.monotonic() < deadline:  # the server's launcher names its log
        time.sleep(0.01)
    assert processes_naming(str(logs)), "the server never started"
    time.sleep(after_s)
    harness.kill()
    harness.wait()
    while processes_naming(str(logs)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_naming(str(logs)), "the server outlived its harness"
    assert list(logs.iterdir()) == []
