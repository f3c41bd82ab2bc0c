"""What running LLB-DB's SQL in a worker process costs: in-process SQLite (the old way) vs the worker.

    python scripts/bench_llb_db_worker.py            # the first 100 tasks, 3 rounds
    python scripts/bench_llb_db_worker.py --tasks 500 --rounds 5

Both ways use the same database functions (memrl_bench/envs/sqlite_worker.py): in-process,
`open_database` + `run_sql` + `read_table` on a connection of this process; through the
worker, `SQLWorker.reset` / `run` / `read_table`. Per task: one episode's setup (a fresh
database with the task's table), its statements (the gold SQL, `SELECT *`, a COUNT) and the
final-table read. Printed: the median per statement and per episode's setup + read, the
ratio, a worker's start time, and the machine's load average (other processes share it).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memrl_bench.envs.llb_db import LLBDBEnv  # noqa: E402
from memrl_bench.envs.sqlite_worker import SQLError, SQLWorker, open_database, read_table, run_sql  # noqa: E402

TIMEOUT_S, MAX_ROWS = 5.0, 10_001


def statements(task) -> list[str]:
    name = task.data["table"]["name"]
    return [task.data["gold_sql"], f'SELECT * FROM "{name}"', f'SELECT COUNT(*) FROM "{name}"']


def in_process(tasks, per_statement: list[float], per_episode: list[float]) -> None:
    for task in tasks:
        table = task.data["table"]
        start = time.perf_counter()
        connection = open_database(table)
        per_episode.append(time.perf_counter() - start)
        for sql in statements(task):
            start = time.perf_counter()
            try:
                run_sql(connection, sql, TIMEOUT_S, MAX_ROWS)
            except sqlite3.Error:  # as in the env: an error is an observation
                pass
            per_statement.append(time.perf_counter() - start)
        start = time.perf_counter()
        read_table(connection, table["name"], TIMEOUT_S, len(table["row_list"]) + 1)
        connection.close()
        per_episode[-1] += time.perf_counter() - start


def in_worker(worker: SQLWorker, tasks, per_statement: list[float], per_episode: list[float]) -> None:
    for task in tasks:
        table = task.data["table"]
        start = time.perf_counter()
        worker.reset(table, TIMEOUT_S)
        per_episode.append(time.perf_counter() - start)
        for sql in statements(task):
            start = time.perf_counter()
            try:
                worker.run(sql, TIMEOUT_S, MAX_ROWS)
            except SQLError:  # the same, from the worker
                pass
            per_statement.append(time.perf_counter() - start)
        start = time.perf_counter()
        worker.read_table(table["name"], TIMEOUT_S, len(table["row_list"]) + 1)
        per_episode[-1] += time.perf_counter() - start


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=100, help="tasks played per round (default 100)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each way, interleaved (default 3)")
    parser.add_argument("--starts", type=int, default=20, help="workers started to time a start (default 20)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    env = LLBDBEnv({})
    tasks = [t for split in env.splits() for t in env.tasks(split)][: args.tasks]
    starts = []
    for _ in range(args.starts):
        start = time.perf_counter()
        SQLWorker(512).close()
        starts.append(time.perf_counter() - start)
    old_statement: list[float] = []
    old_episode: list[float] = []
    new_statement: list[float] = []
    new_episode: list[float] = []
    worker = SQLWorker(512)
    try:
        for _ in range(args.rounds):  # interleaved, so a change of the machine's load hits both
            in_process(tasks, old_statement, old_episode)
            in_worker(worker, tasks, new_statement, new_episode)
    finally:
        worker.close()
    print(
        f"{len(tasks)} tasks x {args.rounds} rounds; load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f} "
        f"({os.cpu_count()} cores)"
    )
    ratio_statement = statistics.median(new_statement) / statistics.median(old_statement)
    ratio_episode = statistics.median(new_episode) / statistics.median(old_episode)
    print(
        f"per statement (median of {len(old_statement)}): in-process {ms(old_statement)}, worker {ms(new_statement)}, ratio "
        f"{ratio_statement:.1f}"
    )
    print(
        f"per episode, setup + final-table read (median of {len(old_episode)}): in-process {ms(old_episode)}, worker {ms(new_episode)}, "
        f"ratio {ratio_episode:.1f}"
    )
    print(f"a worker's start (median of {len(starts)}): {ms(starts)}; once per env instance, and after a crash or limit")


if __name__ == "__main__":
    main()
