"""A study: several Hydra sweeps (presets) run as one command, then their findings.

`memrl-bench +experiment=critique_study` runs every preset listed under `study.presets`
(conf/experiment/critique*.yaml) and writes the findings of the critique's claims to
<results_dir>/critique/findings.md. Each preset's jobs are expanded exactly as Hydra's
basic sweeper expands `memrl-bench +experiment=<preset>` (memrl_bench.cli.hydra_support),
composed with Hydra's compose API and run by memrl_bench.runner.loop in
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
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pydantic import Field

from memrl_bench.cli.hydra_support import compose, composing, fixed, parsed, sweep_jobs
from memrl_bench.core import interrupts
from memrl_bench.core.config import MAX_THREADS, InputError, KeyRole, Settings, role_of, run_name, validated

CHUNK = 8  # jobs per task of the process pool: small enough to balance, large enough to share compositions


class StudyError(RuntimeError):
    """A job of the study was refused (bad config, protocol violation); names the job."""


class StudySettings(Settings):
    """A study's own settings (`study:` in its preset)."""

    presets: list[str] = Field(min_length=1, description="The presets whose sweeps the study runs.")
    workers: int = Field(2, ge=1, le=MAX_THREADS, description="Processes running the jobs (all forked as the study starts).")
    grids: list[str] | None = Field(None, description="Overrides per line, each a sweep, crossed with every preset.")
    in_order: bool = Field(False, description="Each preset's jobs finish before the next preset's start.")


def study_settings(values: object) -> StudySettings:
    """`study:` checked: a bad value is one line naming its key (`study.workers=1e5` forked 100,000 harness processes)."""
    return validated(StudySettings, values, "study")


def expand(preset: str, overrides: list[str]) -> list[list[str]]:
    """Every job's overrides, as Hydra's basic sweeper builds them for
    `memrl-bench +experiment=<preset> <overrides>` (command-line values win over the preset's)."""
    arguments = [f"+experiment={preset}", *overrides]
    with composing():
        params = compose(fixed(arguments), hydra_config=True).hydra.sweeper.params or {}
    return sweep_jobs([f"{k}={v}" for k, v in params.items()] + arguments)


def run_jobs(jobs: list[list[str]]) -> int:
    """Compose and run jobs as the memrl-bench Hydra app would; the number run.

    Jobs that differ only in their replicate keys (memrl_bench.core.config.KEY_ROLES) share one
    composition (Hydra's compose is most of the CPU a synthetic job costs); those keys
    are then set as their overrides' values, before interpolations (task_order_seed:
    ${seed}) are resolved.
    """
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    from memrl_bench.runner.loop import run

    composed: dict[tuple[str, ...], tuple[dict, str]] = {}
    with interrupts.study_task(), composing():
        for overrides in jobs:
            job_overrides = parsed(overrides)
            replicate = [o for o in job_overrides if role_of(o.key_or_group) is KeyRole.REPLICATE]
            shared = tuple(o.input_line for o in job_overrides if role_of(o.key_or_group) is not KeyRole.REPLICATE)
            try:
                if shared not in composed:
                    cfg = compose(list(shared), hydra_config=True)
                    task = OmegaConf.to_container(cfg, resolve=False)
                    del task["hydra"]
                    composed[shared] = (task, OmegaConf.select(cfg, "hydra.sweep.dir"))
                task, sweep_dir = composed[shared]
                job = copy.deepcopy(task)
                job.update({o.key_or_group: o.value() for o in replicate})
                resolved = OmegaConf.to_container(OmegaConf.create(job), resolve=True)
                resolved["hydra"] = {"overrides": list(overrides)}
                run(resolved, Path(sweep_dir) / run_name(overrides))  # a failed start removes what it created
            except (HydraException, InputError) as err:
                raise StudyError(f"job {' '.join(overrides)}: {err}") from None
    return len(jobs)


# What the study sets for every job itself; the command line's values of these are not passed on.
_SET_BY_STUDY = ("results_dir", "progress")


def passed_on(overrides: list[str]) -> list[str]:
    """The command-line overrides that apply to every preset: not a preset (the study's own
    +experiment), not Hydra's settings of the study's app, not what the study sets itself."""
    keys = [o.key_or_group.lstrip("+~") for o in parsed(overrides)]
    return [
        line
        for line, key in zip(overrides, keys)
        if role_of(key) is not KeyRole.PRESET and key.split(".")[0] not in ("hydra", *_SET_BY_STUDY)
    ]


def study_jobs(presets: list[str], common: list[str], grids: list[str] | None = None) -> list[list[str]]:
    """Every preset's jobs on every grid (a grid: overrides separated by spaces, put before
    the command line's). A job two grids share (the same overrides: a grid's centre) is run once."""
    jobs = [job for grid in grids or [""] for preset in presets for job in expand(preset, [*grid.split(), *common])]
    return list({tuple(sorted(job)): job for job in jobs}.values())


def run_study(
    presets: list[str],
    results_dir: Path,
    study_dir: Path,
    overrides: list[str],
    workers: int,
    progress: bool = False,
    grids: list[str] | None = None,
    in_order: bool = False,
) -> dict:
    """Every preset's jobs (on every grid) in `workers` processes, then the findings in `study_dir`; the timings.
    `in_order`: each preset's jobs finish before the next preset's start (a later preset reads an earlier one's runs: transfer)."""
    from tqdm import tqdm

    from memrl_bench.core.runfolder import write_texts_atomic
    from memrl_bench.findings import findings, load_runs, render_html, render_markdown
    from memrl_bench.report import sensitivity

    started = time.perf_counter()
    common = [f"results_dir={results_dir}", "progress=false", *overrides]  # _SET_BY_STUDY
    stages = [study_jobs([preset], common, grids) for preset in presets] if in_order else [study_jobs(presets, common, grids)]
    jobs = [job for stage in stages for job in stage]
    # fork: the workers inherit the imported harness instead of importing it again; a study killed outright takes its
    # workers with it (else they play on, holding their run folders, then wait on the dead pool for good)
    fork = multiprocessing.get_context("fork")
    with (
        ProcessPoolExecutor(workers, mp_context=fork, initializer=interrupts.study_worker, initargs=(os.getpid(),)) as pool,
        tqdm(total=len(jobs), unit="run", desc="critique study", disable=not progress) as bar,
    ):
        for stage in stages:
            for done in pool.map(run_jobs, [stage[i : i + CHUNK] for i in range(0, len(stage), CHUNK)]):
                bar.update(done)
    runs_done = time.perf_counter()
    runs = load_runs(study_dir)
    grid = sensitivity.phase_diagrams(runs)
    found = findings(study_dir, runs=sensitivity.at_centre(runs, grid) if grid else runs)
    markdown = render_markdown(found, study_dir) + (sensitivity.render_markdown(grid) if grid else "")
    html = render_html(found, study_dir) + (sensitivity.render_html(grid) if grid else "")
    timing = {
        "presets": presets,
        "grids": grids or [],
        "runs": len(jobs),
        "workers": workers,
        "runs_wall_s": round(runs_done - started, 2),
        "findings_wall_s": round(time.perf_counter() - runs_done, 2),
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg()[0],
    }
    # the three together: a study killed between two writes left new findings.md beside the old findings.html (43b)
    write_texts_atomic(
        {
            study_dir / "findings.md": markdown,
            study_dir / "findings.html": html,
            study_dir / "timing.json": json.dumps(timing, indent=1),
        }
    )
    return timing
