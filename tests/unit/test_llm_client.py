"""OpenAIChatModel against the loopback fault server: retries, timeouts, outage, settings, keys."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import socket
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from openai.types.chat import ChatCompletion

from memrl_bench import CONF_DIR
from memrl_bench.core import registry
from memrl_bench.llm import LLMError, LLMOutageError
from memrl_bench.llm.client import (
    OpenAIChatModel,
    RetryPolicy,
    _checked_config,
    _classify,
    _InvalidResponse,
    make_chat_model,
    read_completion,
    retry_after_s,
)
from tests.fault_server import MODEL_ID, OFF_FORMAT_TEXT, Fault, FaultServer
from tests.scripted_llm import ScriptedChatModel

HELLO = [{"role": "user", "content": "hello there"}]
FAST_RETRY = RetryPolicy(max_retries=3, timeout_s=5.0, backoff_base_s=0.01, backoff_max_s=0.05)


@pytest.fixture
def server():
    with FaultServer() as s:
        yield s


def model_for(server: FaultServer, **kwargs) -> OpenAIChatModel:
    kwargs.setdefault("retry", FAST_RETRY)
    return OpenAIChatModel(server.base_url, "test-model", **kwargs)


def chat(model, messages=HELLO, **kwargs):
    return asyncio.run(model.chat(messages, **kwargs))


def test_a_call_answers_with_its_usage(server):
    completion = chat(model_for(server))
    assert completion.text == "echo: hello there"
    assert completion.finish_reason == "stop" and not completion.cached
    usage = completion.usage
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens, usage.retries, usage.failures) == (1, 2, 3, 0, 0)
    assert usage.latency_s > 0


def test_429_with_retry_after_and_500_are_retried(server):
    server.script(Fault.http_error(429, retry_after="0.3"), Fault.http_error(500))
    completion = chat(model_for(server))
    assert completion.text == "echo: hello there"
    assert completion.usage.retries == 2
    assert server.chat_requests() == 3
    assert completion.usage.latency_s >= 0.3  # the server's Retry-After was waited out


def test_timeout_then_success(server):
    server.script(Fault.slow(2.0))
    model = model_for(server, retry=RetryPolicy(max_retries=2, timeout_s=0.3, backoff_base_s=0.01))
    completion = chat(model)
    assert completion.text == "echo: hello there"
    assert completion.usage.retries == 1


@pytest.mark.parametrize(
    "fault", [Fault("reset"), Fault("truncated"), Fault("invalid_json"), Fault.http_error(503)], ids=lambda f: f.kind + str(f.status)
)
def test_broken_answers_are_retried(server, fault):
    server.script(fault)
    completion = chat(model_for(server))
    assert completion.text == "echo: hello there" and completion.usage.retries == 1


def test_exhausted_retries_raise_llm_error_with_usage(server):
    server.script(*[Fault.http_error(503)] * 3)
    model = model_for(server, retry=RetryPolicy(max_retries=2, backoff_base_s=0.01))
    with pytest.raises(LLMError, match="failed after 2 retries: HTTP 503") as raised:
        chat(model)
    assert not isinstance(raised.value, LLMOutageError)
    assert (raised.value.usage.calls, raised.value.usage.retries, raised.value.usage.failures) == (1, 2, 1)
    assert server.chat_requests() == 3


def test_client_errors_are_not_retried(server):
    server.script(Fault.http_error(400))
    with pytest.raises(LLMError, match="HTTP 400"):
        chat(model_for(server))
    assert server.chat_requests() == 1


def _openai_fields(body: bytes) -> tuple[str, str | None, int, int]:
    """The same four fields as openai's own ChatCompletion parsing gives them."""
    parsed = ChatCompletion.model_validate(json.loads(body))
    choice, usage = parsed.choices[0], parsed.usage
    return choice.message.content or "", choice.finish_reason, usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0


