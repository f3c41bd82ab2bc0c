"""Run folders into pandas: one row per run, per episode, and per final memory item.

A run folder is any folder holding manifest.json. A run without COMPLETE (or without
metrics.json) still loads: its episodes count, and it is marked incomplete. Runs a
Hydra sweep asked for (its multirun.yaml) but that left no run folder are "missing".
A run folder that cannot be read (a damaged or hand-edited file, a log with duplicate
episode ids, no episodes at all) is skipped with one warning naming it; the others load.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from memrl_bench.config import config_hash, run_name
from memrl_bench.metrics import load_memory_items
from memrl_bench.runfolder import COMPLETE, EPISODES, MANIFEST, CorruptRunFolderError, RunFolder, duplicate_ids

SEED_KEYS = ("seed", "task_order_seed")
# Overrides that say nothing about a run's settings: where results go, plus the seeds
# and the method (shown in their own columns). The first five match conf/config.yaml's
# hydra.job.config.override_dirname.exclude_keys.
NOT_SETTINGS = ("experiment", "experiment_name", "results_dir", "progress", "transcripts", *SEED_KEYS, "method")
STAGES = ("retrieve", "act", "env", "learn")
# Per-episode counts of what the harness did around the model (agent.py), summed per run in the usage table.
HARNESS_COUNTS = ("trimmed_tokens", "format_failures", "truncated_actions", "fuzzy_matched_actions", "context_refusals")
SWEEP_FILE = "multirun.yaml"
USAGE_KEYS = ("calls", "prompt_tokens", "completion_tokens", "cache_hits", "failures")


class ReportInputError(ValueError):
    """A results folder or file cannot be read; the message names it."""


@dataclass
class Results:
    root: Path
    runs: pd.DataFrame  # one row per run folder
    episodes: pd.DataFrame  # one row per episode
    items: pd.DataFrame  # one row per memory item of each complete run's final snapshot
    missing: list[str] = field(default_factory=list)  # sweep jobs without a run folder
    skipped: list[str] = field(default_factory=list)  # run folders that could not be read: "<path>: <why>"


def scan(root: Path) -> tuple[list[Path], list[Path]]:
    """Run folders (holding manifest.json) and sweep folders (holding multirun.yaml) in `root`, sorted."""
    runs, sweeps = [], []
    for here, dirs, files in os.walk(root):
        if SWEEP_FILE in files:
            sweeps.append(Path(here))
        if MANIFEST in files:
            runs.append(Path(here))
            dirs.clear()  # a run folder's subfolders are its own (memory/, .hydra/)
        else:
            dirs[:] = [d for d in dirs if not d.startswith(".")]
    return sorted(runs), sorted(sweeps)


def _override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def settings_overrides(overrides: list[str]) -> tuple[str, ...]:
    """The run's overrides without seeds, method and output places, sorted."""
    return tuple(sorted(o for o in overrides if _override_key(o) not in NOT_SETTINGS))


def settings_label(overrides: list[str]) -> str:
    return ",".join(settings_overrides(overrides)) or "default"


def settings_hash(config: dict) -> str:
    """The config hash without the seeds: runs that differ only in seeds share it."""
    pruned = copy.deepcopy(config)
    for key in SEED_KEYS:
        pruned.pop(key, None)
    return config_hash(pruned)


def _require(mapping: dict, dotted: str, path: Path):
    node = mapping
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ReportInputError(f"{path}: no {dotted!r}")
        node = node[part]
    return node


def _run_row(folder: RunFolder, name: str) -> dict:
    path = folder.path / MANIFEST
    manifest = folder.read_manifest() or {}
    config = _require(manifest, "config", path)
    method = str(_require(config, "method.name", path))
    overrides = config.get("hydra", {}).get("overrides") or folder.path.name.split(",")
    metrics = folder.read_metrics()
    return {
        "run": name,
        "path": str(folder.path),
        "complete": folder.is_complete() and metrics is not None,
        "has_complete_marker": (folder.path / COMPLETE).exists(),
        "has_metrics": metrics is not None,
        "method": method,
        "settings": settings_label(list(overrides)),
        "settings_overrides": settings_overrides(list(overrides)),
        "settings_hash": settings_hash(config),
        "seed": config.get("seed"),
        "task_order_seed": config.get("task_order_seed", config.get("seed")),
        "env": manifest.get("env", {}).get("name") or config.get("env", {}).get("name"),
        "labels": ", ".join(sorted(manifest.get("labels") or [])),
        "config_hash": manifest.get("config_hash"),
        "git_commit": manifest.get("git_commit"),
        "model": json.dumps(manifest["model"], sort_keys=True) if isinstance(manifest.get("model"), dict) else manifest.get("model"),
        "embedder": json.dumps(manifest["embedder"], sort_keys=True) if isinstance(manifest.get("embedder"), dict) else manifest.get("embedder"),
        "split_hashes": manifest.get("split_hashes") or {},
        "split_sizes": manifest.get("split_sizes") or {},
        "started": manifest.get("started"),
        "config": config,
        "metrics": metrics,
    }


