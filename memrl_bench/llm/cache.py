"""An SQLite cache of chat completions, shared safely by several processes.

The key is the sha256 of the model identity (without its volatile parts, such as
the port of a local server), the messages, the generation settings and the
`sample_index`, so k samples of one prompt at temperature > 0 stay k entries.
The database runs in WAL mode: readers never block the writer, and concurrent
writers from several processes wait for each other instead of failing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

CacheMode = Literal["read_write", "read_only", "off"]
CACHE_MODES: tuple[str, ...] = get_args(CacheMode)

# Identity fields that change between runs of the same model (a local server's port).
VOLATILE_IDENTITY_KEYS = ("base_url_host",)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


@dataclass(frozen=True)
class CachedResponse:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


def cache_key(identity: dict[str, Any], messages: list[dict[str, Any]], settings: dict[str, Any], sample_index: int) -> str:
    """The sha256 of everything that determines a completion."""
    stable_identity = {k: v for k, v in identity.items() if k not in VOLATILE_IDENTITY_KEYS}
    material = {"identity": stable_identity, "messages": messages, "settings": settings, "sample_index": sample_index}
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


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
            raise FileNotFoundError(f"llm cache {self.path} does not exist (cache mode read_only needs an existing cache)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: every put is its own short transaction.
        self._db = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        if mode == "read_write":
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)

    def get(self, key: str) -> CachedResponse | None:
        if self._db is None:
            return None
        with self._lock:
            try:
                row = self._db.execute("SELECT text, finish_reason, prompt_tokens, completion_tokens FROM responses WHERE key = ?", (key,)).fetchone()
            except sqlite3.OperationalError as err:
                if "no such table" in str(err):  # a read-only cache that was never written
                    return None
                raise
        return CachedResponse(*row) if row else None

    def put(self, key: str, response: CachedResponse) -> None:
        if self._db is None or self.mode != "read_write":
            return
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                (key, response.text, response.finish_reason, response.prompt_tokens, response.completion_tokens, time.time()),
            )

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
