"""Run folders into pandas: one row per run, per episode, and per final memory item.

A run folder is any folder holding manifest.json. A run without COMPLETE (or without
metrics.json) still loads: its episodes count, and it is marked incomplete. Runs a
Hydra sweep asked for (its multirun.yaml) but that left no run folder are "missing".
A run folder that cannot be read (a damaged or hand-edited file, a log with duplicate
episode ids, no episodes at all) is skipped with one warning naming it; the others load.
Runs are read with memrl_bench.core.records; a run that two presets both ran (equal configs
and seeds in two folders) counts once. Variants are conditions, placed on the folder's
axes by memrl_bench.report.axes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memrl_bench import protocols
from memrl_bench.core import metrics
from memrl_bench.core.bounded_yaml import YAMLTooLargeError, bounded_yaml
from memrl_bench.core.config import InputError, KeyRole, override_key, role_of, run_name
from memrl_bench.core.errors import not_utf8, resolved
from memrl_bench.core.records import RunRecords, read_run
from memrl_bench.core.registry import UnknownNameError
from memrl_bench.core.runfolder import COMPLETE, MANIFEST, CorruptRunFolderError, walk
from memrl_bench.core.schema import INFO_COUNTS, Episode
from memrl_bench.protocols import drift, retry
from memrl_bench.report.axes import Place, condition_key, places

# Overrides that are a run's settings (the report's variants): the method's settings, the
# conditions and the kind of evaluation (memrl_bench.core.config.KEY_ROLES); the method itself
# and the seeds have their own columns.
SETTING_ROLES = (KeyRole.ARM, KeyRole.CONDITION, KeyRole.EVALUATION)
LEARNING_PHASES = ("train", "validation")  # phases scored every epoch (CSR, forgetting)
RATE_COLUMNS = ("sr", "csr", "forgetting_rate", "forgetting_of_solved")
STAGES = ("retrieve", "act", "env", "learn")
# Per-episode counts of what the harness did around the model (agent.py), summed per run in the usage table:
# counts the episode's info holds (core.schema.INFO_COUNTS), then episodes ended with a status of their own (column -> status).
STATUS_COUNTS = {"context_refusals": "context_exceeded", "env_limits": "env_limit", "tampered": "tampered", "cut_unanswered": "truncated"}
HARNESS_COUNTS = (*INFO_COUNTS, *STATUS_COUNTS)
SWEEP_FILE = "multirun.yaml"
USAGE_KEYS = ("calls", "prompt_tokens", "completion_tokens", "cache_hits", "failures")


class ReportInputError(InputError, ValueError):
    """A results folder or file cannot be read; the message names it."""


@dataclass
class Results:
    root: Path
    runs: pd.DataFrame  # one row per run folder
    episodes: pd.DataFrame  # one row per episode
    items: pd.DataFrame  # one row per memory item of each complete run's final snapshot
    rates: pd.DataFrame  # one row per (run, phase_name, epoch): RATE_COLUMNS, computed by memrl_bench.core.metrics from the typed episodes
    places: dict[str, Place]  # variant -> where it sits on the folder's axes (memrl_bench.report.axes)
    missing: list[str] = field(default_factory=list)  # sweep jobs without a run folder
    skipped: list[str] = field(default_factory=list)  # run folders that could not be read: "<path>: <why>"
    repeated: list[str] = field(default_factory=list)  # run folders holding a run already loaded from another folder, counted once
    kept: dict[str, Any] = field(default_factory=dict)  # run -> what load's `keep` made of its records (the viewer's page data)


def scan(root: Path) -> tuple[list[Path], list[Path]]:
    """Run folders (holding manifest.json) and sweep folders (holding multirun.yaml) in `root`, sorted."""
    runs, sweeps = [], []
    for here, dirs, files in walk(root):
        if SWEEP_FILE in files:
            sweeps.append(Path(here))
        if MANIFEST in files:
            runs.append(Path(here))
            dirs.clear()  # a run folder's subfolders are its own (memory/, .hydra/)
        else:
            dirs[:] = [d for d in dirs if not d.startswith(".")]
    return sorted(runs), sorted(sweeps)


def settings_overrides(overrides: list[str]) -> tuple[str, ...]:
    """The run's overrides that are settings (not the method, seeds, presets, places or operation), sorted."""
    return tuple(sorted(o for o in overrides if role_of(o) in SETTING_ROLES and override_key(o) != "method"))


