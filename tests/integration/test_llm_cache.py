"""The SQLite response cache: keys, modes, the client integration, and several writer processes."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import sqlite3
from pathlib import Path

import pytest

from memrl_bench.llm.cache import CachedResponse, CacheError, ResponseCache, cache_key, entry_checksum
from memrl_bench.llm.client import OpenAIChatModel
from tests.fault_server import FaultServer

REPO = Path(__file__).resolve().parents[2]

IDENTITY = {"model": "m", "served_model": "m-q4", "base_url_host": "127.0.0.1:4000"}
MESSAGES = [{"role": "user", "content": "hi"}]
SETTINGS = {"temperature": 0.7, "seed": 0, "max_tokens": 16}


def test_key_separates_what_matters_and_ignores_the_port():
    base = cache_key(IDENTITY, MESSAGES, SETTINGS, 0)
    assert cache_key({**IDENTITY, "base_url_host": "127.0.0.1:4999"}, MESSAGES, SETTINGS, 0) == base
    others = [
        cache_key(IDENTITY, MESSAGES, SETTINGS, 1),
        cache_key({**IDENTITY, "served_model": "other"}, MESSAGES, SETTINGS, 0),
        cache_key(IDENTITY, [{"role": "user", "content": "hi!"}], SETTINGS, 0),
        cache_key(IDENTITY, MESSAGES, {**SETTINGS, "temperature": 0.0}, 0),
    ]
    assert len({base, *others}) == 5


def test_put_then_get_roundtrip(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", CachedResponse("", "length", 12, 0))
    assert cache.get("k") == CachedResponse("", "length", 12, 0)
    assert cache.get("missing") is None and len(cache) == 1
    mode = sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_bad_mode_and_missing_read_only_file(tmp_path):
    with pytest.raises(ValueError, match="llm cache mode 'rw' is not one of read_write, read_only, off"):
        ResponseCache(tmp_path / "c.sqlite", "rw")
    with pytest.raises(FileNotFoundError, match="c.sqlite does not exist"):
        ResponseCache(tmp_path / "c.sqlite", "read_only")


@pytest.fixture
def server():
    with FaultServer() as s:
        yield s


def run_chats(model: OpenAIChatModel, calls: list[tuple[str, int]]):
    async def go():
        return [await model.chat([{"role": "user", "content": text}], sample_index=index) for text, index in calls]

    return asyncio.run(go())


def test_read_write_stores_and_hits_without_a_request(server, tmp_path):
    model = OpenAIChatModel(server.base_url, "m", cache=ResponseCache(tmp_path / "c.sqlite"))
    first, second = run_chats(model, [("hello", 0), ("hello", 0)])
    assert server.chat_requests() == 1
    assert not first.cached and second.cached
    assert second.text == first.text and second.finish_reason == first.finish_reason
    assert (second.usage.cache_hits, second.usage.latency_s, second.usage.calls) == (1, 0.0, 1)
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (first.usage.prompt_tokens, first.usage.completion_tokens)


def test_sample_index_separates_entries(server, tmp_path):
    model = OpenAIChatModel(server.base_url, "m", cache=ResponseCache(tmp_path / "c.sqlite"))
    completions = run_chats(model, [("hello", 0), ("hello", 1), ("hello", 1)])
    assert server.chat_requests() == 2
    assert [c.cached for c in completions] == [False, False, True]
    assert len(model.cache) == 2


def test_cache_survives_a_new_server_port(tmp_path):
    with FaultServer() as first_server:
        run_chats(OpenAIChatModel(first_server.base_url, "m", cache=ResponseCache(tmp_path / "c.sqlite")), [("hello", 0)])
    with FaultServer() as second_server:
        (completion,) = run_chats(OpenAIChatModel(second_server.base_url, "m", cache=ResponseCache(tmp_path / "c.sqlite")), [("hello", 0)])
        assert completion.cached and second_server.chat_requests() == 0


def test_read_only_reads_but_never_writes(server, tmp_path):
    path = tmp_path / "c.sqlite"
    run_chats(OpenAIChatModel(server.base_url, "m", cache=ResponseCache(path)), [("known", 0)])
    reader = OpenAIChatModel(server.base_url, "m", cache=ResponseCache(path, "read_only"))
    known, new, new_again = run_chats(reader, [("known", 0), ("new", 0), ("new", 0)])
    assert known.cached and not new.cached and not new_again.cached
    assert server.chat_requests() == 3  # one to fill the cache, two for the uncached prompt
    assert len(ResponseCache(path)) == 1


def test_off_never_reads(server, tmp_path):
    path = tmp_path / "c.sqlite"
    run_chats(OpenAIChatModel(server.base_url, "m", cache=ResponseCache(path)), [("known", 0)])
    model = OpenAIChatModel(server.base_url, "m", cache=ResponseCache(path, "off"))
    (completion,) = run_chats(model, [("known", 0)])
    assert not completion.cached and server.chat_requests() == 2


def _write_entries(path: str, worker: int, count: int, start_together) -> None:
    cache = ResponseCache(path)
    start_together.wait(timeout=60)  # a worker that died must not leave the others waiting for good
    for i in range(count):
        cache.put(f"w{worker}-{i}", CachedResponse(f"text {worker} {i}", "stop", worker, i))
    cache.close()


def test_concurrent_writes_from_several_processes(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    # forkserver: fork from a fresh process, once; forked from this one, a child could inherit a lock another thread held
    # (the test runner's, a server's) and wait on it for good (seen beside the embedder's tests)
    context = multiprocessing.get_context("forkserver")
    start_together = context.Barrier(4)
    workers = [context.Process(target=_write_entries, args=(path, w, 50, start_together)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    cache = ResponseCache(path, "read_only")
    assert len(cache) == 200
    for w in range(4):
        for i in range(50):
            assert cache.get(f"w{w}-{i}") == CachedResponse(f"text {w} {i}", "stop", w, i)


def test_an_edited_entry_is_reported_and_computed_again_never_served(server, tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    model = OpenAIChatModel(server.base_url, "m", cache=ResponseCache(path))
    (original,) = run_chats(model, [("hello", 0)])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE responses SET text = 'Answer: A'")  # an edit that keeps the row well-formed
    (again,) = run_chats(OpenAIChatModel(server.base_url, "m", cache=ResponseCache(path)), [("hello", 0)])
    assert not again.cached and again.text == original.text and server.chat_requests() == 2
    warning = capsys.readouterr().err
    assert (
        warning.count("\n") == 1
        and f"{path}: the entry " in warning
        and "does not match its checksum (edited or damaged); computing it again" in warning
    )
    (third,) = run_chats(OpenAIChatModel(server.base_url, "m", cache=ResponseCache(path)), [("hello", 0)])
    assert third.cached and third.text == original.text  # the recomputed entry replaced the edited one


@pytest.mark.parametrize("column", ["text", "finish_reason", "prompt_tokens", "completion_tokens", "dropped_chars"])
def test_a_cell_of_another_type_is_damage_computed_again(tmp_path, capsys, column):
    """The twenty-first independent round: a text or finish_reason cell holding a BLOB (SQLite keeps any type in any
    column) ended the next run in json's TypeError traceback, from the checksum; the thirty-eighth (41b): a token count's
    cell did too."""
    path = tmp_path / "c.sqlite"
    ResponseCache(path).put("a", CachedResponse("Answer: A", "stop", 3, 2))
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE responses SET {column} = CAST({column} AS BLOB)")
    assert ResponseCache(path).get("a") is None
    assert "does not match its checksum (edited or damaged); computing it again" in capsys.readouterr().err


def test_a_damaged_model_hash_cache_is_computed_again(tmp_path, monkeypatch):
    """The same round: an entry of ${MEMRL_BENCH_CACHE}/sha256.json that is no object, or the file nested 100,000 deep,
    ended every llm=local run in a traceback; a hash cache is computed again."""
    import hashlib

    from memrl_bench.llm.catalogue import file_sha256

    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    model = tmp_path / "m.gguf"
    model.write_bytes(b"weights")
    hashes = tmp_path / "cache" / "sha256.json"
    for damage in (f'{{"{model}": "not-an-entry"}}', "[" * 100_000):
        hashes.write_text(damage)
        assert file_sha256(model) == hashlib.sha256(b"weights").hexdigest()
    # 48b: an entry of the file's own stamp with no hash, or one that is no hash: a KeyError, or 'None' as the checksum
    from memrl_bench.llm.catalogue import _stamp

    for forged in ({}, {"sha256": None}, {"sha256": {"x": 1}}, {"sha256": 1e308}, {"sha256": "F" * 64}, {"sha256": "0" * 63}):
        hashes.write_text(json.dumps({str(model.resolve()): {**_stamp(model), **forged}}))
        assert file_sha256(model) == hashlib.sha256(b"weights").hexdigest(), forged
    # the thirty-sixth round: a FIFO there hung the run, a link to /dev/zero ended it in a MemoryError; both are no cache
    for make in (lambda: os.mkfifo(hashes), lambda: hashes.symlink_to("/dev/zero")):
        hashes.unlink()
        make()
        assert file_sha256(model) == hashlib.sha256(b"weights").hexdigest()
        assert hashes.is_file() and not hashes.is_symlink()  # written again as the cache it is


def test_entries_from_before_checksums_are_computed_again_with_one_warning(tmp_path, capsys):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the schema before entries had checksums
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, finish_reason TEXT, prompt_tokens INTEGER NOT NULL, "
            "completion_tokens INTEGER NOT NULL, created REAL NOT NULL)"
        )
        db.executemany("INSERT INTO responses VALUES (?, 'old', 'stop', 1, 1, 0)", [("a",), ("b",)])
    cache = ResponseCache(path)
    assert cache.get("a") is None and cache.get("b") is None
    assert capsys.readouterr().err.count("entries written before entries had checksums are computed again") == 1
    cache.put("a", CachedResponse("new", "stop", 1, 1))
    assert cache.get("a") == CachedResponse("new", "stop", 1, 1)


def test_a_cut_completion_is_cached_cut_with_the_size_dropped(tmp_path):
    """A server ignoring max_tokens: the cache keeps the first completion_char_cap characters and
    the size of the rest (under the entry's checksum), so a replay is the run it replays."""
    from memrl_bench.llm import completion_char_cap

    long = "Answer: B " + "y" * 300_000
    path = tmp_path / "c.sqlite"
    with FaultServer(reply=lambda messages: long) as server:
        model = OpenAIChatModel(server.base_url, "m", cache=ResponseCache(path), generation={"max_tokens": 16})
        (live,) = run_chats(model, [("hello", 0)])
        (replayed,) = run_chats(model, [("hello", 0)])
        assert server.chat_requests() == 1
    cap = completion_char_cap(16)
    assert cap == 65_536 and (live.text, live.finish_reason, live.dropped_chars) == (long[:cap], "length", len(long) - cap)
    assert replayed.cached and (replayed.text, replayed.finish_reason, replayed.dropped_chars) == (live.text, "length", live.dropped_chars)
    with sqlite3.connect(path) as db:
        (key,) = db.execute("SELECT key FROM responses").fetchone()
        db.execute("UPDATE responses SET dropped_chars = 1")  # the size edited: the entry no longer matches its checksum
    assert ResponseCache(path).get(key) is None


def test_a_cache_from_before_cut_completions_is_read_and_extended(tmp_path):
    path = tmp_path / "old.sqlite"
    entry = CachedResponse("old", "stop", 1, 1)
    with sqlite3.connect(path) as db:  # the schema before dropped_chars
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, finish_reason TEXT, prompt_tokens INTEGER NOT NULL, "
            "completion_tokens INTEGER NOT NULL, created REAL NOT NULL, checksum TEXT)"
        )
        db.execute("INSERT INTO responses VALUES ('a', 'old', 'stop', 1, 1, 0, ?)", (entry_checksum("a", entry),))
    assert ResponseCache(path, "read_only").get("a") == entry  # no column added by a reader
    cache = ResponseCache(path)
    assert cache.get("a") == entry
    cache.put("b", CachedResponse("cut", "length", 1, 1, dropped_chars=5))
    assert cache.get("b") == CachedResponse("cut", "length", 1, 1, dropped_chars=5)


