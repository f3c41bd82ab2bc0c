"""Hostile SQL against LLB-DB (issue 26, findings 1-3): it runs in a worker process
(memrl_bench/envs/sqlite_worker.py), so what it does to SQLite stays there.

The unit tests use the hand-written tasks of tests/integration/test_env_llb_db.py; the end-to-end run
uses real tasks from the shared data (skipped with one line when absent).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memrl_bench.envs.llb_db import LLBDBEnv
from memrl_bench.envs.sqlite_worker import MAX_REPLY_BYTES, MAX_REPLY_VALUES, SQLWorker, WorkerLimit
from memrl_bench.llm.cache import CachedResponse, ResponseCache
from tests.integration.test_env_llb_db import TABLE, TASKS, play, task

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "llb"
ENDLESS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n"
RECURSIVE_VIEW = "CREATE VIEW staff AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c"
# Register a tokenizer whose function table is at address 0x4141414141414141, then use it:
# SQLite calls through that pointer (a known code-execution route; here a SIGSEGV).
FTS3_POINTER_TRICK = ["SELECT fts3_tokenizer('evil', x'4141414141414141')", "CREATE VIRTUAL TABLE v USING fts3(body, tokenize=evil)"]
MEMORY_HOG = (
    "CREATE TABLE hog AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 2000) SELECT randomblob(1000000) AS b FROM c"
)


@pytest.fixture
def env(tmp_path: Path):
    folder = tmp_path / "llb"
    folder.mkdir()
    (folder / "db_train.json").write_text(json.dumps(TASKS))
    (folder / "db_val.json").write_text("{}")
    made = LLBDBEnv({"data_dir": str(folder)})
    yield made
    made.close()


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_fts3_tokenizer_pointer_trick_cannot_crash_the_harness(env: LLBDBEnv):
    unguarded = "import sqlite3\nc = sqlite3.connect(':memory:')\n" + "".join(f"c.execute({sql!r})\n" for sql in FTS3_POINTER_TRICK)
    if sqlite3.connect(":memory:").execute("SELECT sqlite_compileoption_used('ENABLE_FTS3_TOKENIZER')").fetchone()[0]:
        # The trick is real on this SQLite: a process that runs it unguarded dies.
        assert subprocess.run([sys.executable, "-c", unguarded], capture_output=True).returncode == -signal.SIGSEGV
    env.reset(task(env, "2"))
    assert (
        env.step("SQL: SELECT fts3_tokenizer('simple')")[0] == "Error: not authorized to use function: fts3_tokenizer"
    )  # no pointer leaked
    for sql in FTS3_POINTER_TRICK:
        observation, _, done, info = env.step(f"SQL: {sql}")
        assert observation.startswith("Error: not authorized") and not done and "status" not in info
    for module in ("fts4(body)", "fts5(body)", "rtree(id, a, b)"):
        assert env.step(f"SQL: CREATE VIRTUAL TABLE w USING {module}")[0] == "Error: not authorized"
    assert env.step("SQL: SELECT load_extension('/tmp/x.so')")[0] == "Error: not authorized to use function: load_extension"
    assert play(env, "2", "SQL: SELECT name FROM staff WHERE team = 'blue'", "COMMIT")["success"]  # the worker goes on


def test_a_recursive_view_in_place_of_the_table_is_bounded_and_wrong(env: LLBDBEnv):
    start = time.monotonic()
    info = play(env, "3", "SQL: DROP TABLE staff", f"SQL: {RECURSIVE_VIEW}", "COMMIT")
    assert not info["success"] and "status" not in info and info["detail"] == "cannot read the final table: staff is a view, not a table"
    # A temporary view shadowing the right table: the main database's table is what is checked.
    info = play(
        env,
        "3",
        "SQL: UPDATE staff SET salary = salary + 10 WHERE team = 'red'",
        f"SQL: {RECURSIVE_VIEW.replace('VIEW', 'TEMP VIEW')}",
        "COMMIT",
    )
    assert info["success"]
    # A real table of two million rows: one row more than the reference's is read, and it is wrong.
    big = "CREATE TABLE staff AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 2000000) SELECT x AS id FROM c"
    info = play(env, "3", "SQL: DROP TABLE staff", f"SQL: {big}", "COMMIT")
    assert not info["success"] and "status" not in info
    assert time.monotonic() - start < 15


def test_pragmas_that_change_sqlite_for_the_process_are_refused(env: LLBDBEnv, tmp_path: Path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    env.reset(task(env, "2"))
    for pragma in (
        "hard_heap_limit=120000",
        "soft_heap_limit=1",
        f"temp_store_directory='{tmp_path}'",
        f"data_store_directory='{tmp_path}'",
        "writable_schema=1",
        "journal_mode=OFF",
    ):
        assert env.step(f"SQL: PRAGMA {pragma}")[0] == "Error: not authorized", pragma
    assert env.step("SQL: SELECT * FROM pragma_compile_options")[0] == "Error: not authorized"
    assert env.step("SQL: PRAGMA table_info(staff)")[0].startswith(
        "columns: ('cid', 'name', 'type', 'notnull', 'dflt_value', 'pk')"
    )  # schema introspection stays
    assert env.step("SQL: SELECT COUNT(*) FROM staff")[0].endswith("(5,)")
    # The harness's own SQLite is as it was: the response cache writes and reads back.
    for n in range(20):
        cache.put(f"{n:064d}", CachedResponse("y" * 10_000, "stop", 1, 1))
    assert cache.get(f"{19:064d}") is not None
    assert sqlite3.connect(":memory:").execute("PRAGMA temp_store_directory").fetchone() is None
    assert sqlite3.connect(":memory:").execute("PRAGMA hard_heap_limit").fetchone() == (0,)
    cache.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_a_worker_killed_mid_statement_ends_the_episode_with_env_limit_and_the_next_episode_runs(
    env: LLBDBEnv, sig: signal.Signals, caplog
):
    env.statement_timeout_s = 30
    env.reset(task(env, "2"))
    assert env._worker is not None
    pid = env._worker.pid
    threading.Timer(0.3, os.kill, (pid, sig)).start()
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="memrl_bench.envs.llb_db"):
        observation, reward, done, info = env.step(f"SQL: {ENDLESS}")
    assert time.monotonic() - start < 10 and done and reward == 0.0
    assert info == {"success": False, "status": "env_limit", "detail": f"the SQL worker died ({sig.name})"}
    assert observation == f"The episode ended: the SQL worker died ({sig.name})."
    assert [r.getMessage() for r in caplog.records] == [
        f"llb_db/2: the SQL worker died ({sig.name}); the episode ends with status env_limit, the next one gets a new SQL worker"
    ]
    assert gone(pid)  # reaped, not a zombie
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step("SQL: SELECT 1")
    assert play(env, "2", "SQL: SELECT name FROM staff WHERE team = 'blue'", "COMMIT")["success"]
    assert env._worker is not None and env._worker.pid != pid


def test_memory_limit_of_the_worker(env: LLBDBEnv):
    env.worker_memory_mb = 64
    harness_before = resource_maxrss()
    env.reset(task(env, "3"))
    observation, _, done, info = env.step(f"SQL: {MEMORY_HOG}")
    assert done and info["status"] == "env_limit" and info["detail"] == "the SQL worker ran out of memory (limit 64 MiB)"
    assert resource_maxrss() - harness_before < 32 << 10  # KiB: the 2 GB went nowhere near the harness
    assert play(env, "3", "SQL: UPDATE staff SET salary = salary + 10 WHERE team = 'red'", "COMMIT")["success"]


def test_a_result_past_the_reply_cap_ends_the_episode_with_env_limit(env: LLBDBEnv):
    env.reset(task(env, "2"))
    forty_megabytes = (
        "SELECT randomblob(10000000) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 4) SELECT x FROM c)"
    )
    observation, _, done, info = env.step(f"SQL: {forty_megabytes}")  # 80 MB of hex on the wire
    assert (
        done
        and info["status"] == "env_limit"
        and observation == f"The episode ended: the SQL worker's reply exceeded {MAX_REPLY_BYTES >> 20} MiB."
    )
    assert play(env, "2", "SQL: SELECT name FROM staff WHERE team = 'blue'", "COMMIT")["success"]


def test_an_error_message_as_long_as_the_statement_makes_it_is_cut_as_a_result_is(env: LLBDBEnv):
    """61b: SQLite copies the statement's text into some error messages; a 70-character statement made a 9,000,031
    character observation, sent to the model at every later step. An error is cut at `max_output_chars` as a result is."""
    env.reset(task(env, "2"))
    observation, _, done, _ = env.step("SQL: SELECT json_extract('{}', 'x' || printf('%.*c', 200000, 'a'))")
    assert not done and observation.startswith("Error: ") and observation.endswith("\n... (output cut)")
    assert len(observation) == env.max_output_chars + len("\n... (output cut)")
    observation, *_ = env.step("SQL: SELECT json_extract('{}', 'x')")  # a short one whole
    assert observation.startswith("Error: ") and not observation.endswith("(output cut)")


def test_a_result_of_more_values_than_the_cap_ends_the_episode_with_env_limit(env: LLBDBEnv):
    """60b: 10,001 rows of 2,000 zeros are 60 MB of JSON, under the byte cap, and 300 MB of Python objects once parsed in
    the harness. A reply of more values than MAX_REPLY_VALUES is a limit: the worker never sends the rows."""
    env.reset(task(env, "2"))
    zeros = ", ".join(["0"] * 200)  # 10,001 rows x 200 columns: 2,000,200 values, 6 MB of JSON
    wide = f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) SELECT {zeros} FROM c"
    observation, _, done, info = env.step(f"SQL: {wide}")
    assert done and info["status"] == "env_limit", info
    assert observation == f"The episode ended: the SQL worker's reply exceeded {MAX_REPLY_VALUES:,} values."
    assert play(env, "2", "SQL: SELECT name FROM staff WHERE team = 'blue'", "COMMIT")["success"]


def resource_maxrss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_cpu_limit():
    """The CPU limit holds when the statement's own timer does not stop it (here: a 1000 s timer)."""
    worker = SQLWorker(256)
    try:
        worker.reset(TABLE, 5)
        start = time.monotonic()
        with pytest.raises(WorkerLimit, match=r"^the SQL worker reached its CPU-time limit \(1 s\)$"):
            worker.call({"op": "run", "sql": ENDLESS, "timeout_s": 1000, "max_rows": 1}, cpu_s=1, wall_s=60)
        assert time.monotonic() - start < 30 and gone(worker.pid) and not worker.alive()
    finally:
        worker.close()