def test_read_completion_equals_openais_parsing(server):
    server.script(Fault("ok"), Fault("empty"), Fault("ignore_format"))
    bodies = []
    for _ in range(3):
        request = urllib.request.Request(
            f"{server.base_url}/chat/completions",
            data=json.dumps({"model": "m", "messages": HELLO}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            bodies.append(response.read())
    llama_cpp_like = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "length"}],
    }
    bodies.append(json.dumps(llama_cpp_like).encode())  # null content, no usage
    fields = [read_completion(body) for body in bodies]
    assert fields == [_openai_fields(body) for body in bodies]
    assert (
        fields[0] == ("echo: hello there", "stop", 2, 3)
        and fields[1][0] == ""
        and fields[2][0] == OFF_FORMAT_TEXT
        and fields[3] == ("", "length", 0, 0)
    )


@pytest.mark.parametrize("body", [b'{"choices": []}', b'{"error": {"message": "busy"}}', b"[]", b'{"choices": [{"message": "hi"}]}'])
def test_an_answer_without_a_completion_is_retryable(body):
    with pytest.raises(_InvalidResponse, match="no completion in the answer") as raised:
        read_completion(body)
    retryable, _, reason = _classify(raised.value)
    assert retryable and reason.startswith("unreadable response")


def test_empty_and_off_format_completions_come_back_as_text(server):
    server.script(Fault("empty"), Fault("ignore_format"))
    model = model_for(server)
    empty, off_format = chat(model), chat(model)
    assert empty.text == "" and empty.finish_reason == "stop" and empty.usage.completion_tokens == 0
    assert off_format.text == OFF_FORMAT_TEXT


def test_outage_after_consecutive_failures_stops_fast(server):
    model = model_for(server, retry=RetryPolicy(max_retries=0), max_consecutive_failures=3)
    server.down = True
    for _ in range(2):
        with pytest.raises(LLMError) as raised:
            chat(model)
        assert not isinstance(raised.value, LLMOutageError)
    with pytest.raises(LLMOutageError, match=f"{server.base_url}.*3 calls in a row failed"):
        chat(model)
    attempts = server.requests["down"]
    server.down = False
    with pytest.raises(LLMOutageError):  # tripped: no more requests, even though the server is back
        chat(model)
    assert server.requests["down"] == attempts and server.chat_requests() == 0


def test_a_success_resets_the_failure_count(server):
    model = model_for(server, retry=RetryPolicy(max_retries=0), max_consecutive_failures=3)
    server.script(Fault.http_error(500), Fault.http_error(500), Fault("ok"), Fault.http_error(500), Fault.http_error(500))
    outcomes = []
    for _ in range(5):
        try:
            chat(model)
            outcomes.append("ok")
        except LLMError as err:
            outcomes.append(type(err).__name__)
    assert outcomes == ["LLMError", "LLMError", "ok", "LLMError", "LLMError"]


def test_unreachable_base_url_is_one_clear_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(LLMOutageError, match=f"cannot reach the LLM server at {url}"):
        OpenAIChatModel(url, "m", retry=RetryPolicy(timeout_s=2.0))


def test_api_key_is_used_but_never_in_identity(server, monkeypatch):
    secret = "sk-test-secret-8d1f0c"
    monkeypatch.setenv("MEMRL_TEST_API_KEY", secret)
    model = model_for(server, api_key_env="MEMRL_TEST_API_KEY")
    chat(model)
    assert server.authorizations == [f"Bearer {secret}"]
    assert secret not in json.dumps(model.identity) and secret not in repr(model)
    assert model.identity == {"model": "test-model", "served_model": MODEL_ID, "base_url_host": f"127.0.0.1:{server.port}"}


def test_generation_settings_from_config_with_per_call_overrides(server):
    model = model_for(server, generation={"temperature": 0.7, "seed": 11, "max_tokens": 64, "stop": ["\n"]})
    chat(model)
    chat(model, temperature=0.0, max_tokens=8)
    first, second = server.chat_bodies
    assert (first["temperature"], first["seed"], first["max_tokens"], first["stop"], first["top_p"]) == (0.7, 11, 64, ["\n"], 1.0)
    assert (second["temperature"], second["seed"], second["max_tokens"]) == (0.0, 11, 8)
    with pytest.raises(ValueError, match="unknown llm generation setting.*temprature"):
        chat(model, temprature=0.1)