@pytest.mark.parametrize("mode", ["read_write", "read_only"])
def test_a_garbled_cache_file_is_one_error_naming_it(tmp_path, mode):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"not a database at all\n" * 100)
    with pytest.raises(CacheError, match=f"{path}: the LLM response cache cannot be used .*move it away"):
        ResponseCache(path, mode).get("k")
    assert path.read_bytes() == b"not a database at all\n" * 100


# What a crafted cache file may hold besides its tables: each runs SQL of the file's on a read or a write (45b: a trigger and
# a view with an endless recursive query stalled runs for good, Ctrl-C included; here they do nothing, and are refused)
FOREIGN_OBJECTS = {
    "trigger": "CREATE TRIGGER t AFTER INSERT ON responses BEGIN SELECT 1; END",
    "view": "ALTER TABLE responses RENAME TO kept; CREATE VIEW responses AS SELECT * FROM kept",
    "index": "CREATE INDEX i ON responses(length(text))",
    "another table": "CREATE TABLE other (x)",
    # 46b: plain tables whose definitions run SQL: a CHECK on every write, a generated key on every lookup; SQLite's
    # statistics table (which SQLite reads as it loads the schema)
    "check": "DROP TABLE responses; CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, finish_reason TEXT, "
    "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, created REAL NOT NULL, checksum TEXT, "
    "dropped_chars INTEGER NOT NULL DEFAULT 0, CHECK (length(text) >= 0))",
    "generated key": "DROP TABLE responses; CREATE TABLE responses (k0 TEXT, key TEXT AS (k0) VIRTUAL, text TEXT NOT NULL, "
    "finish_reason TEXT, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, created REAL NOT NULL, "
    "checksum TEXT, dropped_chars INTEGER NOT NULL DEFAULT 0)",
    "statistics": "CREATE INDEX i ON responses(created); ANALYZE; DROP INDEX i",
}