def test_a_worker_that_stops_answering_is_killed_at_the_wall_clock_limit():
    worker = SQLWorker(256)
    try:
        worker.reset(TABLE, 5)
        os.kill(worker.pid, signal.SIGSTOP)  # it uses no CPU, so only the harness's clock can end it
        start = time.monotonic()
        with pytest.raises(WorkerLimit, match=r"^the SQL worker reached its wall-clock limit \(1 s\)$"):
            worker.call({"op": "run", "sql": "SELECT 1", "timeout_s": 1, "max_rows": 1}, cpu_s=1, wall_s=1)
        assert 1 <= time.monotonic() - start < 5 and gone(worker.pid)
    finally:
        worker.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker gives up root only when it has it")
def test_a_worker_started_as_root_runs_as_nobody_with_its_limits_and_no_environment():
    worker = SQLWorker(256)
    try:
        status = Path(f"/proc/{worker.pid}/status").read_text()
        assert re.search(r"^Uid:\s+65534\s+65534\s+65534\s+65534$", status, re.MULTILINE), status
        assert re.search(r"^Groups:\s*$", status, re.MULTILINE)
        limits = Path(f"/proc/{worker.pid}/limits").read_text()
        for line in (r"Max address space\s+268435456\s+268435456", r"Max processes\s+0\s+0", r"Max core file size\s+0\s+0"):
            assert re.search(line, limits), limits
        assert Path(f"/proc/{worker.pid}/environ").read_bytes() == b""
    finally:
        worker.close()


