"""SQL written by a model, run outside the harness process: LLB-DB's statements and answer check.

SQLite runs inside the process that calls it, so SQL that crashes SQLite (the FTS3 tokenizer
pointer, a known code-execution route), takes all memory, or changes SQLite for the whole
process (PRAGMA hard_heap_limit, temp_store_directory) would do it to the harness. Here it
runs in a worker process (`SQLWorker`, one per env instance, reused across episodes with a
fresh in-memory database per episode), under:
  - memory: RLIMIT_AS of `memory_mb`, and SQLite's own heap limit at 3/4 of it (a clean
    "out of memory" before Python's allocations fail);
  - CPU time: RLIMIT_CPU, raised before each request to what the worker used so far plus the
    request's allowance, so it holds even when the statement's own timer (the progress
    handler) is not reached, and after the harness is gone;
  - wall time: the harness kills the worker when a reply is late;
  - no privileges: started as root it drops to nobody (no files of the harness's, no raising
    its limits); it cannot fork, gets no environment variables (no API keys), runs in its own
    session (a Ctrl-C meant for the harness does not reach it) and exits when the harness
    closes its pipe, at exit too (not PR_SET_PDEATHSIG: that fires when the *thread* that
    started the worker ends, and workers start in the runner's thread pool);
  - system calls: a seccomp filter (memrl_bench.envs.sandbox.seccomp.sql_worker_filter, when
    libseccomp is here) refuses every call that opens or changes a file, makes a socket or
    starts a process or program, so a SQLite bug the SQL reaches can read no host file,
    connect nowhere and run nothing.
A worker that dies, hits a limit or sends a reply over `MAX_REPLY_BYTES` or `MAX_REPLY_VALUES` raises `WorkerLimit`
naming what happened (the env ends the episode with status "env_limit"), and is not reused.

Every connection (the worker's and the harness's own reference copies) gets the same
configuration (`open_database`): an authorizer allowing the statements the tasks use,
PRAGMA only for read-only schema introspection, no virtual tables, no ATTACH (so no VACUUM),
no fts3_tokenizer or load_extension; temporary data in memory. Denied statements are
ordinary errors ("not authorized").

Protocol: a 4-byte big-endian length, then UTF-8 JSON, each way. The worker first says
{"ready": pid}; then per request {"op": "reset", "table"} -> {}, {"op": "run", "sql",
"timeout_s", "max_rows"} -> {"columns", "rows", "changed"}, {"op": "table", "name",
"timeout_s", "max_rows"} -> {"columns", "rows"}; or {"error"} (SQLite's message),
{"failure"} (a Python exception, raised again in the harness) or {"limit"}. A BLOB cell
travels as {"blob": hex}. JSON, not pickle: a worker taken over by its SQL must not be able
to run code in the harness by what it sends back.

This file is also the worker's program (`python -I -S <this file> <memory_mb> <filter hex | ->`):
it imports the standard library only, so a worker starts in tens of milliseconds.
"""

from __future__ import annotations

import ctypes  # every import while the worker is root: as nobody it may not read the interpreter's files (/root/.pyenv)
import json
import math
import os
import resource
import select
import signal
import sqlite3
import struct
import subprocess
import sys
import time
import weakref
from typing import Any

Row = tuple[Any, ...]

MAX_REPLY_BYTES = 16 << 20  # a reply past this is a limit, not a result
# Values (rows x columns) a reply may hold: each is a Python object in the harness once parsed, so a reply under the
# byte cap could still cost ~5 times its size there (10,001 rows of 2,000 zeros: 60 MB of JSON, 300 MB held: 60b; at
# 1,000,000 values, one-byte BLOBs, each a dict, took the harness from 55 to 323 MB: 61b). No task's table holds a
# hundredth of this.
MAX_REPLY_VALUES = 100_000
EXIT_OUT_OF_MEMORY = 3  # the worker's exit code after a MemoryError
_GRACE_S = 2  # CPU seconds a request gets past its statement's own time limit
_START_S = 30.0  # wall time for a worker to start
_NOBODY = 65534
_HEADER = struct.Struct(">I")

