"""Every episode (and every retrieval) of every run under a folder, as one table.

`load_episodes(DIR)` gives one row per logged episode of every run folder under DIR,
with the run's settings as columns: the method, the env, the seeds, and every config key
that can change results (config.KEY_ROLES: not a place, an operation or a preset) whose
value differs between the runs, named by its dotted key (`method.epsilon`).
`load_retrievals(DIR)` gives one row per retrieved memory of every episode (its rank,
similarity, Q, score and the training episode it came from), keyed by run and episode id.
`memrl-bench-export DIR` writes both to Parquet and CSV, as lm-evaluation-harness's
`--log_samples` makes every sample a row.

Every run is read whole or the export stops: a run folder that cannot be read is one
error naming it (InputError, exit 2 from the command), never a silently shorter table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from memrl_bench.core.config import NOT_RESULTS, InputError, KeyRole, role_of
from memrl_bench.core.errors import not_utf8, print_or_exit
from memrl_bench.core.records import RunRecords, read_run
from memrl_bench.core.runfolder import MANIFEST, CorruptRunFolderError, damaged_by_writing, replacing, run_folders
from memrl_bench.core.schema import Episode

USAGE_KEYS = ("calls", "prompt_tokens", "completion_tokens", "cache_hits", "retries", "failures", "latency_s")
ALWAYS = ("method", "env", "seed", "task_order_seed")  # settings every table shows, varied or not


class ExportInputError(InputError, ValueError):
    """A folder to export holds no readable run; the message names the folder or run."""


def _flat(config: dict, prefix: str = "") -> dict[str, Any]:
    """Leaf values of a nested config by dotted key (lists as JSON, so a table cell holds them)."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= _flat(value, dotted + ".")
        else:
            out[dotted] = json.dumps(value) if isinstance(value, list) else value
    return out


def _result_keys(config: dict) -> dict[str, Any]:
    """The config's leaves that can change a run's results."""
    return {k: v for k, v in _flat(config).items() if role_of(k) not in (*NOT_RESULTS, KeyRole.PRESET)}


def read_runs(results_dir: Path | str) -> list[tuple[str, RunRecords]]:
    """(name relative to `results_dir`, records) of every run folder under it; ExportInputError if none or one is unreadable."""
    root = Path(results_dir)
    if not root.is_dir():
        raise ExportInputError(f"{results_dir}: not a folder")
    paths = run_folders(root)
    if not paths:
        raise ExportInputError(f"{results_dir}: no run folders (folders holding {MANIFEST}) found")
    runs = []
    for path in paths:
        name = str(path.relative_to(root)) if path != root else path.name
        if not_utf8(name) is not None:  # the tables hold names as UTF-8 (parquet refuses anything else)
            raise ExportInputError(f"cannot export run folder {not_utf8(path)}: its name is not UTF-8; rename it")
        try:
            runs.append((name, read_run(path)))
        except (CorruptRunFolderError, OSError) as err:
            raise ExportInputError(f"cannot read run folder {path}: {err}") from None
    return runs


def run_settings(runs: list[tuple[str, RunRecords]]) -> dict[str, dict[str, Any]]:
    """Per run name: its method, env and seeds, and the result keys whose values differ between the runs."""
    flat = {name: _result_keys(run.manifest.config) for name, run in runs}
    keys = sorted({k for values in flat.values() for k in values})
    varied = [k for k in keys if len({json.dumps(values.get(k), sort_keys=True, default=str) for values in flat.values()}) > 1]
    settings = {}
    for name, run in runs:
        config = run.manifest.config
        fixed = {
            "method": run.manifest.method,
            "env": (config.get("env") or {}).get("name"),
            "seed": config.get("seed"),
            "task_order_seed": config.get("task_order_seed", config.get("seed")),
        }
        settings[name] = fixed | {k: flat[name].get(k) for k in varied if k not in ("method.name", "env.name", *ALWAYS)}
    return settings


def _episode_row(e: Episode) -> dict[str, Any]:
    row = {
        "episode_id": e.episode_id,
        "task_id": e.task_id,
        "phase": e.phase,
        "split": e.split,
        "epoch": e.epoch,
        "batch_index": e.batch_index,
        "order_index": e.order_index,
        "sample_index": e.sample_index,
        "success": e.success,
        "reward": e.reward,
        "status": e.status,
        "error": e.error,
        "turns": len(e.turns),
        "retrieved": len(e.retrieved),
        "retrieved_ids": ";".join(r.item_id for r in e.retrieved),
        "candidates": e.candidates,
        "injected_chars": e.injected_chars,
        "memory_op_errors": e.memory_op_errors,
        "memory_items_after": e.memory_items_after,
        "memory_bytes_after": e.memory_bytes_after,
        "memory_groups_after": e.memory_groups_after,
        "wall_time": e.wall_time,
    }
    for purpose, usage in (("act", e.act_usage), ("memory", e.memory_usage)):
        row |= {f"{purpose}_{key}": getattr(usage, key) for key in USAGE_KEYS}
    row |= {f"latency_{stage}": seconds for stage, seconds in e.latency_s.items()}
    return row


