"""A llama.cpp server (the prebuilt `xllamacpp` wheel) on 127.0.0.1, as a context manager.

xllamacpp runs the server inside the calling process on C++ threads and offers no
stop call: it stops only when its Server object is destroyed. To be sure that
stopping frees the port, the threads and the memory, the server runs in a child
process: `python -c <launcher>` builds it on a free port, prints the address,
and blocks reading its stdin. Closing that pipe (or the parent dying) ends it;
`stop` closes the pipe, then escalates to SIGTERM and SIGKILL.

    with LocalLlamaServer(models.ensure("smollm2-135m")) as server:
        model = OpenAIChatModel(server.base_url, server.alias)
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from memrl_bench.core.errors import InputError
from memrl_bench.llm.gguf import GGUFError, GGUFModel

# Runs in the child. Exits through os._exit once stdin closes, or when its address cannot be told: the kernel then
# releases the port and every llama.cpp thread at once.
_LAUNCHER = """
import contextlib, json, os, sys
import xllamacpp
cfg = json.loads(sys.argv[1])
params = xllamacpp.CommonParams()
params.model.path = cfg["model_path"]
params.model_alias = {cfg["alias"]}
params.hostnames = ["127.0.0.1"]
params.port = 0
params.n_parallel = cfg["parallel"]
params.n_ctx = cfg["ctx_size"] * cfg["parallel"]
params.cpuparams.n_threads = cfg["threads"]
params.cpuparams_batch.n_threads = cfg["batch_threads"]
params.cpuparams.poll = cfg["poll"]
params.cpuparams_batch.poll = cfg["poll"]
params.n_threads_http = cfg["parallel"] + 2
# Prefix reuse (llama.cpp's defaults, set here so that they stay on): a request goes to the idle
# slot whose cached prompt shares the longest prefix with it and keeps that KV cache, so a ReAct
# turn prefills only what the last turn added. Prompts of slots handed to other episodes are
# kept in RAM (cache_ram_mib) and restored when their episode comes back.
params.cache_prompt = True
params.slot_prompt_similarity = 0.1
params.cache_ram_mib = 8192
params.embedding = cfg["embedding"]
if cfg["embedding"]:  # decoder models default to no pooling, which /v1/embeddings refuses
    params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
server = xllamacpp.Server(params)
try:
    print(json.dumps({"address": server.listening_address}), flush=True)
except OSError:  # the harness is gone (killed as the model loaded): leave now, without the server's
    # destructor, which could hang and keep the port and the model's memory for good (61b), and with the log
    with contextlib.suppress(OSError):
        os.unlink(cfg["log_path"])
    os._exit(1)
if sys.stdin.read() != "stop":  # the harness died without stopping it: nobody else removes its log
    with contextlib.suppress(OSError):
        os.unlink(cfg["log_path"])
