"""A loopback OpenAI-compatible HTTP server that misbehaves on request, for tests.

It serves /v1/models, /v1/chat/completions and /v1/embeddings on 127.0.0.1 (a free
port), one thread per connection so that dozens of slow requests overlap, and
/stats (request counts, most chat requests in flight at once). Chat
requests take their behaviour from a script of `Fault`s, one per request in order,
then answer normally; `delay_s` slows every answer (fixed-delay mode) and `down`
resets every connection. It counts requests per path and keeps the request bodies.

    with FaultServer() as server:
        server.script(Fault.http_error(429, retry_after="0.1"), Fault.http_error(500))
        ...  # point a client at server.base_url
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, get_args

# What a chat request gets:
#   ok             a normal completion (the reply function's text)
#   status         an error answer with `status` (429, 500, 503, ...), Retry-After if given
#   slow           a normal completion after `delay_s` (past a client's timeout)
#   reset          the connection closed with a TCP reset before any answer
#   truncated      a full Content-Length announced, half the body sent, then closed
#   invalid_json   a 200 answer whose body is not JSON
#   empty          a completion whose content is ""
#   ignore_format  a completion that ignores whatever format the prompt asked for
FaultKind = Literal["ok", "status", "slow", "reset", "truncated", "invalid_json", "empty", "ignore_format"]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)

MODEL_ID = "fault-server-model"
OFF_FORMAT_TEXT = "I would rather talk about the weather today."


@dataclass(frozen=True)
class Fault:
    """How the server answers one chat request: Fault("reset"), Fault.http_error(429, "1"), ..."""

    kind: FaultKind
    status: int = 200
    retry_after: str | None = None  # the Retry-After header: seconds or an HTTP date
    delay_s: float = 0.0
    message: str | None = None  # the error answer's text (default: "scripted <status>")

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; valid: {', '.join(FAULT_KINDS)}")

    @classmethod
    def http_error(cls, status: int, retry_after: str | None = None, message: str | None = None) -> Fault:
        return cls("status", status=status, retry_after=retry_after, message=message)

    @classmethod
    def slow(cls, delay_s: float) -> Fault:
        return cls("slow", delay_s=delay_s)


def _words(text: str) -> int:
    return len(text.split())


def default_reply(messages: list[dict[str, Any]]) -> str:
    """The normal answer: an echo of the last user message, so tests can tell calls apart."""
    last = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    return f"echo: {last}"


def embedding_vector(text: str, dim: int = 8) -> list[float]:
    """A deterministic unit vector from the text's sha256."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = [v / 2**31 for v in struct.unpack(f">{dim}i", (digest * (4 * dim // len(digest) + 1))[: 4 * dim])]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