def _frame(rows: list[dict], settings: dict[str, dict[str, Any]], first: tuple[str, ...]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    setting_columns = list(dict.fromkeys(k for s in settings.values() for k in s))
    for column in setting_columns:
        frame[column] = frame["run"].map(lambda run, column=column: settings[run].get(column))
    return frame[[*first, *setting_columns, *(c for c in frame.columns if c not in (*first, *setting_columns))]]


def episodes_frame(runs: list[tuple[str, RunRecords]]) -> pd.DataFrame:
    """One row per logged episode (poison memories included, status "poison"): the run, its settings, the episode."""
    rows = [{"run": name, "complete": run.complete, **_episode_row(e)} for name, run in runs for e in run.episodes]
    return _frame(rows, run_settings(runs), ("run", "complete"))


def retrievals_frame(runs: list[tuple[str, RunRecords]]) -> pd.DataFrame:
    """One row per retrieved memory of every episode, in rank order (rank 0 first)."""
    rows = [
        {
            "run": name,
            "episode_id": e.episode_id,
            "task_id": e.task_id,
            "phase": e.phase,
            "split": e.split,
            "epoch": e.epoch,
            "success": e.success,
            "rank": rank,
            **r.to_dict(),
        }
        for name, run in runs
        for e in run.episodes
        for rank, r in enumerate(e.retrieved)
    ]
    columns = [
        "run",
        "episode_id",
        "task_id",
        "phase",
        "split",
        "epoch",
        "success",
        "rank",
        "item_id",
        "similarity",
        "q_value",
        "score",
        "source_task_id",
        "source_episode_id",
        "source_epoch",
        "source_success",
    ]
    return _frame(rows, run_settings(runs), tuple(columns)) if rows else pd.DataFrame(columns=columns)


def load_episodes(results_dir: Path | str) -> pd.DataFrame:
    """Every episode of every run folder under `results_dir`, with the runs' settings as columns."""
    return episodes_frame(read_runs(results_dir))


def load_retrievals(results_dir: Path | str) -> pd.DataFrame:
    """Every retrieved memory of every episode of every run folder under `results_dir`."""
    return retrievals_frame(read_runs(results_dir))


def _one_type_per_column(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns whose cells mix types (a setting that is a number in one run, a name in another) as text: Parquet needs one type."""
    mixed = [c for c in frame.columns if frame[c].dtype == object and frame[c].dropna().map(type).nunique() > 1]
    return frame.assign(**{c: frame[c].map(lambda v: v if v is None or isinstance(v, str) else json.dumps(v)) for c in mixed})


def write_tables(frames: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """`name`.parquet and `name`.csv in `out` for each frame, all written under temporary names before the first is renamed
    into place: a killed export leaves the previous files (never a shorter table that reads without error, nor new tables
    beside old ones), but for a kill in the microseconds between two renames."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with contextlib.ExitStack() as renamed_when_all_are_written:  # each `replacing` renames as the stack unwinds
        for name, frame in frames.items():
            frame = _one_type_per_column(frame)
            for path, write in ((out / f"{name}.parquet", frame.to_parquet), (out / f"{name}.csv", frame.to_csv)):
                f = renamed_when_all_are_written.enter_context(replacing(path))
                write(f, index=False)
                f.flush()
                os.fsync(f.fileno())  # here, not as the stack unwinds between renames
                written.append(path)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="memrl-bench-export",
        description="Every episode of every run folder under DIR as a table (Parquet and CSV), with the runs' settings as columns.",
    )
    parser.add_argument(
        "results_dir", type=Path, help="a results folder (searched for run folders holding manifest.json), or one run folder"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write episodes.parquet and episodes.csv (default: RESULTS_DIR/export)"
    )
    parser.add_argument("--retrievals", action="store_true", help="also write retrievals.parquet and .csv: one row per retrieved memory")
    args = parser.parse_args(argv)
    try:
        runs = read_runs(args.results_dir)
        out = args.out if args.out is not None else args.results_dir / "export"
        if (run := damaged_by_writing(out)) is not None:
            raise ExportInputError(f"{out} is the run folder {run} or inside its memory snapshots; choose another --out")
        frames = {"episodes": episodes_frame(runs)} | ({"retrievals": retrievals_frame(runs)} if args.retrievals else {})
        written = write_tables(frames, out)
    except (InputError, OSError) as err:  # ExportInputError, a path no reader can follow; OSError: the output cannot be written
        print(f"memrl-bench-export: error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:  # a file being written is left whole or not at all (runfolder.replacing)
        print("memrl-bench-export: interrupted", file=sys.stderr)
        sys.exit(130)
    print_or_exit("\n".join(map(str, written)), "memrl-bench-export")


if __name__ == "__main__":
    main()