# What a SQLite bug reached by the worker's SQL could try next, each as its own step: read a host file, connect out, run a
# program, write a file; each prints the error it met (or "done").
BREAKOUT = """
import ctypes, os, socket, subprocess, sys
from memrl_bench.envs.sqlite_worker import filter_system_calls
libc = ctypes.CDLL(None, use_errno=True)
def shared_memory():
    segment = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    if segment < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    libc.shmctl(segment, 0, None)  # IPC_RMID: made without the filter, removed at once
filter_system_calls(bytes.fromhex(sys.argv[1]))
for name, step in (
    ("read", lambda: open("/etc/hostname").read()),
    ("connect", lambda: socket.create_connection(("127.0.0.1", 9), timeout=1)),
    ("program", lambda: subprocess.run(["/bin/true"])),
    ("write", lambda: open("/tmp/never-written-by-a-filtered-worker", "w")),
    ("signal", lambda: os.kill(os.getppid(), 0)),
    ("memfd", lambda: os.memfd_create("x")),
    ("ipc", shared_memory),
):
    try:
        step()
        print(name, "done")
    except OSError as err:
        print(name, err.errno)
"""


def test_the_workers_system_calls_open_no_file_socket_or_program():
    """The SQL worker has no namespaces of its own; a SQLite bug its SQL reached could read the host's world-readable files
    into a result, connect out, start a program, or signal other runs' workers and programs (nobody's, as it is)
    (RELIABILITY, "Still not defended", before 2026-12-06). A seccomp filter
    loaded before the worker says ready refuses them all, EPERM, while every LLB-DB test's SQL still runs."""
    from memrl_bench.envs.sandbox.seccomp import sql_worker_filter

    program = sql_worker_filter()
    if program is None:
        pytest.skip("libseccomp is missing here (Debian: libseccomp2): the SQL worker runs without its system-call filter")
    worker = SQLWorker(256)
    try:
        assert re.search(r"^Seccomp:\s+2$", Path(f"/proc/{worker.pid}/status").read_text(), re.MULTILINE)
        worker.reset(TABLE, 5)
        assert worker.run("SELECT COUNT(*), random() IS NOT NULL FROM staff", 5, 10)[1] == [(len(TABLE["row_list"]), 1)]
    finally:
        worker.close()
    done = subprocess.run([sys.executable, "-c", BREAKOUT, program.hex()], capture_output=True, text=True, timeout=60)
    steps = ("read", "connect", "program", "write", "signal", "memfd", "ipc")  # 44b: signals, memfd, System V IPC too
    assert done.stdout.split("\n")[:7] == [f"{step} 1" for step in steps], done.stdout + done.stderr
    assert not Path("/tmp/never-written-by-a-filtered-worker").exists()