def _episode_frame(records: list[dict], run: str) -> pd.DataFrame:
    """The episode rows of one run (built column by column: much faster than row dicts)."""

    def column(get) -> list:
        return [get(r) for r in records]

    infos = column(lambda r: r.get("info") or {})
    frame = {
        "run": [run] * len(records),
        "episode_id": column(lambda r: r["episode_id"]),
        "task_id": column(lambda r: r["task_id"]),
        "phase": column(lambda r: r["phase"]),
        "split": column(lambda r: r["split"]),
        "epoch": column(lambda r: r["epoch"]),
        "batch_index": column(lambda r: r.get("batch_index", 0)),
        "order_index": column(lambda r: r.get("order_index", 0)),
        "sample_index": column(lambda r: r.get("sample_index", 0)),
        "success": column(lambda r: bool(r["success"])),
        "reward": column(lambda r: r.get("reward", 0.0)),
        "status": column(lambda r: r.get("status", "ok")),
        "injected_chars": column(lambda r: r.get("injected_chars", 0)),
        "candidates": column(lambda r: r.get("candidates", 0)),
        "retrieved_ids": column(lambda r: [x["item_id"] for x in r.get("retrieved", [])]),
        "memory_items_after": column(lambda r: r.get("memory_items_after", 0)),
        "memory_bytes_after": column(lambda r: r.get("memory_bytes_after", 0)),
        "memory_groups_after": column(lambda r: r.get("memory_groups_after", 0)),
        "memory_op_errors": column(lambda r: r.get("memory_op_errors", 0)),
        "lesson_utility": [i.get("lesson_utility", np.nan) if i.get("synthetic") else np.nan for i in infos],
        # what the harness did to the model's prompts and outputs (agent.py)
        **{key: [i.get(key, 0) for i in infos] for key in HARNESS_COUNTS if key != "context_refusals"},
        "context_refusals": column(lambda r: int(r.get("status") == "context_exceeded")),
    }
    for purpose in ("act", "memory"):
        usages = column(lambda r, purpose=purpose: r.get(f"{purpose}_usage") or {})
        for key in USAGE_KEYS:
            frame[f"{purpose}_{key}"] = [u.get(key, 0) for u in usages]
    # act latency of an episode answered wholly from the cache is not a latency
    frame["act_all_cached"] = [0 < calls <= hits for calls, hits in zip(frame["act_calls"], frame["act_cache_hits"])]
    latencies = column(lambda r: r.get("latency_s") or {})
    for stage in dict.fromkeys([*STAGES, *(s for lat in latencies for s in lat)]):
        frame[f"latency_{stage}"] = [lat.get(stage, np.nan) for lat in latencies]
    return pd.DataFrame(frame)


def _read_episodes(folder: RunFolder) -> list[dict]:
    """The log, refused when it cannot be a run's: missing beside COMPLETE, empty, or with an episode twice."""
    if folder.is_complete() and not folder.episodes_path.exists():
        raise ReportInputError(f"{folder.path} is marked {COMPLETE} but has no {EPISODES}")
    records = folder.read_episodes()
    if not records:
        raise ReportInputError(f"{folder.episodes_path}: no episodes yet")
    twice = duplicate_ids(records)
    if twice:
        raise ReportInputError(f"{folder.episodes_path} logs {len(twice)} episode ids more than once (e.g. {twice[0]}): two processes wrote this run")
    return records


def _item_rows(folder: RunFolder, run: str) -> list[dict]:
    snapshot = folder.snapshot_path("final")
    return [
        {
            "run": run,
            "item_id": item["id"],
            "source_episode_id": item.get("provenance", {}).get("episode_id"),
            "q_value": item.get("fields", {}).get("q_value", np.nan),
        }
        for item in load_memory_items(snapshot)
    ]


def _read_run(folder: RunFolder, name: str) -> tuple[dict, pd.DataFrame, list[dict]]:
    """One run's row, episode frame and final memory items."""
    row, records = _run_row(folder, name), _read_episodes(folder)
    # Poison (the poisoning experiment's adversarial memories) is training input, never
    # an episode of any score: counted per run, kept out of every rate.
    played = [r for r in records if r.get("status") != "poison"]
    row["poison_memories"] = len(records) - len(played)
    row["poison_retrieval_share"] = ((row["metrics"] or {}).get("poison") or {}).get("share_of_retrievals")
    row["episodes"] = len(played)
    try:
        frame = _episode_frame(played, name)
    except KeyError as err:
        raise ReportInputError(f"{folder.episodes_path}: a record has no {err}") from None
    items = _item_rows(folder, name) if row["complete"] else []  # an unfinished run has no final memory yet
    return row, frame, items


