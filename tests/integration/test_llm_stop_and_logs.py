"""Stop sequences reach servers that accept them and are dropped, once and with one log line,
for a server that refuses the parameter; retries and slow calls show as log lines."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memrl_bench.llm import client as client_module
from memrl_bench.llm.client import OpenAIChatModel, RetryPolicy
from tests.fault_server import Fault, FaultServer

HELLO = [{"role": "user", "content": "hello"}]
FAST_RETRY = RetryPolicy(max_retries=2, timeout_s=5.0, backoff_base_s=0.01, backoff_max_s=0.02)
# What OpenAI answers a reasoning model's request that has `stop`.
REFUSAL = {
    "error": {
        "message": "Unsupported parameter: 'stop' is not supported with this model.",
        "type": "invalid_request_error",
        "param": "stop",
        "code": "unsupported_parameter",
    }
}


class NoStopServer:
    """An OpenAI-compatible stub that refuses any chat request carrying `stop`, and keeps the request bodies."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "no-stop-model", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                if "stop" in body:
                    self._send(400, REFUSAL)
                    return
                message = {"role": "assistant", "content": "Action: look\nObservation: nothing"}
                self._send(
                    200,
                    {
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
                    },
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> NoStopServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def no_stop_server() -> Iterator[NoStopServer]:
    with NoStopServer() as server:
        yield server


def test_stop_sequences_are_sent_to_a_server_that_accepts_them():
    with FaultServer() as server:
        model = OpenAIChatModel(server.base_url, "m", retry=FAST_RETRY)
        asyncio.run(model.chat(HELLO, stop=["\nObservation:"]))
        asyncio.run(model.chat(HELLO))
    assert server.chat_bodies[0]["stop"] == ["\nObservation:"]
    assert "stop" not in server.chat_bodies[1]  # stop: null is not sent


def test_a_server_that_refuses_stop_gets_requests_without_it(no_stop_server, caplog):
    model = OpenAIChatModel(no_stop_server.base_url, "no-stop-model", retry=FAST_RETRY)

    async def calls() -> list:
        return [await model.chat(HELLO, stop=["\nObservation:"]) for _ in range(3)]

    with caplog.at_level(logging.WARNING, logger="memrl_bench.llm.client"):
        completions = asyncio.run(calls())
    assert [c.text for c in completions] == ["Action: look\nObservation: nothing"] * 3
    assert all(c.usage.retries == 0 and c.usage.failures == 0 for c in completions)  # a refused parameter is not a failed call
    assert ["stop" in body for body in no_stop_server.bodies] == [True, False, False, False]  # refused once, then never sent
    refusals = [r.getMessage() for r in caplog.records if "does not accept stop sequences" in r.getMessage()]
    assert len(refusals) == 1 and "Unsupported parameter: 'stop'" in refusals[0]


def test_retries_and_slow_calls_are_logged(caplog, monkeypatch):
    monkeypatch.setattr(client_module, "SLOW_CALL_S", 0.0)
    with FaultServer() as server, caplog.at_level(logging.WARNING, logger="memrl_bench.llm.client"):
        server.script(Fault.http_error(503))
        completion = asyncio.run(OpenAIChatModel(server.base_url, "m", retry=FAST_RETRY).chat(HELLO))
    messages = [r.getMessage() for r in caplog.records]
    assert completion.usage.retries == 1
    assert any("failed (HTTP 503: " in m and "retry 1 of 2 in" in m for m in messages), messages
    assert any("slow LLM call to" in m and "(1 retries)" in m for m in messages), messages