def _run_row(run: RunRecords, name: str) -> dict:
    manifest, config = run.manifest, run.manifest.config
    overrides = manifest.overrides or run.path.name.split(",")
    played = run.played  # poison (the poisoning experiment's adversarial memories) is training input, never scored
    return {
        "run": name,
        "path": str(run.path),
        "complete": run.complete,
        "has_complete_marker": (run.path / COMPLETE).exists(),
        "has_metrics": run.metrics is not None,
        "method": manifest.method,
        "settings_overrides": settings_overrides(overrides),
        "condition_key": condition_key(config),
        "seed": config.get("seed"),
        "task_order_seed": config.get("task_order_seed", config.get("seed")),
        "env": manifest.env.name if manifest.env is not None else (config.get("env") or {}).get("name"),
        "labels": ", ".join(sorted(manifest.labels)),
        "config_hash": manifest.config_hash,
        "git_commit": manifest.git_commit,
        "model": json.dumps(manifest.model, sort_keys=True) if isinstance(manifest.model, dict) else manifest.model,
        **({"memory_model": manifest.memory_model.get("model")} if manifest.memory_model else {}),  # a writer apart (memory_llm)
        "embedder": json.dumps(manifest.embedder, sort_keys=True) if isinstance(manifest.embedder, dict) else manifest.embedder,
        "split_hashes": manifest.split_hashes,
        "split_sizes": manifest.split_sizes,
        "started": manifest.started,
        "config": config,
        "poison_memories": sum(not e.played for e in run.episodes),
        "poison_retrieval_share": (run.metrics.poison or {}).get("share_of_retrievals") if run.metrics is not None else None,
        **{f"drift_{key}": (run.metrics.drift or {}).get(key) if run.metrics is not None else None for key in drift.REPORTED},
        **{
            f"retry_{key}": value
            for key, value in retry.report_numbers(
                run.metrics.retries if run.metrics is not None else None, manifest.env.roles if manifest.env else None
            ).items()
        },
        "episodes": len(played),
        "protocol_metrics": {
            k: getattr(run.metrics, k, None)
            for k in protocols.named(manifest.config.get("protocol") or {}).metrics_keys
            if k != "drift" and getattr(run.metrics, k, None)
        }
        if run.metrics is not None
        else {},
    }


def _episode_frame(records: list[Episode], run: str) -> pd.DataFrame:
    """The episode rows of one run (built column by column: much faster than row dicts)."""

    def column(get) -> list:
        return [get(r) for r in records]

    frame = {
        "run": [run] * len(records),
        "episode_id": column(lambda r: r.episode_id),
        "task_id": column(lambda r: r.task_id),
        "phase": column(lambda r: r.phase),
        "split": column(lambda r: r.split),
        "epoch": column(lambda r: r.epoch),
        "batch_index": column(lambda r: r.batch_index),
        "order_index": column(lambda r: r.order_index),
        "sample_index": column(lambda r: r.sample_index),
        "success": column(lambda r: r.success),
        "reward": column(lambda r: r.reward),
        "status": column(lambda r: r.status),
        # multiple choice (memrl_bench.core.answers): the key, the answer scored, the free reading's when answers were constrained
        "answer_key": column(lambda r: r.info.get("answer_key")),
        "answer": column(lambda r: r.info.get("answer")),
        "free_answer": column(lambda r: r.info.get("free_answer", r.info.get("answer"))),
        "injected_chars": column(lambda r: r.injected_chars),
        "candidates": column(lambda r: r.candidates),
        "retrieved_ids": column(lambda r: [x.item_id for x in r.retrieved]),
        "memory_items_after": column(lambda r: r.memory_items_after),
        "memory_bytes_after": column(lambda r: r.memory_bytes_after),
        "memory_groups_after": column(lambda r: r.memory_groups_after),
        "memory_op_errors": column(lambda r: r.memory_op_errors),
        "lesson_utility": column(lambda r: r.info.get("lesson_utility", np.nan) if r.info.get("synthetic") else np.nan),
        # what the harness did to the model's prompts and outputs (agent.py)
        **{key: column(lambda r, key=key: r.info.get(key, 0)) for key in INFO_COUNTS},
        **{key: column(lambda r, status=status: int(r.status == status)) for key, status in STATUS_COUNTS.items()},
    }
    for purpose in ("act", "memory"):
        usages = column(lambda r, purpose=purpose: getattr(r, f"{purpose}_usage"))
        for key in USAGE_KEYS:
            frame[f"{purpose}_{key}"] = [getattr(u, key) for u in usages]
    # act latency of an episode answered wholly from the cache is not a latency
    frame["act_all_cached"] = [0 < calls <= hits for calls, hits in zip(frame["act_calls"], frame["act_cache_hits"])]
    latencies = column(lambda r: r.latency_s)
    for stage in dict.fromkeys([*STAGES, *(s for lat in latencies for s in lat)]):
        frame[f"latency_{stage}"] = [lat.get(stage, np.nan) for lat in latencies]
    return pd.DataFrame(frame)


