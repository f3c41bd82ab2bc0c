"""A hostile LLM server's answers (red team B11, B12): bodies that are valid JSON but no
completion (a content that is not text, token counts past any context or not whole
numbers), and error texts of tens of megabytes. Each is a failed call like any bad answer,
never a traceback, and nothing of it is stored whole."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2 as httpx
import pytest

from memrl_bench.core.config import InputError
from memrl_bench.core.redaction import SERVER_TEXT_CHARS
from memrl_bench.llm import LLMError, LLMOutageError
from memrl_bench.llm import http as llm_http
from memrl_bench.llm.cache import ResponseCache
from memrl_bench.llm.client import MAX_TOKEN_COUNT, OpenAIChatModel, RetryPolicy, _classify, _InvalidResponse, read_completion
from memrl_bench.llm.embedders import EmbeddingSizeError, OpenAIEmbedder
from tests.fault_server import Fault, FaultServer

HELLO = [{"role": "user", "content": "hello"}]
ONE_RETRY = RetryPolicy(max_retries=1, timeout_s=5.0, backoff_base_s=0.01, backoff_max_s=0.02)


def completion_body(content: object = "Action: COMMIT", **usage: object) -> bytes:
    """The red team's hostile_server.chat_body: a well-formed completion with the given fields replaced."""
    tokens = usage or {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": tokens,
        }
    ).encode()


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


def test_a_10_mb_error_answer_is_kept_to_its_first_characters_in_the_error_and_the_log(caplog):
    """Before: the whole text in every episode's error field and every retry's log line (a body
    past the cap of memrl_bench.llm.http is not read at all: see the tests below)."""
    with FaultServer() as server:
        server.script(*[Fault.http_error(500, message="E" * 10_000_000)] * 2)
        model = OpenAIChatModel(server.base_url, "m", retry=ONE_RETRY)
        with caplog.at_level(logging.WARNING), pytest.raises(LLMError) as raised:
            asyncio.run(model.chat(HELLO))
    cut = f"[cut at {SERVER_TEXT_CHARS:,} characters of "
    assert cut in str(raised.value) and len(str(raised.value)) < SERVER_TEXT_CHARS + 300
    retries = [r.getMessage() for r in caplog.records if "retry 1 of 1" in r.getMessage()]
    assert len(retries) == 1 and cut in retries[0] and len(retries[0]) < SERVER_TEXT_CHARS + 300


SMALL_CAP = 1 << 20  # the tests' body cap: 1 MiB instead of MIN_BODY_BYTES


@pytest.fixture
def hostile_body_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[str]]]:
    """A server answering every POST (chat and embeddings) in the mode of `modes[0]`: "endless_500"
    (a chunked body of 64 MiB, 64 times the cap; the red team's never ended), "gzip_500" (a gzip body
    expanding to 64 MiB), "big_200" (a completion of 4 MiB)."""
    monkeypatch.setattr(llm_http, "MIN_BODY_BYTES", SMALL_CAP)
    modes: list[str] = []
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(packer.compress(b"E" * (1 << 20)) for _ in range(64)) + packer.flush()
    seen_encodings: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _chunked(self, status: int, chunks: Iterator[bytes]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for chunk in chunks:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:  # the client hung up past its cap: what the cap is for
                self.close_connection = True

        def do_GET(self) -> None:
            body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen_encodings.append(self.headers.get("Accept-Encoding", ""))
            mode = modes[0]
            if mode == "endless_500":
                self._chunked(500, (b"E" * 65536 for _ in range(1024)))
            elif mode == "gzip_500":
                self.send_response(500)
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(bomb)))
                self.end_headers()
                self.wfile.write(bomb)
            elif mode == "big_200":
                self._chunked(200, iter([completion_body("A" * (4 << 20))]))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", modes
    finally:
        server.shutdown()
        server.server_close()
    assert seen_encodings and set(seen_encodings) == {"identity"}  # every request asked for an uncompressed answer


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("endless_500", "ResponseTooLarge: the server's HTTP 500 answer passed 1,048,576 bytes"),
        ("gzip_500", "ResponseTooLarge: the server answered HTTP 500 with a gzip-compressed body"),
        ("big_200", "ResponseTooLarge: the server's HTTP 200 answer passed 1,048,576 bytes"),
    ],
)
def test_a_chat_answer_past_the_body_cap_is_a_failed_call_not_read_whole(hostile_body_server, mode: str, reason: str):
    """Before (red team round 2, B11/B12): an endless chunked 500 or a gzip bomb grew the harness to 23 GB, killed by the kernel."""
    url, modes = hostile_body_server
    modes.append(mode)
    model = OpenAIChatModel(url, "m", retry=ONE_RETRY)
    with pytest.raises(LLMError, match=f"failed after 1 retries: connection error: {re.escape(reason)}") as raised:
        asyncio.run(model.chat(HELLO))
    assert raised.value.usage.failures == 1


def test_a_body_still_arriving_past_the_deadline_is_a_timeout():
    """The chat's wait_for bounds its calls; this bounds the sync clients' (/models, embeddings): httpx's timeout is per read."""
    with FaultServer() as server:
        client = llm_http.capped_client(SMALL_CAP, deadline_s=0.0)
        with pytest.raises(httpx.ReadTimeout, match="still arriving after 0 s"):
            client.get(f"{server.base_url}/models")


