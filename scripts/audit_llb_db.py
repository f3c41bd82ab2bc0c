"""Audit the LLB-DB checker on real episodes by a route that shares none of its code (issue 27).

For every logged episode of the given run folders, the agent's parsed actions are replayed in a
fresh in-memory SQLite database built from the data file's table with Python's sqlite3 (no
worker, no authorizer, none of `memrl_bench.envs.llb_db`), and the result is compared with what
LifelongAgentBench recorded from MySQL, not with the harness's SQLite reference:

- a question: the rows of `ANSWER: <json>` (or, on COMMIT, of the last query that returned rows)
  against the recorded answer `direct`, as multisets, numbers within 1e-4 (MySQL's AVG keeps 4
  decimals) and strings compared case-insensitively where they match as text otherwise;
- a change: LLB's table hash (md5 over the sorted first 5 hex digits of md5(CONCAT_WS(',', row)))
  of the final table against the recorded `md5`.

Each episode is then "agree" (the logged success equals the audit's), or listed with both verdicts
and the actions, for a person to read. Episodes that ended by a limit or were cut are counted apart.

    python scripts/audit_llb_db.py RUN_FOLDER [RUN_FOLDER ...] [--data ../shared/data/llb]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Any

TOLERANCE = 1e-4


def load_tasks(data: Path) -> dict[str, dict[str, Any]]:
    tasks = {}
    for name in ("db_train.json", "db_val.json"):
        for key, entry in json.loads((data / name).read_text()).items():
            tasks[f"llb_db/{key}"] = entry
    return tasks


def build(table: dict[str, Any]) -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:")
    columns = ", ".join(f'"{c["name"]}" {c["type"]}' for c in table["column_info_list"])
    connection.execute(f'CREATE TABLE "{table["name"]}" ({columns})')
    marks = ", ".join("?" for _ in table["column_info_list"])
    connection.executemany(f'INSERT INTO "{table["name"]}" VALUES ({marks})', table["row_list"])
    return connection


def as_number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def cell_text(value: Any) -> str:
    number = as_number(value)
    if number is not None:
        return f"{round(number, 4):.4f}"
    return "NULL" if value is None else str(value).strip()


def same_multiset(agent: list[tuple], gold: list[tuple]) -> bool:
    if len(agent) != len(gold):
        return False
    key = lambda row: sorted(cell_text(c) for c in row)  # noqa: E731 (order of columns is not asked)
    left, right = sorted(key(r) for r in agent), sorted(key(r) for r in gold)
    for a_row, g_row in zip(left, right):
        if len(a_row) != len(g_row):
            return False
        for a, g in zip(a_row, g_row):
            a_num, g_num = as_number(a), as_number(g)
            if a_num is not None and g_num is not None:
                if not math.isclose(a_num, g_num, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
                    return False
            elif a != g:
                return False
    return True


def rows_of(answer: str) -> list[tuple] | None:
    try:
        value = json.loads(answer)
    except ValueError:
        return None
    if not isinstance(value, list):
        return [(value,)]
    if value and all(isinstance(v, list) for v in value):
        return [tuple(v) for v in value]
    return [(v,) for v in value]


def llb_md5(rows: list[tuple]) -> str:
    def text(value: Any) -> str:
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)

    hashes = sorted(hashlib.md5(",".join(text(v) for v in row if v is not None).encode()).hexdigest()[:5] for row in rows)
    return hashlib.md5(",".join(hashes).encode()).hexdigest()


def strip_label(action: str) -> tuple[str, str]:
    label, colon, rest = action.strip().partition(":")
    if colon and label.strip().lower() in ("sql", "answer", "final answer"):
        kind = "sql" if label.strip().lower() == "sql" else "answer"
        text = rest.strip()
        if kind == "sql" and text.startswith("```"):
            text = text.strip("`").removeprefix("sql").strip()
        return kind, text
    if action.strip().lower().rstrip(";") in ("commit", "finish"):
        return "commit", ""
    return "other", action


def audit(episode: dict[str, Any], task: dict[str, Any]) -> bool | None:
    """The audit's verdict (None: the episode gave no final action to judge)."""
    table = task["table_info"]
    connection = build(table)
    last_rows: list[tuple] | None = None
    verdict: bool | None = None
    modify = not task["answer_info"]["sql"].strip().upper().startswith("SELECT")
    for turn in episode["turns"]:
        kind, text = strip_label(turn["action"] or "")
        if kind in ("sql", "other") and text:
            try:
                cursor = connection.execute(text)
                rows = cursor.fetchall()
                if cursor.description is not None:
                    last_rows = [tuple(r) for r in rows]
            except (sqlite3.Error, sqlite3.Warning, ValueError):
                pass
            continue
        if kind in ("answer", "commit"):
            if modify:
                rows = [tuple(r) for r in connection.execute(f'SELECT * FROM "{table["name"]}"').fetchall()]
                verdict = llb_md5(rows) == task["answer_info"]["md5"]
            else:
                given = rows_of(text) if kind == "answer" else last_rows
                gold = [tuple(r) for r in task["answer_info"]["direct"]]
                verdict = given is not None and same_multiset(given, gold)
            break
    connection.close()
    return verdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data" / "llb")
    args = parser.parse_args()
    tasks = load_tasks(args.data)
    counts: Counter[str] = Counter()
    for run in args.runs:
        for line in (run / "episodes.jsonl").read_text().splitlines():
            episode = json.loads(line)
            if episode["status"] not in ("ok",):
                counts[f"status {episode['status']}"] += 1
                continue
            verdict = audit(episode, tasks[episode["task_id"]])
            logged = bool(episode["success"])
            if verdict is None:
                counts["no final action"] += 1
                if logged:
                    print(f"DISAGREE {run.name} {episode['episode_id']} {episode['task_id']}: logged success with no final action")
                continue
            counts["agree" if verdict == logged else "disagree"] += 1
            if verdict != logged:
                print(f"DISAGREE {run.name} {episode['episode_id']} {episode['task_id']}: logged {logged}, audit {verdict}")
                for turn in episode["turns"]:
                    print(f"    {turn['action']!r}")
    print(json.dumps(dict(sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
