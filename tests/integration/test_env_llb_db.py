"""The LLB DB env (SQLite) on small hand-written tasks, plus the real data when it is there."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memrl_bench.envs.base import DataMissingError, hash_fraction
from memrl_bench.envs.checker import check_env
from memrl_bench.envs.gold import gold_failure
from memrl_bench.envs.llb_db import LLBDBEnv, parse_rows, rows_match

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "llb"
TABLE = {
    "name": "staff",
    "column_info_list": [
        {"name": "id", "type": "INT"},
        {"name": "name", "type": "TEXT"},
        {"name": "team", "type": "TEXT"},
        {"name": "salary", "type": "INT"},
    ],
    "row_list": [[1, "Ann", "red", 100], [2, "Bob", "red", 200], [3, "Cid", "blue", 150], [4, "Dee", "blue", 150], [5, "Eve", "green", 90]],
}


def entry(instruction: str, sql: str) -> dict:
    is_query = sql.split()[0].upper() == "SELECT"
    return {
        "instruction": instruction,
        "table_info": TABLE,
        "skill_list": ["select"],
        "answer_info": {"sql": sql, "direct": [] if is_query else None, "md5": None if is_query else "0" * 32},
    }


TASKS = {
    "1": entry(
        "Average salary per team, highest first.",
        "SELECT team, AVG(salary) AS avg_salary FROM staff GROUP BY team ORDER BY avg_salary DESC;",
    ),
    "2": entry("Names of people in the blue team.", "SELECT name FROM staff WHERE team = 'blue';"),
    "3": entry("Give everyone in red a raise of 10.", "UPDATE staff SET salary = salary + 10 WHERE team = 'red';"),
    "4": entry("MySQL-only syntax that SQLite rejects.", "UPDATE staff s JOIN (SELECT 1) x SET s.salary = 0;"),
    "5": entry("The two best paid, ties in any order.", "SELECT name, salary FROM staff ORDER BY salary DESC LIMIT 3;"),
    "6": entry("Three names, starting from the 3rd row.", "SELECT name FROM staff LIMIT 3 OFFSET 2;"),
    "7": entry("Any two names.", "SELECT name FROM staff LIMIT 2;"),
}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "llb"
    folder.mkdir()
    (folder / "db_train.json").write_text(json.dumps(TASKS))
    (folder / "db_val.json").write_text(
        json.dumps({str(k): entry(f"Count rows {k}.", "SELECT COUNT(*) FROM staff;") for k in range(10, 40)})
    )
    return folder


@pytest.fixture
def env(data: Path) -> LLBDBEnv:
    return LLBDBEnv({"data_dir": str(data)})


def task(env: LLBDBEnv, key: str):
    return next(t for listed in env._all.values() for t in listed if t.id == f"llb_db/{key}")


def play(env: LLBDBEnv, key: str, *actions: str) -> dict:
    env.reset(task(env, key))
    for action in actions:
        _, _, done, info = env.step(action)
        if done:
            return info
    raise AssertionError("the actions did not end the episode")


def test_gold_passes_and_noop_or_wrong_fails(env: LLBDBEnv):
    for key in ("1", "2", "3", "5"):
        assert gold_failure(env, task(env, key)) == "", key
    assert not play(env, "1", "COMMIT")["success"]  # a query task with no query
    assert not play(env, "3", "COMMIT")["success"]  # a change never made
    assert not play(env, "2", "SQL: SELECT name FROM staff WHERE team = 'red'", "COMMIT")["success"]
    assert not play(env, "3", "SQL: UPDATE staff SET salary = salary + 10", "COMMIT")["success"]  # too many rows changed


def test_answers_by_rows(env: LLBDBEnv):
    assert play(env, "2", 'ANSWER: [["Dee"], ["Cid"]]')["success"]  # no ORDER BY: any order
    assert play(env, "2", 'ANSWER: ["Cid", "Dee"]')["success"]  # one column: a flat list is its rows
    assert play(env, "1", "ANSWER: [('red', 150.0), ('blue', '150'), ('green', 90.00000001)]")["success"]
    assert not play(env, "1", 'ANSWER: [["blue", 150], ["red", 150], ["green", 90]]')["success"]  # ORDER BY: order counts
    assert not play(env, "1", 'ANSWER: [["red", 150.01], ["blue", 150], ["green", 90]]')["success"]
    assert play(env, "5", 'ANSWER: [["Bob", 200], ["Dee", 150], ["Cid", 150]]')["success"]  # tie order either way
    assert play(env, "5", 'ANSWER: [["Bob", 200], ["Cid", 150], ["Dee", 150]]')["success"]
    assert play(env, "3", "SQL: UPDATE staff SET salary = salary + 10 WHERE team = 'red'", "ANSWER: done")["success"]


def test_offset_without_order_by_is_checked_against_the_stored_order(env: LLBDBEnv):
    """The audit's one disagreement (scripts/audit_llb_db.py on the LLB-DB pilot): a query that
    forgot the OFFSET matched the gold run on the reversed copy and was scored right."""
    assert play(env, "6", "SQL: SELECT name FROM staff LIMIT 3 OFFSET 2", "COMMIT")["success"]
    assert not play(env, "6", "SQL: SELECT name FROM staff LIMIT 3", "COMMIT")[
        "success"
    ]  # Ann, Bob, Cid: the gold's rows on the reversed copy
    assert play(env, "7", 'ANSWER: [["Eve"], ["Dee"]]')["success"]  # LIMIT alone: either stored order still counts


@pytest.mark.parametrize(
    "answer",
    [
        "[" * 100_000 + "]" * 100_000,
        "[" * 5_000 + "]" * 5_000,
        "[" * 900 + "1" + "]" * 900,
        "[[" + "9" * 400 + "], [1]]",
        "[[-" + "9" * 400 + "], [1]]",
        '[[{"a": [1]}]]',
    ],
    ids=["100k_deep", "5k_deep", "900_deep", "int_past_float", "negative_int_past_float", "dict_cell"],
)
def test_a_hostile_answer_text_is_a_wrong_answer_not_an_error(env: LLBDBEnv, answer: str):
    """Red team B16: 100,000 brackets raised RecursionError and 400 digits OverflowError out of
    env.step, so the episode lost its action (status env_error, no turns)."""
    info = play(env, "2", f"ANSWER: {answer}")
    assert info["success"] is False and "status" not in info and info["detail"].startswith("ANSWER rows compared")


def test_parse_rows_and_match():
    assert parse_rows('[["a", 1], ["b", 2]]', 2) == [("a", 1), ("b", 2)]
    assert parse_rows("('a', 1), ('b', 2)", 2) == [("a", 1), ("b", 2)]
    assert parse_rows("7", 1) == [(7,)]
    assert parse_rows("USA, 7", 2) == [("USA", "7")]
    assert rows_match([("x", "3.0")], [("x", 3)], ordered=True)
    assert not rows_match([("x", None)], [("x", 0)], ordered=True)
    assert rows_match([("x", "NULL")], [("x", None)], ordered=True)


def test_cells_compare_integers_exactly_and_a_final_tables_values_as_stored():
    """57b: integers within a relative 1e-6 let dates stored as YYYYMMDD pass 15 days off; a modify task's table passed
    with the text 'None' for NULL and text padded with blanks. An ANSWER's text stays read as written."""
    assert not rows_match([(20221135,)], [(20221120,)], ordered=True)
    assert not rows_match([("20221135",)], [(20221120,)], ordered=True)
    assert not rows_match([(5.000001,)], [(5,)], ordered=True)
    assert rows_match([("7.0",), (3.3333333,)], [(7,), (10 / 3,)], ordered=True)
    assert rows_match([(" USA ", "NULL", "None")], [("USA", None, None)], ordered=True)
    assert not rows_match([("None",)], [(None,)], ordered=True, stored=True)
    assert not rows_match([(" Politics ",)], [("Politics",)], ordered=True, stored=True)
    assert not rows_match([(1500.0000001,)], [(1500,)], ordered=True, stored=True)
    assert rows_match([(None, "a", 1500.0, 2.5)], [(None, "a", 1500, 2.5)], ordered=True, stored=True)