class FaultServer:
    """The server as a context manager; `base_url` ends in /v1."""

    def __init__(self, reply: Callable[[list[dict[str, Any]]], str] = default_reply, delay_s: float = 0.0):
        self.reply = reply
        self.delay_s = delay_s  # fixed-delay mode: every chat answer waits this long
        self.down = False  # "down" mode: every connection is reset
        self.requests: Counter[str] = Counter()
        self.chat_bodies: list[dict[str, Any]] = []
        self.authorizations: list[str] = []  # the Authorization header of each chat request
        self.model_ids = [MODEL_ID]  # what /v1/models lists
        self.in_flight = 0  # chat requests being answered now
        self.max_in_flight = 0
        self._script: list[Fault] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server is bound to."""
        assert self._httpd is not None, "FaultServer is not started"
        host, port = self._httpd.server_address[:2]
        return str(host), int(port)

    @property
    def port(self) -> int:
        return self.address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *faults: Fault) -> None:
        """Queue behaviours for the next chat requests, in order."""
        with self._lock:
            self._script.extend(faults)

    def pending(self) -> int:
        """Scripted behaviours not yet used."""
        with self._lock:
            return len(self._script)

    def chat_requests(self) -> int:
        with self._lock:
            return self.requests["/v1/chat/completions"]

    def _next_fault(self, path: str, body: dict[str, Any] | None, authorization: str = "") -> Fault:
        with self._lock:
            self.requests[path] += 1
            if body is not None:
                self.chat_bodies.append(body)
                self.authorizations.append(authorization)
            return self._script.pop(0) if self._script and path == "/v1/chat/completions" else Fault("ok")

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def __enter__(self) -> FaultServer:
        self._httpd = _Httpd(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fault-server", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            assert self._thread is not None
            self._thread.join(timeout=5)
            self._httpd = None


class _Httpd(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 drops connection bursts (32 clients opening at once)
    # into SYN retries of a second each.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timed out, hung up) is expected here, not an error to print."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def _handler_for(server: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real OpenAI-compatible servers do
        # Headers and body go out in two writes; with Nagle on, the body waits for the
        # client's delayed ACK of the headers: 40 ms added to every answer.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if self._reset_if_down():
                return
            server._next_fault(path, None)
            if path == "/v1/models":
                models = [{"id": name, "object": "model", "owned_by": "fault-server"} for name in server.model_ids]
                self._send_json(200, {"object": "list", "data": models})
            elif path == "/health":
                self._send_json(200, {"status": "ok"})
            elif path == "/stats":
                with server._lock:
                    self._send_json(200, {"requests": dict(server.requests), "max_in_flight": server.max_in_flight})
            else:
                self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

        def do_POST(self) -> None:
            path = self.path.split("?")[0]
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self._reset_if_down():
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                server._next_fault(path, None)
                self._send_json(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
                return
            chat = path == "/v1/chat/completions"
            fault = server._next_fault(path, body if chat else None, self.headers.get("Authorization", ""))
            if chat:
                server._enter()
                try:
                    self._chat(body, fault)
                finally:
                    server._leave()
            elif path == "/v1/embeddings":
                self._embeddings(body)
            else:
                self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

        def _chat(self, body: dict[str, Any], fault: Fault) -> None:
            delay = server.delay_s + fault.delay_s
            if delay:
                time.sleep(delay)
            if fault.kind == "status":
                headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
                self._send_json(
                    fault.status, {"error": {"message": fault.message or f"scripted {fault.status}", "type": "server_error"}}, headers
                )
                return
            if fault.kind == "reset":
                self._reset()
                return
            if fault.kind == "invalid_json":
                self._send_raw(200, b'{"choices": [{"message": ', "application/json")
                return
            messages = body.get("messages", [])
            text = {"empty": "", "ignore_format": OFF_FORMAT_TEXT}.get(fault.kind)
            if text is None:
                text = server.reply(messages)
            prompt_tokens = sum(_words(str(m.get("content", ""))) for m in messages)
            payload = {
                "id": f"chatcmpl-{server.requests['/v1/chat/completions']}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", MODEL_ID),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": _words(text), "total_tokens": prompt_tokens + _words(text)},
            }
            if fault.kind == "truncated":
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._send_json(200, payload)

        def _embeddings(self, body: dict[str, Any]) -> None:
            inputs = body.get("input", [])
            texts = [inputs] if isinstance(inputs, str) else list(inputs)
            data = [{"object": "embedding", "index": i, "embedding": embedding_vector(t)} for i, t in enumerate(texts)]
            tokens = sum(_words(t) for t in texts)
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body.get("model", MODEL_ID),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

        def _reset_if_down(self) -> bool:
            if server.down:
                with server._lock:
                    server.requests["down"] += 1
                self._reset()
            return server.down

        def _reset(self) -> None:
            # SO_LINGER 0 makes close() send RST: the client sees a connection reset.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()

        def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

        def _send_raw(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes: `python -m tests.fault_server --delay-ms 200`.

    Prints the base URL as the first line of stdout. In its own process the server
    does not share a GIL with the client it is measuring.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m tests.fault_server", description="A loopback OpenAI-compatible test server.")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="fixed delay of every chat answer")
    args = parser.parse_args(argv)
    with FaultServer(delay_s=args.delay_ms / 1000.0) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