_A = sqlite3
# Actions the tasks' SQL and reasonable agent SQL need. Everything else is denied: ATTACH and
# DETACH (and so VACUUM, which attaches), CREATE / DROP VTABLE, and action codes SQLite adds later.
_ALLOWED_ACTIONS = frozenset({
    _A.SQLITE_SELECT, _A.SQLITE_READ, _A.SQLITE_INSERT, _A.SQLITE_UPDATE, _A.SQLITE_DELETE, _A.SQLITE_RECURSIVE,
    _A.SQLITE_CREATE_TABLE, _A.SQLITE_CREATE_TEMP_TABLE, _A.SQLITE_DROP_TABLE, _A.SQLITE_DROP_TEMP_TABLE, _A.SQLITE_ALTER_TABLE,
    _A.SQLITE_CREATE_INDEX, _A.SQLITE_CREATE_TEMP_INDEX, _A.SQLITE_DROP_INDEX, _A.SQLITE_DROP_TEMP_INDEX, _A.SQLITE_REINDEX,
    _A.SQLITE_CREATE_VIEW, _A.SQLITE_CREATE_TEMP_VIEW, _A.SQLITE_DROP_VIEW, _A.SQLITE_DROP_TEMP_VIEW,
    _A.SQLITE_CREATE_TRIGGER, _A.SQLITE_CREATE_TEMP_TRIGGER, _A.SQLITE_DROP_TRIGGER, _A.SQLITE_DROP_TEMP_TRIGGER,
    _A.SQLITE_TRANSACTION, _A.SQLITE_SAVEPOINT, _A.SQLITE_ANALYZE,
})  # fmt: skip
# Read-only schema introspection; every other PRAGMA (and pragma_* table function) is denied:
# several change SQLite for the whole process (hard_heap_limit, soft_heap_limit,
# temp_store_directory, data_store_directory) or the database's safety (writable_schema).
ALLOWED_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"})
# fts3_tokenizer reads and registers C function pointers; load_extension loads a library;
# fts5(?) hands out a C pointer. (FTS tables themselves need CREATE VIRTUAL TABLE: denied.)
DENIED_FUNCTIONS = frozenset({"fts3_tokenizer", "load_extension", "fts5"})


class SQLError(Exception):
    """A statement's error as SQLite gave it (the model sees "Error: <it>")."""


class WorkerLimit(Exception):
    """The worker died, hit a limit or broke the protocol; the message says which."""


# ---- the database (worker and harness alike) ------------------------------------------------


def authorize(action: int, arg1: str | None, arg2: str | None, _database: str | None, _trigger: str | None) -> int:
    """SQLite's authorizer: OK for the statements above, DENY for the rest."""
    if action == sqlite3.SQLITE_PRAGMA:
        allowed = (arg1 or "").lower() in ALLOWED_PRAGMAS
    elif action == sqlite3.SQLITE_FUNCTION:
        allowed = (arg2 or "").lower() not in DENIED_FUNCTIONS
    else:
        allowed = action in _ALLOWED_ACTIONS
    return sqlite3.SQLITE_OK if allowed else sqlite3.SQLITE_DENY


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def open_database(table: dict[str, Any], reverse_rows: bool = False) -> sqlite3.Connection:
    """A fresh in-memory database holding the task's table (rows in reverse order if asked), configured as above."""
    connection = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA temp_store = MEMORY")  # sorts and temporary tables never reach a file
    columns = table["column_info_list"]
    definitions = ", ".join(f"{_quote(c['name'])} {c['type']}" for c in columns)
    connection.execute(f"CREATE TABLE {_quote(table['name'])} ({definitions})")
    rows = table["row_list"][::-1] if reverse_rows else table["row_list"]
    connection.executemany(f"INSERT INTO {_quote(table['name'])} VALUES ({', '.join('?' * len(columns))})", rows)
    connection.set_authorizer(authorize)
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 10_000_000)
    return connection


