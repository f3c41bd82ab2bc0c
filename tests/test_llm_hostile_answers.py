"""A hostile LLM server's answers (red team B11, B12): bodies that are valid JSON but no
completion (a content that is not text, token counts past any context or not whole
numbers), and error texts of tens of megabytes. Each is a failed call like any bad answer,
never a traceback, and nothing of it is stored whole."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memrl_bench.llm import LLMError
from memrl_bench.llm.cache import ResponseCache
from memrl_bench.llm.client import MAX_TOKEN_COUNT, OpenAIChatModel, RetryPolicy, _classify, _InvalidResponse, read_completion
from memrl_bench.llm.fault_server import Fault, FaultServer
from memrl_bench.redaction import SERVER_TEXT_CHARS

HELLO = [{"role": "user", "content": "hello"}]
ONE_RETRY = RetryPolicy(max_retries=1, timeout_s=5.0, backoff_base_s=0.01, backoff_max_s=0.02)


def completion_body(content: object = "Action: COMMIT", **usage: object) -> bytes:
    """The red team's hostile_server.chat_body: a well-formed completion with the given fields replaced."""
    tokens = usage or {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}], "usage": tokens}).encode()


HOSTILE_BODIES = {
    "huge_usage": completion_body(prompt_tokens=10**30, completion_tokens=10**30, total_tokens=2 * 10**30),
    "float_usage": completion_body(prompt_tokens=1e308, completion_tokens=1.5, total_tokens=1e308),
    "neg_usage": completion_body(prompt_tokens=-7, completion_tokens=-3, total_tokens=-10),
    "str_usage": completion_body(prompt_tokens="abc", completion_tokens="5", total_tokens=None),
    "past_the_bound": completion_body(prompt_tokens=MAX_TOKEN_COUNT + 1, completion_tokens=1),
    "int_content": completion_body(12345),
    "list_content": completion_body(["a", "b"]),
}


@pytest.mark.parametrize("body", HOSTILE_BODIES.values(), ids=HOSTILE_BODIES.keys())
def test_a_completion_with_a_malformed_field_is_an_unreadable_answer(body: bytes):
    with pytest.raises(_InvalidResponse, match="no completion in the answer") as raised:
        read_completion(body)
    retryable, _, reason = _classify(raised.value)
    assert retryable and reason.startswith("unreadable response")


def test_token_counts_a_server_may_send_are_still_read():
    """Integral floats and digit strings were read before (int()); a missing usage is 0."""
    assert read_completion(completion_body(prompt_tokens=5.0, completion_tokens="7")) == ("Action: COMMIT", "stop", 5, 7)
    assert read_completion(completion_body(None, prompt_tokens=None)) == ("", "stop", 0, 0)


@pytest.fixture
def raw_server() -> Iterator[tuple[str, list[bytes]]]:
    """An OpenAI-like server answering every chat request with the next of `bodies` (the last one repeats)."""
    bodies: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._send(bodies.pop(0) if len(bodies) > 1 else bodies[0])

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", bodies
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode", ["huge_usage", "float_usage", "int_content"])
def test_a_hostile_completion_fails_the_call_after_retries_and_reaches_no_cache(raw_server, tmp_path: Path, mode: str):
    """Before: OverflowError writing 10**30 into the cache's INTEGER, TypeError on a content of 12345."""
    url, bodies = raw_server
    bodies.append(HOSTILE_BODIES[mode])
    model = OpenAIChatModel(url, "m", retry=ONE_RETRY, cache=ResponseCache(tmp_path / "llm.sqlite", "read_write"))
    try:
        with pytest.raises(LLMError, match="failed after 1 retries: unreadable response") as raised:
            asyncio.run(model.chat(HELLO))
    finally:
        model.close()
    assert (raised.value.usage.calls, raised.value.usage.retries, raised.value.usage.failures) == (1, 1, 1)
    with sqlite3.connect(tmp_path / "llm.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone() == (0,)


def test_a_hostile_completion_then_a_good_one_is_a_retried_success(raw_server):
    url, bodies = raw_server
    bodies += [HOSTILE_BODIES["huge_usage"], completion_body()]
    completion = asyncio.run(OpenAIChatModel(url, "m", retry=ONE_RETRY).chat(HELLO))
    assert (completion.text, completion.usage.prompt_tokens, completion.usage.retries) == ("Action: COMMIT", 5, 1)


def test_a_40_mb_error_answer_is_kept_to_its_first_characters_in_the_error_and_the_log(caplog):
    """Before: the whole 40 MB text in every episode's error field and every retry's log line."""
    with FaultServer() as server:
        server.script(*[Fault.http_error(500, message="E" * 40_000_000)] * 2)
        model = OpenAIChatModel(server.base_url, "m", retry=ONE_RETRY)
        with caplog.at_level(logging.WARNING), pytest.raises(LLMError) as raised:
            asyncio.run(model.chat(HELLO))
    cut = f"[cut at {SERVER_TEXT_CHARS:,} characters of "
    assert cut in str(raised.value) and len(str(raised.value)) < SERVER_TEXT_CHARS + 300
    retries = [r.getMessage() for r in caplog.records if "retry 1 of 1" in r.getMessage()]
    assert len(retries) == 1 and cut in retries[0] and len(retries[0]) < SERVER_TEXT_CHARS + 300