@pytest.mark.parametrize("mode", ["endless_500", "gzip_500"])
def test_an_embeddings_answer_past_the_body_cap_stops_the_run_as_an_outage(hostile_body_server, mode: str):
    url, modes = hostile_body_server
    modes.append(mode)
    embedder = OpenAIEmbedder("e", base_url=url, timeout_s=5.0)
    with pytest.raises(LLMOutageError, match="the embeddings server at .* failed: Connection error"):
        embedder.embed(["hello"])


ODD_EMBEDDINGS = {
    "string_cells": {"data": [{"index": 0, "embedding": ["&#103;&#115;&#107;&#95;secret"]}]},
    "null_vector": {"data": [{"index": 0, "embedding": None}]},
    "data_a_string": {"data": "&#103;&#115;&#107;"},
    "nan_cell": {"data": [{"index": 0, "embedding": [float("nan"), 1.0]}]},
    "empty_vector": {"data": [{"index": 0, "embedding": []}]},
}


@contextlib.contextmanager
def embeddings_server(answer: Callable[[list[str]], object]) -> Iterator[str]:
    """The base URL of a server answering every POST 200 with the JSON of `answer(the texts asked for)`."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            payload = json.dumps(answer(json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))["input"])).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


@pytest.mark.parametrize("body", ODD_EMBEDDINGS.values(), ids=ODD_EMBEDDINGS.keys())
def test_an_embeddings_answer_that_is_no_vectors_stops_the_run_without_quoting_it(body):
    """The twentieth probe round: a 200 answer whose cells are strings, null or a dict ended the run in numpy's traceback,
    which quoted the cell (a key HTML-escaped reached stderr whole)."""
    with embeddings_server(lambda texts: body) as url:
        with pytest.raises(LLMOutageError, match="not one vector of finite numbers each") as stopped:
            OpenAIEmbedder("e", base_url=url, timeout_s=5.0).embed(["hello"])
    assert "&#" not in str(stopped.value) and "secret" not in str(stopped.value)


def test_an_embeddings_server_changing_its_vector_size_stops_the_run_in_one_line():
    """The twenty-first probe round: a server answering 8 numbers, then 9, ended the run in a RuntimeError's traceback (and
    vectors of two sizes in one batch in numpy's): the sizes of one run's vectors are one, an input error (exit 2)."""
    calls = []

    def answer(texts: list[str]) -> dict:
        calls.append(texts)
        return {"data": [{"index": i, "embedding": [1.0] * (8 + (len(calls) > 1))} for i in range(len(texts))]}

    with embeddings_server(answer) as url:
        embedder = OpenAIEmbedder("e", base_url=url, timeout_s=5.0)
        assert embedder.embed(["a"]).shape == (1, 8)
        with pytest.raises(EmbeddingSizeError, match="answered vectors of 9 numbers where embedder.dim .* has 8") as stopped:
            embedder.embed(["b"])
        calls.clear()
        with pytest.raises(EmbeddingSizeError, match="answered vectors of 9 numbers"):
            OpenAIEmbedder("e", base_url=url, timeout_s=5.0, batch_size=1).embed(["d", "e"])  # one batch of two sizes: 8, then 9
    assert isinstance(stopped.value, InputError)


MODELS_ANSWERS = {
    "loading_503": (503, b'{"error": {"message": "Loading model", "type": "unavailable_error", "code": 503}}', 3),
    "error_500": (500, b"Internal Server Error", 3),
    "gateway_502": (502, b"<html>Bad Gateway</html>", 3),
    "busy_429": (429, b'{"error": {"message": "slow down"}}', 3),
    "refused_400": (400, b'{"error": {"message": "bad request"}}', 2),
    "html_200": (200, b"<html>a web page</html>", 0),
    "number_data": (200, b'{"object": "list", "data": 5}', 0),
    "ids_not_text": (200, b'{"object": "list", "data": [{"id": 5}, {"id": null}, {"id": [1]}]}', 0),
    "strings": (200, b'{"object": "list", "data": ["a", "b"]}', 0),
    "a_list": (200, b"[1, 2]", 0),
}


@pytest.mark.parametrize("status, body, code", MODELS_ANSWERS.values(), ids=MODELS_ANSWERS.keys())
def test_a_models_listing_that_fails_or_is_odd_ends_in_one_line_not_a_traceback(status: int, body: bytes, code: int):
    """Round 28b: /models answering 5xx or 429 (llama.cpp and vLLM answer 503 while a model loads), 400, or a 200 body
    that is no model list ended the run in a traceback, exit 1. A busy server is asked again, then is down (exit 3); a
    refusal is a setting to fix (exit 2); an unreadable list names no served model (the run goes on)."""
    from memrl_bench.cli.main import _outcome

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        retry = RetryPolicy(max_retries=1, backoff_base_s=0.01)
        if code == 0:
            assert OpenAIChatModel(url, "m", retry=retry).identity["served_model"] is None
            return
        with pytest.raises(LLMError) as raised:
            OpenAIChatModel(url, "m", retry=retry)
    finally:
        server.shutdown()
        server.server_close()
    line, exit_code = _outcome(raised.value)
    assert exit_code == code and f"HTTP {status}" in line, line