def _item_rows(run: RunRecords, name: str) -> list[dict]:
    rows = []
    for item in run.items:
        q_value = item.fields.get("q_value", np.nan)
        if q_value is None:
            q_value = np.nan
        if not isinstance(q_value, int | float):  # a string, list or object in a snapshot sealed again by hand (round 25b)
            raise CorruptRunFolderError(f"{name}: the final memory's item {item.id} has a q_value that is not a number")
        rows.append({"run": name, "item_id": item.id, "source_episode_id": item.provenance.episode_id, "q_value": q_value})
    return rows


def _rate_rows(records: list[Episode], name: str) -> list[dict]:
    """SR per phase and epoch, and CSR and both forgetting rates of the learning phases, as metrics.json has them."""
    rows = []
    for phase, by_epoch in metrics.success_rates(records).items():
        csr = metrics.cumulative_success_rates(records, phase) if phase in LEARNING_PHASES else {}
        forgetting = metrics.forgetting_rates(records, phase) if phase in LEARNING_PHASES else {}
        for epoch, rate in by_epoch.items():
            rows.append(
                {
                    "run": name,
                    "phase_name": phase,
                    "epoch": epoch,
                    "sr": rate,
                    "csr": csr.get(epoch, np.nan),
                    **{k: (by[epoch] if by.get(epoch) is not None else np.nan) for k, by in forgetting.items()},
                }
            )
    return rows


def _read_run(path: Path, name: str) -> tuple[RunRecords, dict, pd.DataFrame, list[dict], list[dict]]:
    """One run's records, row, episode frame (played episodes only), final memory items (complete runs only) and rates."""
    run = read_run(path)
    return run, _run_row(run, name), _episode_frame(run.played, name), _item_rows(run, name), _rate_rows(run.played, name)


def common_settings(runs: pd.DataFrame) -> list[str]:
    """Overrides every run shares (shown once, not in every variant name)."""
    return sorted(set.intersection(*(set(o) for o in runs["settings_overrides"])))


def _with_places(runs: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Place]]:
    """Each run's variant (the label of its condition's place on the folder's axes) and the places by label."""
    by_condition = places(dict(zip(runs["condition_key"], runs["config"])))
    label = runs["condition_key"].map(lambda key: by_condition[key].label)
    columns = {
        "variant": label,
        "family": runs["condition_key"].map(lambda key: by_condition[key].family),
        "condition": runs["condition_key"].map(lambda key: by_condition[key].condition_label),
    }
    return runs.assign(**columns), {place.label: place for place in by_condition.values()}


def expected_sweep_runs(sweep_dir: Path) -> list[str] | None:
    """Run folder names the basic-sweeper Hydra multirun in `sweep_dir` asked for (None if not knowable).

    Expanded as Hydra's basic sweeper expands a sweep (memrl_bench.cli.hydra_support) and
    named as memrl_bench.cli.main names run folders.
    """
    import yaml
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from memrl_bench.cli.hydra_support import SweepValueError, basic_sweep_arguments, sweep_jobs

    path = sweep_dir / SWEEP_FILE
    try:
        # plain YAML, as written: OmegaConf would resolve interpolations, and `${oc.env:OPENAI_API_KEY}` added to a sweep's
        # record put the key of whoever made the report into its page (round 25b)
        hydra_cfg = yaml.safe_load(bounded_yaml(path))["hydra"]
        arguments = basic_sweep_arguments(hydra_cfg)
        if arguments is None:
            return None
        longest = max(map(len, arguments), default=0)
        if longest > MAX_RECORDED_OVERRIDE_CHARS or sum(map(len, arguments)) > 4 * MAX_RECORDED_OVERRIDE_CHARS:
            # Hydra's parser takes time growing with the square of an override's length: one list of 80 KB in an edited
            # record stalled the report 13 minutes, a 1 MiB one would take about a day (52b)
            raise SweepValueError(f"an override of {longest} characters, past {MAX_RECORDED_OVERRIDE_CHARS} (or all past 4 times that)")
        return [run_name(job) for job in sweep_jobs(arguments)]
    except (HydraException, OmegaConfBaseException):
        return None
    except (
        yaml.YAMLError,
        UnicodeDecodeError,
        OSError,
        AttributeError,
        KeyError,
        TypeError,
        CorruptRunFolderError,
        YAMLTooLargeError,
        SweepValueError,
    ) as err:  # damaged, hostile, or not Hydra's record
        what = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
        raise ReportInputError(
            f"{path} is not a readable record of a Hydra sweep ({type(err).__name__}: {what}); repair it, or move it away to report "
            "without listing the sweep's missing runs"
        ) from None


