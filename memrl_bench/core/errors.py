"""InputError, the base of every error that is the user's input (a config value, a file, a run
folder): the CLI ends with its one line and exit code 2; and SQLite's errors on a file, or a file's schema the
harness did not write, as such an error. Its own module, below config and the registry: config checks each part's settings through
the registry, whose errors are input errors too."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class InputError(Exception):
    """The input is wrong (a config value, a file, a run folder): the CLI ends with its one line and exit code 2.

    Every error of that kind, in whichever module it arises, derives from this class.
    """


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
        raise error(f"{path}: {what} cannot be used ({err}); move it away to start a new one, or {remedy}") from None
    except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
        # UnicodeDecodeError: SQLite's message quoted damaged bytes, which Python cannot decode (the thirty-first round)
        reason = err if isinstance(err, sqlite3.DatabaseError) else "damaged: not UTF-8"
        raise error(f"{path}: {what} cannot be used ({reason}); move it away to start a new one, or {remedy}") from None


def refuse_a_foreign_schema(
    db: sqlite3.Connection, tables: tuple[str, ...], error: type[InputError], path: Path, what: str, remedy: str
) -> None:
    """`error` unless the file holds `tables` alone, as plain tables (their automatic indexes, SQLite's statistics): a
    view, a trigger, a virtual table or an index of its own runs SQL the file chose on every read or write (a trigger with
    an endless recursive query stalled a run for good, Ctrl-C included, and so did a view in a shipped cache's place: 45b)."""
    with sqlite_errors_as(error, path, what, remedy):
        rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    for kind, name, table, sql in rows:
        plain = kind == "table" and name in tables and str(sql).lstrip()[:12].upper() == "CREATE TABLE"
        if not (
            plain or (kind == "index" and sql is None and table in tables) or (kind == "table" and str(name).startswith("sqlite_stat"))
        ):
            raise error(
                f"{path}: {what} holds a {str(kind)[:20]} {str(name)[:60]!r}, which the harness never writes (it could run SQL of "
                f"the file's on every read); move it away to start a new one, or {remedy}"
            )


def resolved(path: str | Path) -> Path:
    """`path` made absolute, its links followed; a link that leads back to itself is an InputError naming it (pathlib
    raises RuntimeError for it in Python 3.11: a traceback at every path a user gives, the thirty-fourth round)."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError) as err:
        raise InputError(f"{path}: its symbolic links lead back to themselves ({err}); give a path that exists") from None