os._exit(0)
"""


class LocalServerError(InputError, RuntimeError):
    """The local llama.cpp server did not start (a model file it cannot load, a KV cache too large for memory); one line
    naming the model, what its log says last and where the log is."""


class LocalLlamaServer:
    """A llama.cpp server for one GGUF model, started on enter and stopped on exit."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        alias: str | None = None,
        threads: int | None = None,
        batch_threads: int | None = None,
        poll: int | None = None,
        ctx_size: int | None = None,
        parallel: int = 1,
        embedding: bool = False,
        startup_timeout_s: float = 120.0,
    ):
        """
        threads: CPU threads for generation and prompt processing; None: `cpu_settings()`, the
            cores other processes leave idle at start (llama.cpp's threads wait for each other,
            so one that loses its core stalls the rest).
        batch_threads: CPU threads for prompt processing (prefill); None: `threads`.
        poll: how long llama.cpp's idle threads spin before they sleep (0-100; 50 is llama.cpp's
            default); None: POLL (0).
        ctx_size: context (prompt + completion tokens) of each request.
        parallel: requests decoded together (llama.cpp slots); the KV cache holds
            ctx_size * parallel tokens. Match it to the client's requests in flight.
        embedding: serve /v1/embeddings (llama.cpp needs the flag at start), mean-pooled.
        """
        self.model_path = Path(model_path).expanduser()
        self.alias = alias or self.model_path.stem
        chosen = cpu_settings() if threads is None else {"threads": threads, "batch_threads": threads, "poll": POLL}
        self.threads = chosen["threads"]
        self.batch_threads = batch_threads if batch_threads is not None else chosen["batch_threads"]
        self.poll = poll if poll is not None else chosen["poll"]
        self.parallel = parallel
        self.ctx_size = ctx_size
        self.embedding = embedding
        self.startup_timeout_s = startup_timeout_s
        self.address: str | None = None
        self.log_path: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        if self.address is None:
            raise LocalServerError("the local llama.cpp server is not running")
        return f"{self.address}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def __enter__(self) -> LocalLlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if importlib.util.find_spec("xllamacpp") is None:
            raise LocalServerError("the local LLM server needs the xllamacpp package: pip install 'memrl-bench[local]'")
        if not self.model_path.is_file():
            raise FileNotFoundError(f"GGUF model file {self.model_path} does not exist")
        for name, value in (
            ("threads", self.threads),
            ("batch_threads", self.batch_threads),
            ("ctx_size", self.ctx_size),
            ("parallel", self.parallel),
        ):
            if value is not None and value < 1:
                raise ValueError(f"local server {name} must be >= 1, got {value}")
        if self.ctx_size is None:
            try:
                self.ctx_size = context_size(self.model_path, self.parallel)
            except GGUFError as err:
                raise LocalServerError(f"the llama.cpp server for {self.model_path} cannot size its context: {err}") from None
        cfg = {
            "model_path": str(self.model_path),
            "alias": self.alias,
            "threads": self.threads,
            "batch_threads": self.batch_threads,
            "poll": self.poll,
            "ctx_size": self.ctx_size,
            "parallel": self.parallel,
            "embedding": self.embedding,
        }
        fd, log_name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        self.log_path = Path(log_name)
        cfg["log_path"] = log_name
        with os.fdopen(fd, "wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _LAUNCHER, json.dumps(cfg)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log
            )
        try:
            self.address = self._read_address(time.monotonic() + self.startup_timeout_s)
            self._wait_healthy(time.monotonic() + self.startup_timeout_s)
        except BaseException:
            self.stop(keep_log=True)
            raise

    def _read_address(self, deadline: float) -> str:
        assert self._process is not None and self._process.stdout is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise self._error(f"exited with code {self._process.returncode} while loading")
            ready, _, _ = select.select([self._process.stdout], [], [], 0.1)
            if ready:
                line = self._process.stdout.readline()
                if line:
                    return str(json.loads(line)["address"])
        raise self._error(f"did not load within {self.startup_timeout_s:.0f} s")

    def _wait_healthy(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.address}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        raise self._error(f"did not answer {self.address}/health within {self.startup_timeout_s:.0f} s")

    def _error(self, what: str) -> LocalServerError:
        lines = [line.strip() for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()] if self.log_path else []
        said = next((line for line in reversed(lines) if "error" in line.lower() or "fail" in line.lower()), lines[-1] if lines else "")
        return LocalServerError(
            f"the llama.cpp server for {self.model_path} {what}; its log says {said[:300]!r} (all of it: {self.log_path})"
        )

    def stop(self, keep_log: bool = False) -> None:
        """Stop the child and reap it; idempotent. The log is removed unless `keep_log`."""
        process, self._process = self._process, None
        self.address = None
        if process is not None:
            _stop_process(process)
        if self.log_path is not None and not keep_log:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def info(self) -> dict[str, Any]:
        """What a run manifest records about the server."""
        return {
            **server_identity(self.model_path.name, self.parallel),
            "threads": self.threads,
            "batch_threads": self.batch_threads,
            "poll": self.poll,
            "ctx_size": self.ctx_size,
        }