@pytest.mark.parametrize("limit", [4, 32])
def test_concurrency_limit_keeps_that_many_in_flight(server, limit):
    server.delay_s = 0.3
    model = model_for(server, max_concurrency=limit)

    async def batch():
        return await asyncio.gather(*(model.chat([{"role": "user", "content": f"q{i}"}]) for i in range(limit * 2)))

    completions = asyncio.run(batch())
    assert [c.text for c in completions] == [f"echo: q{i}" for i in range(limit * 2)]
    assert server.max_in_flight == limit


def test_model_works_across_event_loops(server):
    model = model_for(server)
    assert chat(model).text == chat(model).text == "echo: hello there"


def test_backoff_is_exponential_capped_and_seeded():
    policy = RetryPolicy(backoff_base_s=1.0, backoff_max_s=4.0)
    draws = [[policy.backoff_s(retry, rng) for retry in range(1, 6)] for rng in (random.Random(3), random.Random(3))]
    assert draws[0] == draws[1]
    for retry, delay in enumerate(draws[0], start=1):
        ceiling = min(4.0, 2 ** (retry - 1))
        assert ceiling / 2 <= delay <= ceiling


def test_retry_after_header_forms():
    now = time.time()
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after-ms": "250"}) == 0.25
    assert retry_after_s({"retry-after": email.utils.formatdate(now + 10, usegmt=True)}, now=now) == pytest.approx(10, abs=1)
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None


def test_make_chat_model_from_config(server):
    cfg = {"name": "openai", "base_url": server.base_url, "model": "cfg-model", "max_concurrency": 2, "max_tokens": 5, "cache_mode": "off"}
    model = make_chat_model(cfg)
    assert chat(model).text == "echo: hello there"
    assert server.chat_bodies[0]["max_tokens"] == 5 and server.chat_bodies[0]["model"] == "cfg-model"
    assert model.max_concurrency == 2 and model.cache is None


@pytest.mark.parametrize(
    "cfg, message",
    [
        (
            {"name": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m", "max_concurency": 2},
            "llm.max_concurency: Extra inputs are not permitted",
        ),
        ({"name": "vllm", "model": "m"}, "llm.name: Input should be 'local', 'openai' or 'none'"),
        ({"name": "openai", "model": "m"}, "llm.base_url is required"),
        ({"name": "local"}, "llm.model is required for llm=local"),
    ],
)
def test_bad_config_names_the_key(cfg, message):
    with pytest.raises(ValueError, match=message):
        make_chat_model(cfg)


@pytest.mark.parametrize("path", sorted(Path(CONF_DIR).joinpath("llm").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_llm_configs_are_valid(path):
    cfg = yaml.safe_load(path.read_text())
    assert cfg["name"] == path.stem
    if cfg.get("model") == "???":  # Hydra's mandatory value: the user names the model
        cfg["model"] = "some-model"
    assert _checked_config(cfg) == cfg


def test_llm_kinds_none_and_openai(server):
    with registry.get("llm", "none")({"name": "none"}) as model:
        assert model is None
    with registry.get("llm", "openai")({"name": "openai", "base_url": server.base_url, "model": "m"}) as model:
        assert chat(model).text == "echo: hello there"
    assert registry.names("llm") == ["local", "none", "openai"]


def test_scripted_model_counts_usage_and_fails_on_chosen_calls():
    model = ScriptedChatModel(["act: look", "act: take key"], fail_on=[1])
    first = chat(model, [{"role": "user", "content": "you are in a room"}], temperature=0.5)
    assert first.text == "act: look" and (first.usage.calls, first.usage.prompt_tokens, first.usage.completion_tokens) == (1, 5, 2)
    with pytest.raises(LLMError) as raised:
        chat(model)
    assert raised.value.usage.failures == 1
    assert chat(model).text == "act: take key" and model.calls[0].overrides == {"temperature": 0.5}
    with pytest.raises(IndexError, match="2 scripted replies"):
        chat(model)
    echo = ScriptedChatModel(lambda messages: messages[-1]["content"].upper())
    assert chat(echo).text == "HELLO THERE"


def test_a_context_refusal_is_its_own_error_and_not_retried(server):
    from memrl_bench.llm import ContextOverflowError

    server.script(
        Fault.http_error(400, message="request (2073 tokens) exceeds the available context size (2048 tokens), try increasing it")
    )
    with pytest.raises(ContextOverflowError, match="does not fit the model's context"):
        chat(model_for(server))
    assert server.chat_requests() == 1