def run_sql(connection: sqlite3.Connection, sql: str, timeout_s: float, max_rows: int | None) -> tuple[list[str] | None, list[Row], int]:
    """(column names or None, up to max_rows result rows (None: all), rows changed); raises sqlite3.Error."""
    deadline = time.monotonic() + timeout_s
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        cursor = connection.execute(sql)
        columns = [d[0] for d in cursor.description] if cursor.description else None
        rows = [tuple(r) for r in (cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows))] if columns is not None else []
        return columns, rows, cursor.rowcount
    except sqlite3.Warning as warning:  # e.g. "You can only execute one statement at a time."
        raise sqlite3.ProgrammingError(str(warning)) from None
    finally:
        connection.set_progress_handler(None, 0)


def read_table(connection: sqlite3.Connection, name: str, timeout_s: float, max_rows: int | None = None) -> tuple[list[str], list[Row]]:
    """(column names, rows) of the real table `name` of the main database, up to `max_rows` rows.
    A view (or anything else) of that name is an error, not something to read: it may never end."""
    found = connection.execute("SELECT type FROM main.sqlite_master WHERE name = ? COLLATE NOCASE", (name,)).fetchone()
    if found is None:
        raise sqlite3.OperationalError(f"no such table: {name}")
    if found[0] != "table":
        raise sqlite3.OperationalError(f"{name} is a {found[0]}, not a table")
    columns, rows, _ = run_sql(connection, f"SELECT * FROM main.{_quote(name)}", timeout_s, max_rows)
    return columns or [], rows


# ---- the wire -------------------------------------------------------------------------------


def _cells_out(rows: list[Row]) -> list[list[Any]]:
    return [[{"blob": c.hex()} if isinstance(c, bytes) else c for c in row] for row in rows]


def _cells_in(rows: list[list[Any]]) -> list[Row]:
    return [tuple(bytes.fromhex(c["blob"]) if isinstance(c, dict) else c for c in row) for row in rows]


def _encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return _HEADER.pack(len(body)) + body


# ---- the worker's side ----------------------------------------------------------------------


def _handle(state: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    op = request["op"]
    if op == "reset":
        if state.get("connection") is not None:
            state["connection"].close()
        state["connection"] = open_database(request["table"])
        return {}
    connection = state["connection"]
    try:
        if op == "run":
            columns, rows, changed = run_sql(connection, request["sql"], request["timeout_s"], request["max_rows"])
            counts = {"changed": changed}
        else:
            columns, rows = read_table(connection, request["name"], request["timeout_s"], request["max_rows"])
            counts = {}
        if len(rows) * len(columns or ()) > MAX_REPLY_VALUES:
            return {"limit": f"the SQL worker's reply exceeded {MAX_REPLY_VALUES:,} values"}
        return {"columns": columns, "rows": _cells_out(rows)} | counts
    except sqlite3.Error as err:
        return {"error": str(err)}


def _read_request(stream: Any) -> dict[str, Any] | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None  # the harness closed the pipe (or exited)
    return json.loads(stream.read(_HEADER.unpack(header)[0]))


def _give_up_privileges() -> None:
    """As root, become nobody: no file of the harness's, no raising the limits. Best effort: a
    system that refuses it (a user namespace without that id) keeps the limits above."""
    if os.geteuid() != 0:
        return
    try:
        os.setgroups([])
        os.setresgid(_NOBODY, _NOBODY, _NOBODY)
        os.setresuid(_NOBODY, _NOBODY, _NOBODY)
    except OSError:
        pass


def filter_system_calls(program: bytes) -> None:
    """no_new_privs, then the seccomp filter `program` (BPF: memrl_bench.envs.sandbox.seccomp.sql_worker_filter's) on this
    process for good; OSError naming the call the kernel refused."""

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    loaded = Program(len(program) // 8, program)
    for call, args in (("PR_SET_NO_NEW_PRIVS", (38, 1, 0, 0, 0)), ("PR_SET_SECCOMP", (22, 2, ctypes.addressof(loaded), 0, 0))):
        if libc.prctl(*args) != 0:
            raise OSError(ctypes.get_errno(), f"prctl({call}) failed: {os.strerror(ctypes.get_errno())}")


def worker_main(memory_mb: int, program: bytes | None) -> None:
    """The worker: set its limits (and the system-call filter `program`, if given), say ready, then answer requests until
    the pipe closes."""
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    limit = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # no child could outlive the kill of the worker
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sqlite3.connect(":memory:").execute(f"PRAGMA hard_heap_limit = {limit * 3 // 4}").close()  # process-wide: this process only
    _give_up_privileges()
    devnull = os.open(os.devnull, os.O_WRONLY)  # before the filter: no file is opened after it
    if program is not None:
        filter_system_calls(program)
    replies.write(_encode({"ready": os.getpid()}))
    replies.flush()
    os.dup2(devnull, 2)  # nobody reads stderr from here on (a full pipe would block the worker)
    state: dict[str, Any] = {}
    try:
        while (request := _read_request(requests)) is not None:
            used = resource.getrusage(resource.RUSAGE_SELF)
            cpu = math.ceil(used.ru_utime + used.ru_stime) + int(request["cpu_s"])
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, resource.RLIM_INFINITY))
            try:
                reply = _encode(_handle(state, request))
            except MemoryError:
                raise
            except Exception as err:  # what would have been raised in the harness, raised there again
                reply = _encode({"failure": f"{type(err).__name__}: {err}"})
            if len(reply) - _HEADER.size > MAX_REPLY_BYTES:
                reply = _encode({"limit": f"the SQL worker's reply exceeded {MAX_REPLY_BYTES >> 20} MiB"})
            replies.write(reply)
            replies.flush()
    except MemoryError:
        os._exit(EXIT_OUT_OF_MEMORY)
    except BrokenPipeError:
        os._exit(0)  # the harness is gone


