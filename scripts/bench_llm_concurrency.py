"""Sustained requests/s of OpenAIChatModel as max_concurrency grows.

The fault server answers every chat request after a fixed delay, so a client that
really keeps c requests in flight reaches c / delay requests/s. Each level sends
`requests_per_slot * c` requests; the table shows measured vs ideal and the ratio
(median of `--repeats` runs), the most requests the server saw at once, the
client's CPU time per request, and the 99th percentile of the event loop's lag
(how late a 5 ms sleep wakes: time the client could not run).
By default the server runs in its own process (`--server process`), so that its
threads do not compete for the client's GIL; `--server thread` shows that effect.
`--client raw` replaces OpenAIChatModel by a bare asyncio HTTP client: if that one
reaches the ideal, the server is not what limits the client.

    python scripts/bench_llm_concurrency.py --delay-ms 200 --levels 1 4 16 32
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memrl_bench.llm import Completion  # noqa: E402
from memrl_bench.llm.client import OpenAIChatModel, RetryPolicy  # noqa: E402
from tests.fault_server import FaultServer  # noqa: E402


@contextlib.contextmanager
def fault_server(delay_s: float, where: str) -> Iterator[str]:
    """A fresh fault server's base URL, in this process or in a child process."""
    if where == "thread":
        with FaultServer(delay_s=delay_s) as server:
            yield server.base_url
        return
    command = [sys.executable, "-m", "tests.fault_server", "--delay-ms", str(delay_s * 1000)]
    child = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip()
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)


def max_in_flight(base_url: str) -> int:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as response:
        return int(json.load(response)["max_in_flight"])


class RawChat:
    """The control: HTTP/1.1 by hand on one keep-alive connection per slot (no openai, no httpx)."""

    def __init__(self, base_url: str, slots: int):
        url = urlparse(base_url)
        self.host, self.port, self.path = url.hostname or "127.0.0.1", url.port or 80, f"{url.path}/chat/completions"
        self.slots = slots
        self._free: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] | None = None

    async def chat(self, messages: list[dict[str, str]]) -> Completion:
        if self._free is None:
            self._free = asyncio.Queue()
            for _ in range(self.slots):
                self._free.put_nowait(await asyncio.open_connection(self.host, self.port))
        reader, writer = await self._free.get()
        try:
            body = json.dumps({"model": "bench", "messages": messages}).encode()
            head = (
                f"POST {self.path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
            answer_head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length: *(\d+)", answer_head)
            assert length is not None, answer_head
            answer = json.loads(await reader.readexactly(int(length.group(1))))
        finally:
            self._free.put_nowait((reader, writer))
        return Completion(answer["choices"][0]["message"]["content"])

    async def aclose(self) -> None:
        while self._free is not None and not self._free.empty():
            _, writer = self._free.get_nowait()
            writer.close()


async def sustained_rps(model: Any, requests: int) -> float:
    started = time.perf_counter()
    completions = await asyncio.gather(*(model.chat([{"role": "user", "content": f"request {i}"}]) for i in range(requests)))
    elapsed = time.perf_counter() - started
    assert all(c.text == f"echo: request {i}" for i, c in enumerate(completions))
    return requests / elapsed


async def loop_lag(lags: list[float], stop: asyncio.Event, tick_s: float = 0.005) -> None:
    """How late a short sleep wakes up: time this process could not run (CPU taken by
    other processes) or spent busy on other callbacks (the client's own work)."""
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(tick_s)
        lags.append(time.perf_counter() - started - tick_s)


async def measure(base_url: str, client: str, level: int, requests: int, repeats: int) -> tuple[list[float], float, list[float]]:
    """(requests/s of each run, client CPU seconds per request, event-loop lags of one more run)."""
    if client == "raw":
        model: Any = RawChat(base_url, level)
    else:
        model = OpenAIChatModel(base_url, "bench", max_concurrency=level, retry=RetryPolicy(max_retries=0, timeout_s=30.0))
    await sustained_rps(model, level)  # open the connections first
    cpu_started = time.process_time()
    rates = [await sustained_rps(model, requests) for _ in range(repeats)]
    cpu_per_request = (time.process_time() - cpu_started) / (requests * repeats)
    lags: list[float] = []  # measured apart: the probe's own wake-ups cost CPU too
    stop = asyncio.Event()
    probe = asyncio.create_task(loop_lag(lags, stop))
    await sustained_rps(model, requests)
    stop.set()
    await probe
    await model.aclose()
    return rates, cpu_per_request, lags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay-ms", type=float, default=200.0, help="server delay per request (> 0)")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16, 32], help="max_concurrency values")
    parser.add_argument("--requests-per-slot", type=int, default=8, help="requests per run = this x concurrency")
    parser.add_argument("--repeats", type=int, default=3, help="runs per level; the median is reported")
    parser.add_argument("--server", choices=["process", "thread"], default="process", help="where the fault server runs")
    parser.add_argument("--client", choices=["openai", "raw"], default="openai", help="OpenAIChatModel, or the bare control client")
    args = parser.parse_args()
    if args.delay_ms <= 0:
        parser.error("--delay-ms must be > 0")
    delay_s = args.delay_ms / 1000.0

    print(
        f"# {time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(
        f"# client {args.client}; fault server ({args.server}) fixed delay {args.delay_ms:.0f} ms; {args.requests_per_slot} x concurrency "
        f"requests per run; median of {args.repeats} runs"
    )
    print("| concurrency | requests | max in flight | ideal req/s | measured req/s | ratio | client CPU ms/request | loop lag p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for level in args.levels:
        requests = args.requests_per_slot * level
        with fault_server(delay_s, args.server) as base_url:
            rates, cpu_per_request, lags = asyncio.run(measure(base_url, args.client, level, requests, args.repeats))
            seen = max_in_flight(base_url)
        measured, ideal = statistics.median(rates), level / delay_s
        lag_p99 = statistics.quantiles(lags, n=100)[98] if len(lags) >= 2 else 0.0
        print(
            f"| {level} | {requests} | {seen} | {ideal:.1f} | {measured:.1f} | {measured / ideal:.1%} | {cpu_per_request * 1000:.2f} | "
            f"{lag_p99 * 1000:.1f} |"
        )


if __name__ == "__main__":
    main()