@pytest.mark.parametrize(
    "key, actions",
    [
        ("10", ["ANSWER: 5.000001"]),  # a count a millionth off
        (
            "3",
            [
                "SQL: UPDATE staff SET salary = salary + 10 WHERE team = 'red'",
                "SQL: UPDATE staff SET name = ' Ann ' WHERE id = 1",
                "COMMIT",
            ],
        ),
    ],
    ids=["an integer answered off", "a name stored padded"],
)
def test_a_near_miss_the_check_read_loosely_is_a_wrong_answer(env: LLBDBEnv, key: str, actions: list[str]):
    info = play(env, key, *actions)
    assert info["success"] is False and "status" not in info, info


def test_observations_and_unknown_actions(env: LLBDBEnv):
    observation, info = env.reset(task(env, "2"))
    assert "staff(id INT, name TEXT, team TEXT, salary INT) has 5 rows" in observation and info["multiline_actions"]
    assert "Unknown action" in env.step("look")[0]
    assert "columns: ('name',)" in env.step("```sql\nSELECT name FROM staff\n```")[0]
    assert env.step("SELECT COUNT(*) FROM staff")[0].endswith("(5,)")
    assert env.step("SQL:\n```sql\nSELECT COUNT(*) FROM staff WHERE team = 'red'\n```")[0].endswith("(2,)")
    assert env.step("SQL: `SELECT COUNT(*) FROM staff WHERE note = 'a:b'`")[0].startswith("Error: no such column: note")
    assert env.step("SQL: SELECT * FROM nowhere")[0].startswith("Error: no such table")
    assert env.step("SQL: SELECT 1; SELECT 2")[0].startswith("Error:")
    assert env.step("SQL: DELETE FROM staff WHERE id = 5")[0] == "OK, 1 rows changed."


