"""The fault-injecting server, seen by a plain HTTP client (no retry logic in the way)."""

from __future__ import annotations

import http.client
import json
import math
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.fault_server import MODEL_ID, OFF_FORMAT_TEXT, Fault, FaultServer, embedding_vector

CHAT = {"model": "m", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "say hello"}]}


def post(server: FaultServer, path: str, body: dict, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def get(server: FaultServer, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.fixture
def server():
    with FaultServer() as s:
        yield s


def test_serves_models_and_chat_and_counts_requests(server):
    status, body = get(server, "/v1/models")
    assert status == 200 and json.loads(body)["data"][0]["id"] == MODEL_ID
    status, _, raw = post(server, "/v1/chat/completions", CHAT)
    answer = json.loads(raw)
    assert status == 200
    assert answer["choices"][0]["message"]["content"] == "echo: say hello"
    assert answer["usage"] == {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}
    assert server.requests["/v1/models"] == 1 and server.chat_requests() == 1
    assert server.chat_bodies[0]["messages"] == CHAT["messages"]


def test_listens_on_loopback_only(server):
    assert server.address[0] == "127.0.0.1" and server.base_url == f"http://127.0.0.1:{server.port}/v1"


def test_scripted_faults_apply_in_order_then_normal_answers(server):
    server.script(Fault.http_error(429, retry_after="2"), Fault.http_error(500), Fault.http_error(503))
    statuses = []
    for _ in range(4):
        status, headers, _ = post(server, "/v1/chat/completions", CHAT)
        statuses.append((status, headers.get("retry-after")))
    assert statuses == [(429, "2"), (500, None), (503, None), (200, None)]
    assert server.pending() == 0


def test_reset_truncated_and_invalid_json(server):
    server.script(Fault("reset"))
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
        post(server, "/v1/chat/completions", CHAT)
    server.script(Fault("truncated"))
    with pytest.raises(http.client.IncompleteRead):
        post(server, "/v1/chat/completions", CHAT)
    server.script(Fault("invalid_json"))
    status, _, raw = post(server, "/v1/chat/completions", CHAT)
    assert status == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)


def test_empty_and_off_format_completions(server):
    server.script(Fault("empty"), Fault("ignore_format"))
    texts = [json.loads(post(server, "/v1/chat/completions", CHAT)[2])["choices"][0]["message"]["content"] for _ in range(2)]
    assert texts == ["", OFF_FORMAT_TEXT]


def test_slow_and_fixed_delay(server):
    server.script(Fault.slow(0.3))
    started = time.perf_counter()
    post(server, "/v1/chat/completions", CHAT)
    assert time.perf_counter() - started >= 0.3
    server.delay_s = 0.2
    started = time.perf_counter()
    post(server, "/v1/chat/completions", CHAT)
    assert time.perf_counter() - started >= 0.2


def test_down_mode_resets_every_connection(server):
    server.down = True
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
        get(server, "/v1/models")
    with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
        post(server, "/v1/chat/completions", CHAT)
    assert server.requests["down"] == 2
    server.down = False
    assert get(server, "/v1/models")[0] == 200


def test_embeddings_are_deterministic_unit_vectors(server):
    status, _, raw = post(server, "/v1/embeddings", {"model": "e", "input": ["a cat", "a dog", "a cat"]})
    vectors = [d["embedding"] for d in json.loads(raw)["data"]]
    assert status == 200 and vectors[0] == vectors[2] != vectors[1]
    assert vectors[0] == embedding_vector("a cat")
    assert all(math.isclose(math.sqrt(sum(v * v for v in vec)), 1.0) for vec in vectors)


def test_answers_32_slow_requests_at_once(server):
    server.delay_s = 0.5
    with ThreadPoolExecutor(32) as pool:
        statuses = list(pool.map(lambda _: post(server, "/v1/chat/completions", CHAT)[0], range(32)))
    assert statuses == [200] * 32
    assert server.max_in_flight == 32


def test_port_is_closed_after_exit():
    with FaultServer() as s:
        port = s.port
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)


def test_unknown_fault_kind_is_refused():
    with pytest.raises(ValueError, match="unknown fault kind 'boom'; valid: ok, status"):
        Fault("boom")  # type: ignore[arg-type]
