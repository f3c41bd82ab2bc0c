"""A study: several Hydra sweeps (presets) run as one command, then their findings.

`memrl-bench +experiment=critique_study` runs every preset listed under `study.presets`
(conf/experiment/critique*.yaml) and writes the findings of the critique's claims to
<results_dir>/critique/findings.md. Each preset's jobs are expanded exactly as Hydra's
basic sweeper expands `memrl-bench +experiment=<preset>` (its own parser and
split_arguments), composed with Hydra's compose API and run by memrl_bench.runner in
`study.workers` processes, so the run folders (names, configs, config hashes, episodes)
are the ones the presets write one by one. Hydra's launcher would spend about 0.25 s of
CPU per job on deep copies of the config, more than a synthetic run itself takes
(0.05 - 0.13 s); sharing one composition among a job's replicates avoids that.

Finished runs are skipped (as every run is), so an interrupted study resumes.
"""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Plain values of conf/config.yaml that only name the replicate: set on a shared composition.
REPLICATE_KEYS = ("seed", "task_order_seed")
# Keys the study sets for every job itself; the user's values of these are not passed on.
_STUDY_KEYS = ("study", "experiment", "results_dir", "progress", "hydra")
CHUNK = 8  # jobs per task of the process pool: small enough to balance, large enough to share compositions


class StudyError(RuntimeError):
    """A job of the study was refused (bad config, protocol violation); names the job."""


@contextmanager
def _compose_here() -> Iterator[None]:
    """Hydra's compose API on conf/, also inside the running `memrl-bench` app (whose global
    Hydra is set aside meanwhile: compose refuses to start while one is initialised)."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from memrl_bench import CONF_DIR

    state = GlobalHydra.instance()
    outer, state.hydra = state.hydra, None
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base=None):
            yield
    finally:
        state.hydra = outer


def expand(preset: str, overrides: list[str]) -> list[list[str]]:
    """Every job's overrides, as Hydra's basic sweeper builds them for
    `memrl-bench +experiment=<preset> <overrides>` (command-line values win over the preset's)."""
    from hydra import compose
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    arguments = [f"+experiment={preset}", *overrides]
    parser = OverridesParser.create()
    fixed = [o.input_line for o in parser.parse_overrides(arguments) if not o.is_sweep_override()]
    with _compose_here():
        params = compose("config", overrides=fixed, return_hydra_config=True).hydra.sweeper.params or {}
    return BasicSweeper.split_arguments(parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + arguments), None)[0]


def run_jobs(jobs: list[list[str]]) -> int:
    """Compose and run jobs as the memrl-bench Hydra app would; the number run.

    Jobs that differ only in REPLICATE_KEYS share one composition (Hydra's compose is
    most of the CPU a synthetic job costs); the keys are then set as their overrides'
    values, before interpolations (task_order_seed: ${seed}) are resolved.
    """
    from hydra import compose
    from hydra._internal.config_loader_impl import get_overrides_dirname
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    from memrl_bench.cli import USER_ERRORS
    from memrl_bench.config import run_name
    from memrl_bench.runner import run

    parser = OverridesParser.create()
    composed: dict[tuple[str, ...], tuple[dict, str, Any]] = {}
    with _compose_here():
        for overrides in jobs:
            parsed = parser.parse_overrides(overrides)
            shared = tuple(o.input_line for o in parsed if o.key_or_group not in REPLICATE_KEYS)
            try:
                if shared not in composed:
                    cfg = compose("config", overrides=list(shared), return_hydra_config=True)
                    task = OmegaConf.to_container(cfg, resolve=False)
                    del task["hydra"]
                    composed[shared] = (task, OmegaConf.select(cfg, "hydra.sweep.dir"), cfg.hydra.job.config.override_dirname)
                task, sweep_dir, naming = composed[shared]
                job = copy.deepcopy(task)
                job.update({o.key_or_group: o.value() for o in parsed if o.key_or_group in REPLICATE_KEYS})
                resolved = OmegaConf.to_container(OmegaConf.create(job), resolve=True)
                resolved["hydra"] = {"overrides": list(overrides)}
                dirname = get_overrides_dirname(parsed, exclude_keys=list(naming.exclude_keys), item_sep=naming.item_sep, kv_sep=naming.kv_sep)
                run(resolved, Path(sweep_dir) / run_name(dirname))  # a failed start removes what it created
            except (HydraException, *USER_ERRORS) as err:
                raise StudyError(f"job {' '.join(overrides)}: {err}") from None
    return len(jobs)


def passed_on(overrides: list[str]) -> list[str]:
    """The command-line overrides that apply to every preset (not the study's own keys)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    keys = [o.key_or_group.lstrip("+~") for o in OverridesParser.create().parse_overrides(overrides)]
    return [line for line, key in zip(overrides, keys) if key.split(".")[0] not in _STUDY_KEYS]


def run_study(presets: list[str], results_dir: Path, study_dir: Path, overrides: list[str], workers: int, progress: bool = False) -> dict:
    """Every preset's jobs in `workers` processes, then the findings in `study_dir`; the timings."""
    from tqdm import tqdm

    from memrl_bench.findings import findings, render_html, render_markdown
    from memrl_bench.runfolder import write_text_atomic

    started = time.perf_counter()
    common = [f"results_dir={results_dir}", "progress=false", *overrides]
    jobs = [job for preset in presets for job in expand(preset, common)]
    chunks = [jobs[i : i + CHUNK] for i in range(0, len(jobs), CHUNK)]
    # fork: the workers inherit the imported harness instead of importing it again
    with ProcessPoolExecutor(max(1, workers), mp_context=multiprocessing.get_context("fork")) as pool, tqdm(total=len(jobs), unit="run", desc="critique study", disable=not progress) as bar:
        for done in pool.map(run_jobs, chunks):
            bar.update(done)
    runs_done = time.perf_counter()
    found = findings(study_dir)
    write_text_atomic(study_dir / "findings.md", render_markdown(found, study_dir))
    write_text_atomic(study_dir / "findings.html", render_html(found, study_dir))
    timing = {
        "presets": presets,
        "runs": len(jobs),
        "workers": workers,
        "runs_wall_s": round(runs_done - started, 2),
        "findings_wall_s": round(time.perf_counter() - runs_done, 2),
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg()[0],
    }
    write_text_atomic(study_dir / "timing.json", json.dumps(timing, indent=1))
    return timing