def test_the_worker_ends_when_the_harness_does():
    script = (
        "import os, threading, time\n"
        "from memrl_bench.envs.sqlite_worker import SQLWorker\n"
        "idle, busy = SQLWorker(256), SQLWorker(256)\n"
        f"busy.reset({TABLE!r}, 1)\n"
        f"threading.Thread(target=busy.run, args=({ENDLESS!r}, 1, 1), daemon=True).start()\n"
        "time.sleep(0.3)\n"
        "print(idle.pid, busy.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2, done.stderr
    deadline = time.monotonic() + 10  # the busy one ends its statement at its 1 s limit first
    while not all(gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(gone(p) for p in pids)


def test_cells_reach_the_observation_as_sqlite_gave_them(env: LLBDBEnv):
    env.reset(task(env, "2"))
    observation = env.step("SQL: SELECT x'00ff', 1e999, -1e999, 0.1 + 0.2, 9223372036854775807, NULL, 'é\"''\\n', ''")[0]
    assert observation.splitlines()[1] == repr(
        (b"\x00\xff", float("inf"), float("-inf"), 0.1 + 0.2, 9223372036854775807, None, "é\"'\\n", "")
    )


# ---- one whole run -------------------------------------------------------------------------

HOSTILE_STEPS = [
    *FTS3_POINTER_TRICK,
    "PRAGMA hard_heap_limit=120000",
    "PRAGMA temp_store_directory='/tmp'",
    "DROP TABLE {table}",
    RECURSIVE_VIEW.replace("staff", "{table}"),
]


FIRST_ASKED: list[str] = []  # tables of the run's episodes, in the order they first reached their last step


def hostile_reply(messages: list[dict]) -> str:
    """Findings 1-3 in order, then COMMIT (the view is checked) or a statement past the
    worker's memory (every other episode, by the order episodes first ask)."""
    prompt = messages[-1]["content"]
    table = re.findall(r"Table (\w+)\(", prompt)[0]
    step = len(re.findall(r"^> ", prompt, re.MULTILINE))
    if step < len(HOSTILE_STEPS):
        return f"Think: try it.\nAction: SQL: {HOSTILE_STEPS[step].format(table=table)}"
    if table not in FIRST_ASKED:
        FIRST_ASKED.append(table)
    return "Think: done.\nAction: COMMIT" if FIRST_ASKED.index(table) % 2 else f"Think: more.\nAction: SQL: {MEMORY_HOG}"


@pytest.mark.skipif(not SHARED.exists(), reason=f"shared LLB data not at {SHARED}")
def test_a_run_answered_with_hostile_sql_completes(tmp_path: Path):
    from tests.fault_server import FaultServer

    root = Path(__file__).resolve().parents[2]
    environment = {**os.environ, "OPENAI_API_KEY": "test-key-not-a-secret", "MEMRL_BENCH_LLB_DIR": str(SHARED)}
    with FaultServer(reply=hostile_reply) as server:
        command = [
            sys.executable, (
                "-m"
            ), (
                "memrl_bench"
            ), (
                f"results_dir={tmp_path}"
            ), (
                "experiment_name=hostile"
            ), (
                "env=llb_db"
            ), (
                "env.tasks_per_split=3"
            ),
            "env.worker_memory_mb=64", "method=none", "llm=openai", f"llm.base_url={server.base_url}", "llm.model=m", "llm.cache_mode=off",
            "llm.max_concurrency=2", "embedder=openai", f"embedder.base_url={server.base_url}", "embedder.model=e", "actor.max_steps=8",
            "protocol.epochs=1", "protocol.batch_size=3", "protocol.validate_every_epoch=false", "progress=false",
        ]  # fmt: skip
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, env=environment, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [folder] = [p.parent for p in tmp_path.glob("hostile/*/episodes.jsonl")]
    assert (folder / "COMPLETE").exists()
    log = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    assert len(log) == 6
    for episode in log:
        observations = [t["observation"] for t in episode["turns"]]
        assert not episode["success"] and observations[:4] == [
            "Error: not authorized to use function: fts3_tokenizer",
            "Error: not authorized",
            "Error: not authorized",
            "Error: not authorized",
        ]
        if episode["status"] == "env_limit":
            assert observations[-1] == "The episode ended: the SQL worker ran out of memory (limit 64 MiB)."
            assert (
                f"{episode['task_id']}: the SQL worker ran out of memory (limit 64 MiB)" in done.stdout
            )  # the run's log lines (Hydra's console)
        else:
            assert episode["status"] == "ok" and observations[-1] == "The answer is wrong." and len(observations) == len(HOSTILE_STEPS) + 1
    assert {e["status"] for e in log} == {"ok", "env_limit"}
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["status_counts"]["env_limit"] == sum(e["status"] == "env_limit" for e in log)
