"""LifelongAgentBench DB tasks (MemRL's "llb db"): SQL over one table, in SQLite in memory.

An episode builds the task's table (name, TEXT / INT columns, rows) in a fresh in-memory
SQLite database (stdlib `sqlite3`). Actions:
  SQL: <one statement>  run it; see the result rows (truncated) or how many rows changed.
                        A bare statement starting with a SQL keyword, or a ```sql block, counts too.
  ANSWER: <rows>        end the episode answering these rows: JSON ([["USA", 7], ...]),
                        Python-style tuples ("('USA', 7), ('France', 7)") or one bare value.
  COMMIT                end the episode.
Checking:
  Query tasks (the gold SQL is a SELECT): the answer is the rows given with ANSWER or, with
  COMMIT, the rows of the last statement the agent ran that returned rows. They must equal
  the rows of the gold SQL run on a fresh copy of the table: as a multiset unless the gold
  SQL has a top-level ORDER BY; integers exactly, other numbers within 1e-6 (relative or
  absolute); strings that read as numbers compare as numbers, text without surrounding blanks,
  NULL written NULL or None. The gold SQL also runs on a copy with the rows
  inserted in reverse order, and matching either result is right, so answers that hinge on
  unspecified tie order (LIMIT without ORDER BY, ties in ORDER BY) are not failed; except
  when the gold SQL skips rows (OFFSET) with no top-level ORDER BY: such a question names
  positions in the table's stored order ("10 entries starting from the 6th"), and on the
  reversed copy a query without the OFFSET would match (found by scripts/audit_llb_db.py).
  Modifying tasks (INSERT / UPDATE / DELETE): with COMMIT or ANSWER, the final table
  (column names, rows as a multiset) must equal the table after the gold SQL on a fresh copy,
  values as stored: text exactly, NULL only as NULL.
Why not LLB's own check: LLB compares with answers recorded on MySQL (the `direct` rows; an
MD5 of the table), where AVG rounds to 4 decimals and INT columns round updated values, so
a right query run here would fail it. The reference is the gold SQL on the engine the agent
uses; `reference_agreement()` counts how often it agrees with the recorded MySQL answers.
Tasks whose gold SQL fails in SQLite (MySQL-only syntax) are excluded and listed.
Safety: the agent's SQL and the check of its final table run in a worker process
(memrl_bench/envs/sqlite_worker.py) with memory, CPU-time and wall-time limits; its SQLite
refuses what no task needs (ATTACH and so VACUUM, PRAGMA but schema introspection, virtual
tables, fts3_tokenizer, load_extension: "not authorized"), a statement is interrupted at the
time limit. The final table must be a real table of the main database (a view of its name is
a wrong answer). A worker that crashes or hits a limit ends the episode with status
"env_limit" and a line naming the task; the next episode gets a new worker. The reference
(the task's own gold SQL, trusted as the data are) runs in the harness on a connection
configured the same way: it runs once per task, cached, and the gold filter needs no worker.
Drift (protocol.drift): after the change the table and every column carry the suffix
`_v2` (a schema migration), in the schema shown, in the instruction (the table's name and
column names with an underscore: other column names there are plain words) and in the
gold SQL (identifiers outside string literals). The check is unchanged: the reference is
still the original gold SQL on the original table, its rows are the same, and a modified
table's column names are compared through the renaming. Memories written before hold the
old names.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import logging
import math
import re
import sqlite3
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field, field_validator

from memrl_bench import prompts
from memrl_bench.core.config import MAX_SECONDS, fits_64_bits
from memrl_bench.core.schema import Task
from memrl_bench.envs.base import DataMissingError, DataRecord, Env, data_dir, hash_fraction, read_data_file
from memrl_bench.envs.gold import GoldFilter
from memrl_bench.envs.settings import MAX_OUTPUT_CHARS, GoldCheckedSettings
from memrl_bench.envs.sqlite_worker import Row, SQLError, SQLWorker, WorkerLimit, open_database, read_table, run_sql
from memrl_bench.protocols.drift import DriftSettings

log = logging.getLogger(__name__)

_FILES = {"train": "db_train.json", "validation": "db_val.json"}
_FETCH = "python scripts/fetch_data.py llb"
_SQL_KEYWORDS = ("select", "with", "insert", "update", "delete", "create", "drop", "alter", "replace", "pragma", "explain")
_FENCED = re.compile(r"```[\w-]*\n?(.*?)```", re.DOTALL)
_TOLERANCE = 1e-6
_DRIFT_SUFFIX = "_v2"
_STRING_LITERAL = re.compile(r"'(?:[^']|'')*'")
_REFERENCE_TIMEOUT_S = 60.0  # the gold SQL's time limit (it runs once per task)


# A task's category (Task.data["category"], read by methods that group tasks, e.g. skillbank): the change its
# instruction's first word asks for, else a query. Read from the task's text, never from its gold SQL.
_CHANGE_WORDS = {"insert": "insert", "update": "update", "increase": "update", "decrease": "update", "delete": "delete"}


def instruction_category(instruction: str) -> str:
    """insert, update or delete when the instruction starts by asking for that change; else query."""
    words = instruction.split(maxsplit=1)
    return _CHANGE_WORDS.get(words[0].lower(), "query") if words else "query"


def _unfenced(text: str) -> str:
    """The first fenced block of `text` if it has one, else `text`, without stray backticks."""
    blocks = _FENCED.findall(text)
    return (blocks[0] if blocks else text).strip().strip("`").strip()


def rename_identifiers(sql: str, renamed: dict[str, str]) -> str:
    """`sql` with each identifier in `renamed` replaced (case-insensitively, whole words), string literals left alone."""
    pattern = re.compile(
        r"(?<!\w)(" + "|".join(re.escape(old) for old in sorted(renamed, key=len, reverse=True)) + r")(?!\w)", re.IGNORECASE
    )
    lower = {old.lower(): new for old, new in renamed.items()}
    parts = _STRING_LITERAL.split(sql)
    literals = _STRING_LITERAL.findall(sql)
    out = [pattern.sub(lambda m: lower[m.group(1).lower()], part) for part in parts]
    return "".join(p + (literals[i] if i < len(literals) else "") for i, p in enumerate(out))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value) if isinstance(value, (int, float)) else float(str(value).strip())
    except (ValueError, OverflowError):  # an int past a float's range (10**400) compares as text
        return None


def _cell_key(value: Any) -> tuple:
    """A sort key that puts equal cells (numbers as numbers) next to each other."""
    number = _number(value)
    if number is not None and math.isfinite(number):
        return (1, round(number, 4), "")
    return (0, 0.0, "" if value is None else str(value).strip())


_INTEGER_TEXT = re.compile(r"\s*[+-]?\d+\s*")


def _whole(value: Any) -> int | None:
    """`value` as an integer if it is one (an int, or text of one), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
        return int(value)
    return None