def _one_entry(path: Path) -> None:
    """A cache of one entry, its connection closed: one left to the collector checkpointed the WAL into the file at a moment
    of its choosing, in the middle of a test comparing the file's bytes (3 of 180 tries)."""
    cache = ResponseCache(path)
    cache.put("k", CachedResponse("t", "stop", 1, 1))
    cache.close()


@pytest.mark.parametrize("mode", ["read_write", "read_only"])
@pytest.mark.parametrize("foreign", FOREIGN_OBJECTS)
def test_a_cache_file_holding_sql_of_its_own_is_refused_naming_it(tmp_path, foreign, mode):
    path = tmp_path / "c.sqlite"
    _one_entry(path)
    with sqlite3.connect(path) as db:
        db.executescript(FOREIGN_OBJECTS[foreign])
    db.close()
    before = path.read_bytes()
    with pytest.raises(CacheError, match=f"^{path}: the LLM response cache holds a .* that is not the harness's"):
        ResponseCache(path, mode)
    assert path.read_bytes() == before


def test_a_cache_whose_schema_runs_sql_as_it_loads_is_refused_in_its_time(tmp_path, monkeypatch):
    """46b: SQLite reads sqlite_stat1 as it loads a file's schema, before any check of it can run: a generated column there
    costing minutes ran in the harness's first statement (Python's sqlite3 ignores Ctrl-C, and no statement limit reaches
    into one call). The schema is read in a child process given its time (10 s; here 1 s)."""
    import time

    from memrl_bench.core import errors

    monkeypatch.setattr(errors, "SCHEMA_SECONDS", 1.0)
    path = tmp_path / "c.sqlite"
    _one_entry(path)
    costly = " + ".join(["instr(printf('%.*c', 600000, 'a'), printf('%.*c', 300000, 'a') || 'b')"] * 20)  # seconds each
    with sqlite3.connect(path) as db:
        db.executescript("CREATE INDEX i ON responses(created); ANALYZE; DROP INDEX i; CREATE TABLE zz (tbl, idx, s0)")
        version = db.execute("PRAGMA schema_version").fetchone()[0]
        db.execute("INSERT INTO zz VALUES ('responses', 'sqlite_autoindex_responses_1', '1 1')")
        db.execute("PRAGMA writable_schema=ON")
        db.execute("DELETE FROM sqlite_master WHERE name = 'sqlite_stat1'")
        db.execute(
            "UPDATE sqlite_master SET name = 'sqlite_stat1', tbl_name = 'sqlite_stat1', sql = ? WHERE name = 'zz'",
            (f"CREATE TABLE sqlite_stat1 (tbl, idx, s0, stat AS (substr({costly}, 1, 0) || s0) VIRTUAL)",),
        )
        db.execute(f"PRAGMA schema_version = {version + 1}")
    db.close()
    started = time.monotonic()
    with pytest.raises(CacheError, match=f"^{path}: the LLM response cache cannot be used \\(reading its schema took more than 1 s"):
        ResponseCache(path, "read_only")
    assert time.monotonic() - started < 10


