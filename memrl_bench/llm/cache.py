"""An SQLite cache of chat completions, shared safely by several processes.

The key is the sha256 of the model identity (without its volatile parts, such as
the port of a local server), the messages, the generation settings and the
`sample_index`, so k samples of one prompt at temperature > 0 stay k entries.
The database runs in WAL mode: readers never block the writer, and concurrent
writers from several processes wait for each other instead of failing.

Each entry carries the sha256 of its key and content, checked on every read: an
entry that was edited or damaged is reported (one line naming the file) and
computed again, never served. A file that is not a readable SQLite cache raises
CacheError naming it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import sqlite3
import sys
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from memrl_bench.core.errors import InputError, refuse_a_foreign_schema, sqlite_errors_as, table_forms

CacheMode = Literal["read_write", "read_only", "off"]
CACHE_MODES: tuple[str, ...] = get_args(CacheMode)

# Identity fields that change between runs of the same model without changing its answers:
# a local server's port, its threads, and its context (sized from the memory of the machine;
# a prompt that fits is answered the same, and one that does not is never cached).
VOLATILE_IDENTITY_KEYS = ("base_url_host", "threads", "batch_threads", "poll", "ctx_size")

# the columns of the first version's responses table, and those versions since added (checksums, then the size of
# cut completions): a cache written by an older version lacks the latter until it is opened for writing
_FIRST_COLUMNS = (
    "key TEXT PRIMARY KEY",
    "text TEXT NOT NULL",
    "finish_reason TEXT",
    "prompt_tokens INTEGER NOT NULL",
    "completion_tokens INTEGER NOT NULL",
    "created REAL NOT NULL",
)
_ADDED_COLUMNS = (("checksum", "TEXT"), ("dropped_chars", "INTEGER NOT NULL DEFAULT 0"))
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS responses ({', '.join([*_FIRST_COLUMNS, *(' '.join(c) for c in _ADDED_COLUMNS)])}); "
    "CREATE TABLE IF NOT EXISTS token_counts (key TEXT PRIMARY KEY, tokens INTEGER NOT NULL, checksum TEXT NOT NULL)"
)


# what a cache any version wrote holds: the tables as made now, and the first made then widened
_TABLES = table_forms(
    tuple(_SCHEMA.split(";")),
    (
        f"CREATE TABLE responses ({', '.join(_FIRST_COLUMNS)})",
        *(f"ALTER TABLE responses ADD COLUMN {column} {definition}" for column, definition in _ADDED_COLUMNS),
    ),
)
_REMEDY = "set llm.cache_mode=off"


class CacheError(InputError, RuntimeError):
    """The response cache file cannot be used; the message names it."""


@dataclass(frozen=True)
class CachedResponse:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    dropped_chars: int = 0  # of the server's answer, past the cap (memrl_bench.llm.MIN_COMPLETION_CHARS)


def cache_key(identity: dict[str, Any], messages: list[dict[str, Any]], settings: dict[str, Any], sample_index: int) -> str:
    """The sha256 of everything that determines a completion."""
    stable_identity = {k: v for k, v in identity.items() if k not in VOLATILE_IDENTITY_KEYS}
    material = {"identity": stable_identity, "messages": messages, "settings": settings, "sample_index": sample_index}
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def count_key(identity: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """The sha256 of what determines a prompt's token count: the model and the messages."""
    stable_identity = {k: v for k, v in identity.items() if k not in VOLATILE_IDENTITY_KEYS}
    return hashlib.sha256(
        json.dumps(
            {"identity": stable_identity, "messages": messages, "count": "prompt_tokens"}, sort_keys=True, ensure_ascii=False
        ).encode()
    ).hexdigest()


def entry_checksum(key: str, response: CachedResponse) -> str:
    """The sha256 of an entry's key and content."""
    material = [key, response.text, response.finish_reason, response.prompt_tokens, response.completion_tokens]
    if response.dropped_chars:  # entries of uncut completions keep the checksums they were written with
        material.append(response.dropped_chars)
    return hashlib.sha256(json.dumps(material, ensure_ascii=False).encode()).hexdigest()


def _count_checksum(key: str, tokens: int) -> str:
    return hashlib.sha256(json.dumps([key, tokens]).encode()).hexdigest()