def _cells_equal(agent: Any, gold: Any, tolerance: float, stored: bool) -> bool:
    """An answer's cell against the reference's. An integer is exact (a count, an id, a date stored as YYYYMMDD: the
    relative tolerance let 20221135 pass for 20221120, 57b); other numbers within `tolerance`. A value the model wrote
    (ANSWER text) is read as written: numbers however spelled, text without surrounding blanks, NULL as NULL or None. A
    value `stored` in the final table is compared as stored: text exactly, NULL only as NULL (57b: the text 'None' and
    padded text passed a modify task)."""
    if stored and (isinstance(agent, str) or isinstance(gold, str) or agent is None or gold is None):
        return type(agent) is type(gold) and agent == gold
    gold_number, agent_number = _number(gold), _number(agent)
    if gold_number is not None and agent_number is not None:
        whole = _whole(gold)
        if whole is None:
            return math.isclose(agent_number, gold_number, rel_tol=tolerance, abs_tol=tolerance)
        agent_whole = _whole(agent)
        if agent_whole is None and agent_number.is_integer():  # 7.0 written for 7
            agent_whole = int(agent_number)
        return agent_whole == whole
    if gold is None or agent is None:
        return gold is None and (agent is None or str(agent).strip().upper() in ("NULL", "NONE"))
    return str(agent).strip() == str(gold).strip()