def server_identity(model_file: str, parallel: int) -> dict[str, Any]:
    """The server settings that are part of a response's cache key (threads and context are not:
    memrl_bench.llm.cache.VOLATILE_IDENTITY_KEYS)."""
    return {"backend": "llama.cpp (xllamacpp)", "model_file": model_file, "parallel": parallel}


KV_CACHE_MEMORY_SHARE = 0.25  # of the memory available at start, for the KV cache of all slots
CONTEXT_STEP = 256  # a context sized from memory is rounded down to a multiple of this


def context_size(model_path: str | Path, parallel: int, available_bytes: int | None = None) -> int:
    """Tokens per request when the config gives none: the model's training context
    (its GGUF metadata), or less if the KV cache of `parallel` such slots would take more
    than KV_CACHE_MEMORY_SHARE of the memory available now (rounded down to CONTEXT_STEP).

    Qwen2.5-Coder-0.5B: 32,768 tokens at 12 KB each, 384 MB per slot.
    """
    model = GGUFModel.read(model_path)
    budget = KV_CACHE_MEMORY_SHARE * (available_memory() if available_bytes is None else available_bytes)
    fits = int(budget // (max(1, parallel) * model.kv_bytes_per_token)) // CONTEXT_STEP * CONTEXT_STEP
    if fits < CONTEXT_STEP:
        raise LocalServerError(
            f"the KV cache of {model_path} needs {model.kv_bytes_per_token * CONTEXT_STEP * parallel / 2**20:.0f} MB for {parallel} "
            f"slot(s) of {CONTEXT_STEP} tokens; only {budget / 2**20:.0f} MB may be used (set llm.ctx_size or fewer llm.parallel)"
        )
    return min(model.context_length, fits)


def available_memory() -> int:
    """Bytes of memory available to new processes (Linux: MemAvailable), else the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


BUSY_SAMPLE_S = 0.5  # how long the cores' load is sampled before a server starts
POLL = 0  # llama.cpp's idle threads sleep rather than spin: a spinning thread takes a core another job needs


def cpu_settings(busy_cores: float | None = None) -> dict[str, int]:
    """The server's CPU settings when the config gives none: as many threads as cores that other
    processes leave idle (sampled over BUSY_SAMPLE_S), at least one, for generation and prefill
    alike (with several slots llama.cpp decodes them as one batch, on its prefill threads).
    Measured on 2 cores with Qwen2.5-Coder-1.5B (BENCHMARKS.md, "Local server: CPU settings"):
    quiet, 2 threads give 2x the tokens/s of 1; with one core busy elsewhere, 2 threads wait for
    the busy core and give 0.6x of 1."""
    cores = available_cores()
    busy = busy_cores_now() if busy_cores is None else busy_cores
    threads = max(1, min(cores, int(cores - busy + 0.25)))  # a core counts as free when under 3/4 busy
    return {"threads": threads, "batch_threads": threads, "poll": POLL}


def busy_cores_now(sample_s: float = BUSY_SAMPLE_S) -> float:
    """Cores' worth of CPU time used by every process but this one over `sample_s` (Linux /proc/stat;
    elsewhere 0: every core counts as free)."""

    def used() -> tuple[float, float]:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        own = os.times()
        return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK"), own.user + own.system

    try:
        (busy_before, own_before), started = used(), time.monotonic()
        time.sleep(sample_s)
        (busy_after, own_after), elapsed = used(), time.monotonic() - started
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, (busy_after - busy_before - (own_after - own_before)) / elapsed)


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, e.g. a container's or taskset's limit)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    """Tell the launcher to stop and close its stdin, then SIGTERM, then SIGKILL; always reap the child."""
    if process.stdin is not None:
        try:
            process.stdin.write(b"stop")
        except OSError:  # it has exited
            pass
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    try:
        process.wait(timeout=10)
        return
    except subprocess.TimeoutExpired:
        process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