def test_the_shipped_response_caches_are_the_harnesss_own():
    shipped = sorted(REPO.glob("results/*/llm_cache.sqlite"))
    assert shipped, "no shipped cache found under results/"
    for path in shipped:
        ResponseCache(path, "read_only")


def test_read_only_local_replays_from_the_cache_with_no_server_and_names_a_miss(server, tmp_path, monkeypatch):
    """llm=local with cache_mode=read_only: answers come from entries a live local server's run
    wrote (same identity), no server is started, and an uncached prompt or count stops the run."""
    from memrl_bench.llm import CacheMissError, local_server
    from memrl_bench.llm import catalogue as models
    from memrl_bench.llm.client import open_local
    from memrl_bench.llm.local_server import server_identity
    from tests.fault_server import MODEL_ID

    gguf = tmp_path / f"{MODEL_ID}.gguf"  # a llama.cpp server serves a .gguf path under its file stem
    gguf.write_bytes(b"GGUF" + bytes(64))
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "home"))
    cache_path = tmp_path / "c.sqlite"
    live = OpenAIChatModel(
        server.base_url,
        str(gguf),
        cache=ResponseCache(cache_path),
        identity_extra={**server_identity(gguf.name, 2), **models.checksum(str(gguf)), "threads": 1, "ctx_size": 4096},
    )
    (recorded,) = run_chats(live, [("hello", 0)])
    live.close()

    def no_server(*args, **kwargs):
        raise AssertionError("a replay must not start a server")

    monkeypatch.setattr(local_server.LocalLlamaServer, "start", no_server)
    cfg = {"name": "local", "model": str(gguf), "cache_mode": "read_only", "cache_path": str(cache_path), "max_concurrency": 2}
    with open_local(cfg) as replay:
        (again,) = run_chats(replay, [("hello", 0)])
        assert (again.text, again.cached, again.finish_reason) == (recorded.text, True, recorded.finish_reason)
        with pytest.raises(CacheMissError, match=str(cache_path)):
            run_chats(replay, [("a prompt the run never sent", 0)])
        with pytest.raises(CacheMissError, match="token count"):
            asyncio.run(replay.count_tokens([{"role": "user", "content": "hello"}]))
    assert server.chat_requests() == 1


def test_a_cache_another_process_holds_is_not_called_damaged(tmp_path):
    """A whole cache file locked by another writer: the error says so and does not advise moving it away."""
    path = tmp_path / "cache.sqlite"
    ResponseCache(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(CacheError) as error:
            cache = ResponseCache(path, busy_timeout_s=0.1)
            cache.put("k", CachedResponse("text", "stop", 1, 1))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "is held by another process" in str(error.value) and "move it away" not in str(error.value)