MAX_RECORDED_OVERRIDE_CHARS = 4_000  # an override as a sweep's record holds it (0.9 s to parse: seed=0,1,...,999 is 3,894)


def _missing_runs(root: Path, sweeps: list[Path]) -> list[str]:
    missing = []
    for sweep_dir in sweeps:
        expected = expected_sweep_runs(sweep_dir) or []
        missing += [str((sweep_dir / name).relative_to(root)) for name in expected if not (sweep_dir / name / MANIFEST).exists()]
    return missing


def load(results_dir: Path, keep: Callable[[RunRecords, str], Any] | None = None) -> Results:
    """Every run folder under `results_dir` (or `results_dir` itself, if it is one).

    `keep(records, run name)`, when given, is called for each loaded run while its records
    are in memory; Results.kept holds what it returns, so that a reader of more than the
    frames (the report's viewer) need not read the run again.
    """
    root = resolved(results_dir)
    if not root.is_dir():
        raise ReportInputError(f"{results_dir}: not a folder")
    if (shown := not_utf8(root)) is not None:  # the tables hold each run's path as text (60b: pyarrow's traceback)
        raise ReportInputError(f"{shown}: its path is not UTF-8; rename it")
    paths, sweeps = scan(root)
    if not paths:
        raise ReportInputError(f"{results_dir}: no run folders (folders holding {MANIFEST}) found")
    run_rows, episode_frames, item_rows, rate_rows, skipped, repeated, kept = [], [], [], [], [], [], {}
    first_of: dict[tuple, str] = {}
    for path in paths:
        name = str(path.relative_to(root)) if path != root else path.name
        try:
            run, row, frame, items, rates = _read_run(path, name)
        except (ReportInputError, CorruptRunFolderError, OSError, ValueError) as err:
            skipped.append(str(err))
            continue
        except UnknownNameError as err:  # a protocol (or a part) another version of the harness has and this one lacks
            skipped.append(f"{path}: {err}")
            continue
        identity = (row["condition_key"], row["seed"], row["task_order_seed"])
        if identity in first_of:  # two presets ran the same run (the order study's reference is the main study's run)
            repeated.append(f"{name} (the same run as {first_of[identity]})")
            continue
        first_of[identity] = name
        run_rows.append(row)
        episode_frames.append(frame)
        item_rows += items
        rate_rows += rates
        if keep is not None:
            kept[name] = keep(run, name)
    if not run_rows:
        raise ReportInputError(f"{results_dir}: no readable run folder; " + "; ".join(skipped))
    runs, variant_places = _with_places(pd.DataFrame(run_rows))
    runs["status"] = np.where(runs["complete"], "complete", "incomplete")
    # typed even when no run has an episode yet, so joins on these keys still work
    episodes = pd.concat(episode_frames, ignore_index=True).astype(
        {
            "run": "str",
            "episode_id": "str",
            "task_id": "str",
            "phase": "str",
            "split": "str",
            "epoch": "int64",
            "success": "bool",
            "act_all_cached": "bool",  # a run with no played episode (a poison batch, then a stop) left it untyped (round 25b)
        }
    )
    per_run = runs.set_index("run")[["method", "variant", "seed", "task_order_seed", "labels"]]
    episodes = episodes.join(per_run, on="run")
    episodes["phase_name"] = np.where(episodes["phase"] == "test", episodes["split"], episodes["phase"])
    items = pd.DataFrame(item_rows, columns=["run", "item_id", "source_episode_id", "q_value"]).astype(
        {"run": "str", "item_id": "str", "source_episode_id": "str", "q_value": "float64"}
    )
    rates = pd.DataFrame(rate_rows, columns=["run", "phase_name", "epoch", *RATE_COLUMNS])
    return Results(
        root=root,
        runs=runs,
        episodes=episodes,
        items=items,
        rates=rates,
        places=variant_places,
        missing=_missing_runs(root, sweeps),
        skipped=skipped,
        repeated=repeated,
        kept=kept,
    )