# ---- the harness's side ---------------------------------------------------------------------


class SQLWorker:
    """One worker process, started at once; `reset`, `run` and `read_table` talk to it.

    Any `WorkerLimit` leaves the worker killed and reaped: make a new one for the next episode.
    """

    def __init__(self, memory_mb: int):
        self.memory_mb = memory_mb
        # No environment (the harness's variables, API keys among them, are none of its business);
        # its own session (a Ctrl-C meant for the harness does not reach it).
        from memrl_bench.envs.sandbox.seccomp import sql_worker_filter

        program = sql_worker_filter()
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), str(memory_mb), "-" if program is None else program.hex()],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, cwd="/", env={},
        )  # fmt: skip
        assert self._process.stdin is not None and self._process.stdout is not None and self._process.stderr is not None
        self._in, self._out = self._process.stdin.fileno(), self._process.stdout.fileno()
        os.set_blocking(self._in, False)
        process = self._process
        self._finalizer = weakref.finalize(self, _stop, process)  # an env dropped without close() leaves no worker
        try:
            ready = self._receive(time.monotonic() + _START_S, f"{_START_S:g} s")
        except WorkerLimit as failed:
            why = process.stderr.read().decode(errors="replace").strip().splitlines()
            raise RuntimeError(f"the SQL worker did not start: {why[-1] if why else failed}") from None
        finally:
            process.stderr.close()
        self.pid: int = ready["ready"]

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def reset(self, table: dict[str, Any], timeout_s: float) -> None:
        """A fresh database holding `table` (its name, column_info_list and row_list)."""
        self.call({"op": "reset", "table": {k: table[k] for k in ("name", "column_info_list", "row_list")}}, *limits(timeout_s))

    def run(self, sql: str, timeout_s: float, max_rows: int) -> tuple[list[str] | None, list[Row], int]:
        """`run_sql` in the worker; raises SQLError for SQLite's errors."""
        reply = self.call({"op": "run", "sql": sql, "timeout_s": timeout_s, "max_rows": max_rows}, *limits(timeout_s))
        return reply["columns"], _cells_in(reply["rows"]), reply["changed"]

    def read_table(self, name: str, timeout_s: float, max_rows: int) -> tuple[list[str], list[Row]]:
        """`read_table` in the worker; raises SQLError for a missing table, a view, a timeout."""
        reply = self.call({"op": "table", "name": name, "timeout_s": timeout_s, "max_rows": max_rows}, *limits(timeout_s))
        return reply["columns"], _cells_in(reply["rows"])

    def call(self, request: dict[str, Any], cpu_s: int, wall_s: float) -> dict[str, Any]:
        """One request and its reply, the worker held to `cpu_s` CPU seconds and `wall_s` seconds."""
        if self._process is None:
            raise WorkerLimit("the SQL worker was closed")
        deadline = time.monotonic() + wall_s
        self._send(_encode({**request, "cpu_s": cpu_s}), deadline, wall_s, cpu_s)
        reply = self._receive(deadline, f"{wall_s:g} s", cpu_s)
        if "limit" in reply:
            self.close()
            raise WorkerLimit(reply["limit"])
        if "failure" in reply:
            raise RuntimeError(reply["failure"])
        if "error" in reply:
            raise SQLError(reply["error"])
        return reply

    def _send(self, data: bytes, deadline: float, wall_s: float, cpu_s: int) -> None:
        poller = select.poll()
        poller.register(self._in, select.POLLOUT)
        view = memoryview(data)
        while view:
            self._wait(poller, deadline, f"{wall_s:g} s", cpu_s)
            try:
                view = view[os.write(self._in, view) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._ended(cpu_s) from None

    def _receive(self, deadline: float, wall: str, cpu_s: int = 0) -> dict[str, Any]:
        poller = select.poll()
        poller.register(self._out, select.POLLIN)
        header = self._read(_HEADER.size, poller, deadline, wall, cpu_s)
        size = _HEADER.unpack(header)[0]
        if size > MAX_REPLY_BYTES:
            self.close()
            raise WorkerLimit(f"the SQL worker's reply exceeded {MAX_REPLY_BYTES >> 20} MiB")
        try:
            return json.loads(self._read(size, poller, deadline, wall, cpu_s))
        except ValueError:
            self.close()
            raise WorkerLimit("the SQL worker sent a reply that is not JSON") from None

    def _read(self, size: int, poller: select.poll, deadline: float, wall: str, cpu_s: int) -> bytes:
        chunks: list[bytes] = []
        while size > 0:
            self._wait(poller, deadline, wall, cpu_s)
            chunk = os.read(self._out, min(size, 1 << 20))
            if not chunk:
                raise self._ended(cpu_s)
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _wait(self, poller: select.poll, deadline: float, wall: str, cpu_s: int) -> None:
        """Until the pipe is ready; at the deadline the worker is killed."""
        while not poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
            if time.monotonic() >= deadline:
                self.close()
                raise WorkerLimit(f"the SQL worker reached its wall-clock limit ({wall})")

    def _ended(self, cpu_s: int) -> WorkerLimit:
        """The worker is gone: reap it and say why."""
        assert self._process is not None
        code = self._process.wait()
        self.close()
        if code == EXIT_OUT_OF_MEMORY:
            return WorkerLimit(f"the SQL worker ran out of memory (limit {self.memory_mb} MiB)")
        if code == -signal.SIGXCPU:
            return WorkerLimit(f"the SQL worker reached its CPU-time limit ({cpu_s} s)")
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            return WorkerLimit(f"the SQL worker died ({name})")
        return WorkerLimit(f"the SQL worker exited with code {code}")

    def close(self) -> None:
        """Kill and reap the worker (idempotent)."""
        self._process = None
        self._finalizer()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout):  # stderr is read and closed at the start
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


def limits(timeout_s: float) -> tuple[int, float]:
    """(CPU seconds, wall seconds) of a request whose statement may run `timeout_s`: the
    statement's own timer ends it first; the CPU limit catches what that timer does not reach,
    the wall limit (twice as long: a busy machine slows the worker) a worker that stops answering."""
    cpu_s = math.ceil(timeout_s) + _GRACE_S
    return cpu_s, 2.0 * cpu_s


if __name__ == "__main__":
    worker_main(int(sys.argv[1]), bytes.fromhex(sys.argv[2]) if sys.argv[2] != "-" else None)