def test_sql_cannot_touch_files_or_run_forever(env: LLBDBEnv, tmp_path: Path):
    env.statement_timeout_s = 0.5
    env.reset(task(env, "2"))
    target = tmp_path / "copy.db"
    assert env.step(f"SQL: ATTACH '{target}' AS other")[0].startswith("Error: not authorized")
    assert env.step(f"SQL: VACUUM INTO '{target}'")[0].startswith("Error:")
    assert not target.exists()
    start = time.monotonic()
    endless = env.step("SQL: WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n")[0]
    assert endless.startswith("Error: interrupted") and time.monotonic() - start < 10


def test_exclusion_splits_and_check_env(env: LLBDBEnv):
    assert [t.id for t in env.tasks("train")] == ["llb_db/1", "llb_db/2", "llb_db/3", "llb_db/5", "llb_db/6", "llb_db/7"]
    assert list(env.excluded()) == ["llb_db/4"] and "gold SQL fails in SQLite" in env.excluded()["llb_db/4"]  # the tasks checked so far
    validation, test = {t.id for t in env.tasks("validation")}, {t.id for t in env.tasks("test")}
    assert validation and test and not validation & test and len(validation | test) == 30
    assert all(hash_fraction(t) < 0.5 for t in validation)
    check_env(env)
    assert len(LLBDBEnv({"data_dir": env.settings.data_dir, "tasks_per_split": 2}).tasks("train")) == 2


def test_missing_data_names_path_and_fetch_command(tmp_path: Path):
    with pytest.raises(DataMissingError, match="fetch_data.py llb") as missing:
        LLBDBEnv({"data_dir": str(tmp_path / "nowhere")})
    assert str(tmp_path / "nowhere") in str(missing.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataMissingError, match="db_train.json is missing"):
        LLBDBEnv({"data_dir": str(tmp_path / "empty")})


@pytest.mark.skipif(not SHARED.exists(), reason=f"shared LLB data not at {SHARED}")
def test_real_data(monkeypatch):
    monkeypatch.setenv("MEMRL_BENCH_LLB_DIR", str(SHARED))
    env = LLBDBEnv({})
    assert env.settings.data_dir is None and os.environ["MEMRL_BENCH_LLB_DIR"] == str(SHARED)
    assert len(env.excluded()) <= 10
    for split in env.splits():
        for real in env.tasks(split)[:5]:
            assert gold_failure(env, real) == "", real.id
    agreement = env.reference_agreement()
    rows, tables = agreement["query rows"], agreement["table md5"]
    assert rows[0] >= 0.95 * rows[1] and tables[0] >= 0.9 * tables[1]


def test_db_format_failures_are_counted_per_episode(env: LLBDBEnv):
    import asyncio

    from memrl_bench.actors.base import Job
    from memrl_bench.actors.llm_actors import ReActActor
    from memrl_bench.core.schema import Retrieval
    from tests.scripted_llm import ScriptedChatModel

    env.reset(task(env, "2"))
    assert env.step("look")[3]["invalid_action"] and "invalid_action" not in env.step("SQL: SELECT 1")[3]
    llm = ScriptedChatModel(
        ["Think: first look.", "Action: look around", "Action: SQL: SELECT name FROM staff WHERE team = 'red'", "Action: COMMIT"]
    )
    outcome = asyncio.run(ReActActor(llm).play(Job(task(env, "2"), Retrieval(), "ep-2"), env))
    assert outcome.info["format_failures"] == 1 and outcome.info["invalid_actions"] == 1  # a Think without action; an unknown action
    assert len(outcome.turns) == 4 and outcome.turns[0].format_failure == "no_action"