def common_settings(runs: pd.DataFrame) -> list[str]:
    """Overrides every run shares (shown once, not in every variant name)."""
    return sorted(set.intersection(*(set(o) for o in runs["settings_overrides"])))


def _variant_names(runs: pd.DataFrame, root: Path) -> pd.Series:
    """A short readable name per settings hash: method, then the overrides not every run shares.

    Two different settings that read the same (e.g. the same overrides in two
    experiments) get the experiment folder, then a short hash, appended.
    """
    shared = set(common_settings(runs))
    distinct = runs["settings_overrides"].map(lambda o: ",".join(x for x in o if x not in shared))
    name = runs["method"] + np.where(distinct == "", "", " [" + distinct + "]")
    experiment = runs["path"].map(lambda p: str(Path(p).parent.relative_to(root)) if Path(p) != root else "")
    for extra in (experiment, runs["settings_hash"].str[:8]):
        settings_per_name = runs.groupby(name)["settings_hash"].transform("nunique")
        name = name.where(settings_per_name <= 1, name + " (" + extra + ")")
    return name


def expected_sweep_runs(sweep_dir: Path) -> list[str] | None:
    """Run folder names the basic-sweeper Hydra multirun in `sweep_dir` asked for (None if not knowable).

    Expanded with Hydra's own sweeper and naming code, as memrl_bench.cli names run folders.
    """
    from hydra._internal.config_loader_impl import get_overrides_dirname
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        hydra_cfg = OmegaConf.load(sweep_dir / SWEEP_FILE).hydra
        if not str(hydra_cfg.sweeper.get("_target_", "")).endswith("BasicSweeper"):
            return None
        params = [f"{k}={v}" for k, v in (hydra_cfg.sweeper.get("params") or {}).items()]
        parser = OverridesParser.create()
        jobs = BasicSweeper.split_arguments(parser.parse_overrides(params + list(hydra_cfg.overrides.task)), None)
        naming = hydra_cfg.job.config.override_dirname
        return [
            run_name(get_overrides_dirname(parser.parse_overrides(job), list(naming.exclude_keys), naming.item_sep, naming.kv_sep))
            for job in itertools.chain.from_iterable(jobs)
        ]
    except (HydraException, OmegaConfBaseException):
        return None


def _missing_runs(root: Path, sweeps: list[Path]) -> list[str]:
    missing = []
    for sweep_dir in sweeps:
        expected = expected_sweep_runs(sweep_dir) or []
        missing += [str((sweep_dir / name).relative_to(root)) for name in expected if not (sweep_dir / name / MANIFEST).exists()]
    return missing


def load(results_dir: Path) -> Results:
    """Every run folder under `results_dir` (or `results_dir` itself, if it is one)."""
    root = Path(results_dir).resolve()
    if not root.is_dir():
        raise ReportInputError(f"{results_dir}: not a folder")
    paths, sweeps = scan(root)
    if not paths:
        raise ReportInputError(f"{results_dir}: no run folders (folders holding {MANIFEST}) found")
    run_rows, episode_frames, item_rows, skipped = [], [], [], []
    for path in paths:
        name = str(path.relative_to(root)) if path != root else path.name
        try:
            row, frame, items = _read_run(RunFolder(path), name)
        except (ReportInputError, CorruptRunFolderError, OSError, ValueError) as err:
            skipped.append(str(err))
            continue
        run_rows.append(row)
        episode_frames.append(frame)
        item_rows += items
    if not run_rows:
        raise ReportInputError(f"{results_dir}: no readable run folder; " + "; ".join(skipped))
    runs = pd.DataFrame(run_rows)
    runs["variant"] = _variant_names(runs, root)
    runs["status"] = np.where(runs["complete"], "complete", "incomplete")
    # typed even when no run has an episode yet, so joins on these keys still work
    episodes = pd.concat(episode_frames, ignore_index=True).astype({"run": "str", "episode_id": "str", "task_id": "str", "phase": "str", "split": "str", "epoch": "int64", "success": "bool"})
    per_run = runs.set_index("run")[["method", "variant", "seed", "task_order_seed", "labels"]]
    episodes = episodes.join(per_run, on="run")
    episodes["phase_name"] = np.where(episodes["phase"] == "test", episodes["split"], episodes["phase"])
    items = pd.DataFrame(item_rows, columns=["run", "item_id", "source_episode_id", "q_value"]).astype({"run": "str", "item_id": "str", "source_episode_id": "str", "q_value": "float64"})
    return Results(root=root, runs=runs, episodes=episodes, items=items, missing=_missing_runs(root, sweeps), skipped=skipped)