class ResponseCache:
    """`get` and `put` by key; mode `off` never reads, `read_only` never writes."""

    def __init__(self, path: str | Path, mode: str = "read_write", busy_timeout_s: float = 60.0):
        if mode not in CACHE_MODES:
            raise ValueError(f"llm cache mode {mode!r} is not one of {', '.join(CACHE_MODES)}")
        self.mode = mode
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if mode == "off":
            return
        if mode == "read_only" and not self.path.exists():
            raise FileNotFoundError(
                errno.ENOENT, f"llm cache {self.path} does not exist (cache mode read_only needs an existing cache)", str(self.path)
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._warned_unchecked = False
        refuse_a_foreign_schema(self.path, _TABLES, CacheError, "the LLM response cache", _REMEDY)
        with self._named_errors():
            # Autocommit: every put is its own short transaction.
            self._db = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
            if mode == "read_write":
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
            for column, definition in _ADDED_COLUMNS:
                if mode == "read_write" and column not in columns:
                    try:
                        self._db.execute(f"ALTER TABLE responses ADD COLUMN {column} {definition}")
                    except sqlite3.OperationalError as err:
                        if "duplicate column" not in str(err):  # another process added it meanwhile
                            raise
            self._checksum_column = "checksum" if "checksum" in columns or mode == "read_write" else "NULL"
            self._dropped_column = "dropped_chars" if "dropped_chars" in columns or mode == "read_write" else "0"

    def _named_errors(self) -> AbstractContextManager[None]:
        return sqlite_errors_as(CacheError, self.path, "the LLM response cache", _REMEDY)

    def get(self, key: str) -> CachedResponse | None:
        if self._db is None:
            return None
        with self._lock, self._named_errors():
            try:
                row = self._db.execute(
                    f"SELECT text, finish_reason, prompt_tokens, completion_tokens, {self._dropped_column}, {self._checksum_column} FROM "
                    "responses WHERE key = ?",
                    (key,),
                ).fetchone()
            except sqlite3.OperationalError as err:
                if "no such table" in str(err):  # a read-only cache that was never written
                    return None
                raise
        if row is None:
            return None
        response = CachedResponse(*row[:5])
        # a cell of another type (SQLite keeps any in any column: a BLOB ended the run in json's TypeError, in the text and in
        # the token counts, 41b) is damage too
        typed = (
            isinstance(response.text, str)
            and isinstance(response.finish_reason, (str, type(None)))
            and all(isinstance(n, int) for n in (response.prompt_tokens, response.completion_tokens))
            and isinstance(response.dropped_chars, (int, type(None)))
        )
        if not typed or row[5] != entry_checksum(key, response):
            self._report_unchecked(key, written_before_checksums=row[5] is None)
            return None
        return response

    def _report_unchecked(self, key: str, written_before_checksums: bool) -> None:
        if not written_before_checksums:
            print(
                f"memrl-bench: warning: {self.path}: the entry {key[:12]} does not match its checksum (edited or damaged); computing it "
                "again",
                file=sys.stderr,
            )
        elif not self._warned_unchecked:
            self._warned_unchecked = True
            print(f"memrl-bench: warning: {self.path}: entries written before entries had checksums are computed again", file=sys.stderr)

    def put(self, key: str, response: CachedResponse) -> None:
        if self._db is None or self.mode != "read_write":
            return
        with self._lock, self._named_errors():
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, text, finish_reason, prompt_tokens, completion_tokens, created, checksum, "
                "dropped_chars) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    response.text,
                    response.finish_reason,
                    response.prompt_tokens,
                    response.completion_tokens,
                    time.time(),
                    entry_checksum(key, response),
                    response.dropped_chars,
                ),
            )

    def get_count(self, key: str) -> int | None:
        """A prompt's cached token count (None if absent, or if it fails its checksum)."""
        if self._db is None:
            return None
        with self._lock, self._named_errors():
            try:
                row = self._db.execute("SELECT tokens, checksum FROM token_counts WHERE key = ?", (key,)).fetchone()
            except sqlite3.OperationalError as err:
                if "no such table" in str(err):  # a read-only cache written before token counts were kept
                    return None
                raise
        if row is None or row[1] != _count_checksum(key, row[0]):
            return None
        return int(row[0])

    def put_count(self, key: str, tokens: int) -> None:
        if self._db is None or self.mode != "read_write":
            return
        with self._lock, self._named_errors():
            self._db.execute("INSERT OR REPLACE INTO token_counts VALUES (?, ?, ?)", (key, tokens, _count_checksum(key, tokens)))

    def __len__(self) -> int:
        if self._db is None:
            return 0
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
