"""InputError, the base of every error that is the user's input (a config value, a file, a run
folder): the CLI ends with its one line and exit code 2; and SQLite's errors on a file, or a file's schema the
harness did not write, as such an error. Its own module, below config and the registry: config checks each part's settings through
the registry, whose errors are input errors too."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class InputError(Exception):
    """The input is wrong (a config value, a file, a run folder): the CLI ends with its one line and exit code 2.

    Every error of that kind, in whichever module it arises, derives from this class.
    """


_SQLITE_IOERR, _SQLITE_FULL = 10, 13  # SQLite's primary result codes (an extended code's low byte)


@contextmanager
def sqlite_errors_as(error: type[InputError], path: Path, what: str, remedy: str) -> Iterator[None]:
    """SQLite's errors on the file `path` (garbled, truncated, a full disk) as one `error` naming it;
    misuse of the connection (ProgrammingError) stays a bug."""
    try:
        yield
    except sqlite3.ProgrammingError:
        raise
    except sqlite3.OperationalError as err:
        if "locked" in str(err) or "busy" in str(err):  # a whole file another process holds, not a damaged one
            raise error(f"{path}: {what} is held by another process ({err}); wait for it to finish, or {remedy}") from None
        if getattr(err, "sqlite_errorcode", 0) & 0xFF in (_SQLITE_IOERR, _SQLITE_FULL):
            # the disk failed the file, not the file itself: an intact cache on a full disk was called unusable (61b)
            raise error(
                f"{path}: {what} could not be written or read ({err}): is its disk full? The file is kept as it is; "
                f"free space and run the command again, or {remedy}"
            ) from None
        raise error(f"{path}: {what} cannot be used ({err}); move it away to start a new one, or {remedy}") from None
    except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
        # UnicodeDecodeError: SQLite's message quoted damaged bytes, which Python cannot decode (the thirty-first round)
        reason = err if isinstance(err, sqlite3.DatabaseError) else "damaged: not UTF-8"
        raise error(f"{path}: {what} cannot be used ({reason}); move it away to start a new one, or {remedy}") from None


def _bare(sql: object) -> str:
    return "".join(str(sql).split())


def table_forms(*histories: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Each table's definition as SQLite stores it after each statement of each history (a CREATE, then the ALTERs that
    added columns over the versions), whitespace taken out: what a file the harness wrote holds."""
    forms: dict[str, set[str]] = {}
    for history in histories:
        db = sqlite3.connect(":memory:")
        for statement in history:
            db.execute(statement)
            for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"):
                forms.setdefault(name, set()).add(_bare(sql))
        db.close()
    return {name: frozenset(each) for name, each in forms.items()}


SCHEMA_SECONDS = 10.0  # reading a cache's schema takes milliseconds
# Prints a file's schema rows as JSON, or {"error": ...}: run in a child process, since SQLite runs SQL of the file's as
# it loads a schema (the generated columns of a table named sqlite_stat1: 46b) and no statement limit reaches into one call.
_READ_SCHEMA = """
import json, sqlite3, sys
try:
    db = sqlite3.connect(sys.argv[1], uri=True)
    print(json.dumps(db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()))
except (sqlite3.Error, UnicodeDecodeError) as err:
    print(json.dumps({"error": str(err)}))
"""


def refuse_a_foreign_schema(path: Path, tables: dict[str, frozenset[str]], error: type[InputError], what: str, remedy: str) -> None:
    """`error` unless the file at `path` (if any) holds its tables alone, each as the harness defines it (`table_forms`),
    with their automatic indexes: a view, a trigger, a virtual table, an index of its own, a CHECK or a generated column
    runs SQL the file chose on a read or a write (a trigger with an endless recursive query stalled a run for good, Ctrl-C
    included, and so did a view in a shipped cache's place: 45b; a generated key column or a CHECK, and sqlite_stat1's,
    which SQLite reads as it loads the schema: 46b). The schema is read in a child process given SCHEMA_SECONDS."""
    if not path.exists():
        return
    try:
        read = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _READ_SCHEMA, f"file:{urllib.parse.quote(str(path))}?mode=ro"],
            capture_output=True,
            timeout=SCHEMA_SECONDS,
            check=False,
        )
        rows = json.loads(read.stdout)
    except subprocess.TimeoutExpired:
        rows = {"error": f"reading its schema took more than {SCHEMA_SECONDS:.0f} s: SQL of the file's own?"}
    except ValueError:
        rows = {"error": f"its schema could not be read ({read.stderr.decode(errors='replace').strip()[-200:]})"}
    if isinstance(rows, dict):
        raise error(f"{path}: {what} cannot be used ({rows['error']}); move it away to start a new one, or {remedy}")
    for kind, name, table, sql in rows:
        if not (_bare(sql) in tables.get(name, ()) if kind == "table" else kind == "index" and sql is None and table in tables):
            raise error(
                f"{path}: {what} holds a {str(kind)[:20]} {str(name)[:60]!r} that is not the harness's (it could run SQL of the "
                f"file's on every read); move it away to start a new one, or {remedy}"
            )


def resolved(path: str | Path) -> Path:
    """`path` made absolute, its links followed; a link that leads back to itself is an InputError naming it (pathlib
    raises RuntimeError for it in Python 3.11: a traceback at every path a user gives, the thirty-fourth round)."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError) as err:
        raise InputError(f"{path}: its symbolic links lead back to themselves ({err}); give a path that exists") from None


def not_utf8(path: str | Path) -> str | None:
    """`path` as it can be shown (undecodable bytes as backslash escapes) if its name holds bytes of the file system's that
    are no UTF-8 (surrogate escapes, which the tables' text columns refuse), else None."""
    try:
        str(path).encode()
    except UnicodeEncodeError:
        return str(path).encode(errors="surrogateescape").decode(errors="backslashreplace")
    return None


def print_or_exit(text: str, program: str) -> None:
    """`text` on the standard output, flushed; one that cannot take it (a full device) ends in one line and exit 2."""
    try:
        print(text, flush=True)
    except OSError as err:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's flush at exit must not fail again
        print(f"{program}: error: the standard output: {err.strerror or err}", file=sys.stderr)
        sys.exit(2)