def rows_match(agent: list[Row], gold: list[Row], ordered: bool, tolerance: float = _TOLERANCE, stored: bool = False) -> bool:
    """Equal rows (in order if `ordered`, else as multisets), cell by cell as _cells_equal says (`stored`: the agent's rows
    are a final table's)."""
    if len(agent) != len(gold):
        return False
    if not ordered:
        agent = sorted(agent, key=lambda row: [_cell_key(c) for c in row])
        gold = sorted(gold, key=lambda row: [_cell_key(c) for c in row])
    return all(len(a) == len(g) and all(_cells_equal(x, y, tolerance, stored) for x, y in zip(a, g)) for a, g in zip(agent, gold))


_UNREADABLE = object()
_CELL_TYPES = (str, int, float, bool, type(None))


def _literal(text: str) -> Any:
    """The JSON or Python literal `text` holds, as rows or a row of cells (a cell nested deeper
    is no SQL value, and a model's 100,000 brackets must not reach Python's recursion limit
    later), or _UNREADABLE."""
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        rows = value if isinstance(value, (list, tuple)) else [value]
        cells = [cell for row in rows for cell in (row if isinstance(row, (list, tuple)) else [row])]
        return value if all(isinstance(cell, _CELL_TYPES) for cell in cells) else _UNREADABLE
    return _UNREADABLE


def parse_rows(text: str, width: int) -> list[Row]:
    """Rows from an ANSWER text; `width` (the gold's column count) decides what a flat list means."""
    text = text.strip()
    value = _literal(text)
    if value is _UNREADABLE:
        parts = [p.strip().strip("'\"") for p in text.split(",")]
        value = [parts] if text else []
    if not isinstance(value, (list, tuple)):
        return [(value,)]
    if all(isinstance(item, (list, tuple)) for item in value) and value:
        return [tuple(item) for item in value]
    if width == 1:
        return [(item,) for item in value]
    return [tuple(value)] if value else []


def _top_level(sql: str) -> str:
    """`sql` without its parenthesised parts (subqueries), innermost first."""
    flat = sql
    while True:
        shorter = re.sub(r"\([^()]*\)", " ", flat)
        if shorter == flat:
            return flat
        flat = shorter


def _top_level_order_by(sql: str) -> bool:
    return re.search(r"\border\s+by\b", _top_level(sql), re.IGNORECASE) is not None


def _top_level_offset(sql: str) -> bool:
    """OFFSET n, or MySQL's LIMIT n, m."""
    return re.search(r"\boffset\b|\blimit\s+\d+\s*,", _top_level(sql), re.IGNORECASE) is not None


def _mysql_table_md5(rows: list[Row]) -> str:
    """LLB's table hash: md5 of the sorted first 5 hex digits of md5(CONCAT_WS(',', row))."""

    def text(value: Any) -> str:
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)

    hashes = sorted(hashlib.md5(",".join(text(v) for v in row if v is not None).encode()).hexdigest()[:5] for row in rows)
    return hashlib.md5(",".join(hashes).encode()).hexdigest()


class _Column(DataRecord):
    name: str
    type: str


class _Table(DataRecord):
    name: str
    column_info_list: list[_Column] = Field(min_length=1)
    row_list: list[list[Any]]

    @field_validator("row_list")
    @classmethod
    def _sqlite_integers(cls, rows: list[list[Any]]) -> list[list[Any]]:
        """Integer cells fit SQLite's 64 bits (a larger one ended the run in an OverflowError)."""
        for row in rows:
            for cell in row:
                if isinstance(cell, int) and not fits_64_bits(cell):
                    raise ValueError(f"the integer {cell} does not fit SQLite's 64-bit INTEGER")
        return rows


class _Answer(DataRecord):
    sql: str = Field(pattern=r"\S")
    direct: Any  # LLB's recorded MySQL answer (null for modifying tasks)
    md5: str | None


class LLBDBRecord(DataRecord):
    """One task of an LLB DB file (db_train.json, db_val.json)."""

    instruction: str
    answer_info: _Answer
    table_info: _Table
    skill_list: list[str] = []


class LLBDBSettings(GoldCheckedSettings):
    statement_timeout_s: float = Field(5, gt=0, le=MAX_SECONDS, description="A statement is interrupted after this long.")
    max_shown_rows: int = Field(20, ge=1, description="Result rows shown per statement.")
    max_output_chars: int = Field(4000, ge=1, le=MAX_OUTPUT_CHARS, description="Cut-off of one observation (at most 64 Ki characters).")
    max_answer_rows: int = Field(10_000, ge=1, le=10_000_000, description="Rows kept from the last query for a COMMIT answer.")
    preview_rows: int = Field(5, ge=0, description="Table rows shown in the first observation.")
    worker_memory_mb: int = Field(
        512, ge=64, le=1 << 20, description="Memory cap of the process that runs the SQL (envs/sqlite_worker.py), at most 1 TiB."
    )


class LLBDBEnv(Env):
    """SQL over one table; answers checked against the gold SQL run in SQLite."""

    name = "llb_db"
    grades_in_observation = True
    Settings = LLBDBSettings
    settings: LLBDBSettings
    labels = ("lifelongagentbench", "tool-use")
    default_roles: ClassVar[dict[str, Any]] = {"train": "train", "validation": "validation", "test": ["test"]}
    default_actor = "react"

    def __init__(self, settings: LLBDBSettings | Mapping[str, Any], seed: int = 0):
        super().__init__(settings, seed)
        self.tasks_per_split = self.settings.tasks_per_split
        self.statement_timeout_s = float(self.settings.statement_timeout_s)
        self.max_shown_rows = self.settings.max_shown_rows
        self.max_output_chars = self.settings.max_output_chars
        self.max_answer_rows = self.settings.max_answer_rows
        self.preview_rows = self.settings.preview_rows
        self.worker_memory_mb = self.settings.worker_memory_mb
        folder = data_dir(self.settings.data_dir, "MEMRL_BENCH_LLB_DIR", "llb", _FETCH)
        self._all: dict[str, list[Task]] = {"train": [], "validation": [], "test": []}
        for source, file_name in _FILES.items():
            path = folder / file_name
            if not path.exists():
                raise DataMissingError(f"LLB DB file {path} is missing; fetch it with: {_FETCH}")
            entries = read_data_file(path, LLBDBRecord, by_id=True)
            for key in sorted(entries, key=int):
                task = self._make_task(key, entries[key], source)
                self._all[task.split].append(task)
        self._references: dict[str, tuple] = {}
        self._gold = GoldFilter(
            self.name,
            None,
            self._all,
            self._gold_failure,
            self.tasks_per_split,
            self.settings.exclude_gold_failures,
            workers=1,
            needs_sandbox=False,
        )
        self._worker: SQLWorker | None = None  # started at the first reset, kept across episodes
        self._task: Task | None = None
        self._last_rows: list[Row] | None = None

    @staticmethod
    def _make_task(key: str, entry: dict[str, Any], source: str) -> Task:
        task_id = f"llb_db/{key}"
        split = source if source == "train" else ("validation" if hash_fraction(task_id) < 0.5 else "test")
        gold_sql = entry["answer_info"]["sql"].strip()
        data = {
            "table": entry["table_info"],
            "gold_sql": gold_sql,
            "kind": "query" if gold_sql.split()[0].upper() == "SELECT" else "modify",
            "direct": entry["answer_info"]["direct"],
            "md5": entry["answer_info"]["md5"],
            "skills": list(entry.get("skill_list", [])),
            "category": instruction_category(entry["instruction"]),
            "gold": [f"SQL: {gold_sql}", "COMMIT"],
        }
        return Task(id=task_id, split=split, description=entry["instruction"], data=data)

    def splits(self) -> dict[str, str]:
        return {
            "train": "LifelongAgentBench DB tasks of MemRL's train file db_train.json (361), in id order",
            "validation": "MemRL's val file db_val.json (139): the tasks with hash_fraction(task id) < 0.5",
            "test": "MemRL's val file db_val.json (139): the tasks with hash_fraction(task id) >= 0.5",
        }

    def tasks(self, split: str) -> list[Task]:
        return self._gold.tasks(split)

    def excluded(self) -> dict[str, str]:
        """Task id -> why it is left out (its gold SQL does not run in SQLite)."""
        return self._gold.excluded()

    def drifted(self, task: Task, drift: DriftSettings) -> Task:
        """The task after a schema migration: the table and its columns renamed (module doc)."""
        table = task.data["table"]
        columns = {c["name"]: c["name"] + _DRIFT_SUFFIX for c in table["column_info_list"]}
        renamed = {table["name"]: table["name"] + _DRIFT_SUFFIX, **columns}
        new_table = {
            **table,
            "name": renamed[table["name"]],
            "column_info_list": [{**c, "name": columns[c["name"]]} for c in table["column_info_list"]],
        }
        shown = {old: new for old, new in renamed.items() if old == table["name"] or "_" in old}
        description = re.sub(
            r"\b(" + "|".join(re.escape(old) for old in sorted(shown, key=len, reverse=True)) + r")\b",
            lambda m: shown[m.group(1)],
            task.description,
        )
        gold_sql = rename_identifiers(task.data["gold_sql"], renamed)
        data = {
            **task.data,
            "table": new_table,
            "original_table": table,
            "renamed_columns": columns,
            "gold": [f"SQL: {gold_sql}", "COMMIT"],
        }
        return Task(task.id, task.split, description, task.intent, data)

    def _gold_failure(self, task: Task) -> str:
        try:
            self._reference(task)
        except sqlite3.Error as err:
            return f"gold SQL fails in SQLite: {err}"
        return ""

    def instructions(self) -> str:
        return prompts.render("llb_db_instructions", max_shown_rows=self.max_shown_rows)

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._task, self._last_rows = None, None
        if self._worker is None or not self._worker.alive():
            self.close()
            self._worker = SQLWorker(self.worker_memory_mb)
        try:
            self._worker.reset(task.data["table"], self.statement_timeout_s)
        except WorkerLimit as limit:
            self._worker = None
            raise RuntimeError(f"{self.name}: building the table of {task.id} failed: {limit}") from None
        self._task = task
        table = task.data["table"]
        columns = ", ".join(f"{c['name']} {c['type']}" for c in table["column_info_list"])
        preview = "\n".join(repr(tuple(row)) for row in table["row_list"][: self.preview_rows])
        observation = f"Table {table['name']}({columns}) has {len(table['row_list'])} rows."
        if preview:
            observation += f" The first {min(self.preview_rows, len(table['row_list']))}:\n{preview}"
        return observation, {"multiline_actions": True}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self._worker is None or self._task is None:
            raise RuntimeError(f"{self.name}: step() before reset() or after the episode ended")
        kind, content = self._parse(action)
        try:
            if kind == "sql":
                return self._execute(content), 0.0, False, {"multiline_actions": True}
            if kind in ("answer", "commit"):
                success, detail = self._check(content if kind == "answer" else None)
                self._task = None
                return (
                    ("The answer is right." if success else "The answer is wrong."),
                    float(success),
                    True,
                    {"success": success, "detail": detail},
                )
        except WorkerLimit as limit:
            return self._ended_by(limit)
        return (
            "Unknown action. Use `SQL: <statement>`, `ANSWER: <rows>` or `COMMIT`.",
            0.0,
            False,
            {"multiline_actions": True, "invalid_action": True},
        )

    def _ended_by(self, limit: WorkerLimit) -> tuple[str, float, bool, dict[str, Any]]:
        """The episode ends with status env_limit: the worker crashed or hit a limit (it is gone)."""
        assert self._task is not None
        log.warning("%s: %s; the episode ends with status env_limit, the next one gets a new SQL worker", self._task.id, limit)
        self._worker, self._task = None, None
        return f"The episode ended: {limit}.", 0.0, True, {"success": False, "status": "env_limit", "detail": str(limit)}

    @staticmethod
    def _parse(action: str) -> tuple[str, str]:
        """("sql" | "answer" | "commit" | "unknown", content) of one action."""
        text = action.strip()
        label, colon, rest = text.partition(":")
        label = label.strip().lower() if colon else ""
        if label == "sql":
            return "sql", _unfenced(rest)
        if label in ("answer", "final answer"):
            return "answer", rest.strip()
        if text.lower().rstrip(";") in ("commit", "finish"):
            return "commit", ""
        if _FENCED.search(text):
            return "sql", _unfenced(text)
        if text.split(None, 1) and text.split(None, 1)[0].lower() in _SQL_KEYWORDS:
            return "sql", text
        return "unknown", text

    def _execute(self, sql: str) -> str:
        assert self._worker is not None
        try:
            columns, rows, changed = self._worker.run(sql, self.statement_timeout_s, self.max_answer_rows + 1)
        except SQLError as err:  # SQLite copies the statement's text into some messages: cut as a result is (61b)
            return self._cut(f"Error: {err}")
        if columns is None:
            return f"OK, {max(changed, 0)} rows changed."
        self._last_rows = rows[: self.max_answer_rows]
        more = len(rows) - self.max_shown_rows
        shown = "\n".join(repr(row) for row in rows[: self.max_shown_rows])
        text = f"columns: {tuple(columns)}\n{shown}" + (
            f"\n... {more}{'+' if len(rows) > self.max_answer_rows else ''} more rows" if more > 0 else ""
        )
        return self._cut(text)

    def _cut(self, text: str) -> str:
        return text if len(text) <= self.max_output_chars else text[: self.max_output_chars] + "\n... (output cut)"

    def _reference(self, task: Task) -> tuple:
        """Query: (rows, rows on the reversed copy or None, ordered). Modify: (columns, rows after the gold SQL)."""
        if task.id not in self._references:
            sql, table = task.data["gold_sql"], task.data.get("original_table", task.data["table"])
            if task.data["kind"] == "query":
                results = []
                for reverse in (False, True):
                    connection = open_database(table, reverse_rows=reverse)
                    results.append(run_sql(connection, sql, _REFERENCE_TIMEOUT_S, self.max_answer_rows)[1])
                    connection.close()
                ordered = _top_level_order_by(sql)
                positional = _top_level_offset(sql) and not ordered  # the question names stored positions (module doc)
                self._references[task.id] = (results[0], None if positional else results[1], ordered)
            else:
                connection = open_database(table)
                run_sql(connection, sql, _REFERENCE_TIMEOUT_S, 0)
                self._references[task.id] = read_table(connection, table["name"], _REFERENCE_TIMEOUT_S)
                connection.close()
        return self._references[task.id]

    def _check(self, answer: str | None) -> tuple[bool, str]:
        assert self._worker is not None and self._task is not None
        reference = self._reference(self._task)
        if self._task.data["kind"] == "modify":
            try:  # one row more than the reference's is enough to tell a longer table
                columns, rows = self._worker.read_table(self._task.data["table"]["name"], self.statement_timeout_s, len(reference[1]) + 1)
            except SQLError as err:
                return False, f"cannot read the final table: {err}"
            renamed = self._task.data.get("renamed_columns", {})
            same = columns == [renamed.get(c, c) for c in reference[0]] and rows_match(rows, reference[1], ordered=False, stored=True)
            return same, "final table compared with the table after the gold SQL"
        gold, gold_reversed, ordered = reference
        if answer is not None:
            rows = parse_rows(answer, len(gold[0]) if gold else 1)
            source = "ANSWER rows"
        elif self._last_rows is not None:
            rows, source = self._last_rows, "rows of the last query"
        else:
            return False, "COMMIT without an answer or any query that returned rows"
        right = rows_match(rows, gold, ordered) or (gold_reversed is not None and rows_match(rows, gold_reversed, ordered))
        return right, f"{source} compared with the gold SQL's rows ({'in order' if ordered else 'as a multiset'})"

    def reference_agreement(self) -> dict[str, tuple[int, int]]:
        """How often the SQLite reference agrees with LLB's recorded MySQL answers:
        {"query rows": (agree, total), "table md5": (agree, total)}, over tasks whose gold runs here.
        Rows compare as multisets with a 1e-4 tolerance (MySQL's AVG keeps 4 decimals)."""
        agree = {"query rows": [0, 0], "table md5": [0, 0]}
        for listed in self._all.values():
            for task in listed:
                if self._gold.reason(task):
                    continue
                reference = self._reference(task)
                if task.data["kind"] == "query":
                    same = rows_match(reference[0], [tuple(r) for r in task.data["direct"]], ordered=False, tolerance=1e-4)
                    counter = agree["query rows"]
                else:
                    same = _mysql_table_md5(reference[1]) == task.data["md5"]
                    counter = agree["table md5"]
                counter[0] += int(same)
                counter[1] += 1
        return {key: (value[0], value[1]) for key, value in agree.items()}

    def spawn(self) -> LLBDBEnv:
        twin = copy.copy(self)  # shares the loaded tasks and references, not the episode or the worker
        twin._worker, twin._task, twin._last_rows = None, None, None
        return twin

    def close(self) -> None:
        """Stop the SQL worker (the next reset starts another)."""
        if self._worker is not None:
            self._worker.close()
        self._worker, self._task = None, None


ENV = LLBDBEnv
