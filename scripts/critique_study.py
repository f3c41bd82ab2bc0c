"""The critique study (issue 8): every critique preset, then the findings section.

    python scripts/critique_study.py --results-dir results                # the whole study
    python scripts/critique_study.py -- env.harmful_early_share=0.3       # overrides for every preset
    python scripts/critique_study.py --launcher hydra                     # through the Hydra CLI

Each preset in conf/experiment/critique*.yaml is a Hydra sweep; the study is the same
as running `memrl-bench +experiment=<preset> results_dir=<dir>` for every preset, and
writes the same run folders (names, configs, config hashes). Launchers:

- inprocess (default): the jobs of every preset are expanded exactly as Hydra's basic
  sweeper expands them (its own parser and split_arguments), composed with Hydra's
  compose API and run by memrl_bench.runner in --workers processes. Hydra's launcher
  spends about 0.25 s of CPU per job on deep copies of the config, more than a
  synthetic run itself takes (0.05 - 0.13 s), so this is about 3x less CPU.
- hydra: one `python -m memrl_bench +experiment=<preset>` process per preset (Hydra's
  basic launcher, jobs in sequence), --workers presets at a time.
- joblib: as hydra, with hydra/launcher=joblib and --workers joblib workers per preset.

Finished runs are skipped, so an interrupted study resumes. At the end the findings
(memrl_bench.findings) are written to <results-dir>/critique/findings.md and
findings.html, and the wall and CPU time of each step to <results-dir>/critique/timing.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = str(ROOT / "conf")
# Plain values of conf/config.yaml that only name the replicate: set on a shared composition.
REPLICATE_KEYS = ("seed", "task_order_seed")
# Largest first, so that parallel presets end with the short ones.
PRESETS = ("critique", "critique_softmax", "critique_epsilon", "critique_bandit", "critique_order", "critique_fairness", "critique_passk")
sys.path.insert(0, str(ROOT))


class StudyError(RuntimeError):
    """A job of the study was refused (bad config, protocol violation); names the job."""


def expand(preset: str, overrides: list[str]) -> list[list[str]]:
    """Every job's overrides, as Hydra's basic sweeper builds them for
    `memrl-bench +experiment=<preset> <overrides>` (command-line values win over the preset's)."""
    from hydra import compose, initialize_config_dir
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    arguments = [f"+experiment={preset}", *overrides]
    parser = OverridesParser.create()
    fixed = [o.input_line for o in parser.parse_overrides(arguments) if not o.is_sweep_override()]
    with initialize_config_dir(config_dir=CONF_DIR, version_base=None):
        params = compose("config", overrides=fixed, return_hydra_config=True).hydra.sweeper.params
    return BasicSweeper.split_arguments(parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + arguments), None)[0]


def run_jobs(jobs: list[list[str]]) -> int:
    """Compose and run jobs as the memrl-bench Hydra app would; the number run.

    Jobs that differ only in REPLICATE_KEYS share one composition (Hydra's compose is
    most of the CPU a synthetic job costs); the keys are then set as their overrides'
    values, before interpolations (task_order_seed: ${seed}) are resolved.
    """
    from hydra import compose, initialize_config_dir
    from hydra._internal.config_loader_impl import get_overrides_dirname
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    from memrl_bench.cli import USER_ERRORS, _remove_if_empty, _run_name
    from memrl_bench.runner import run

    parser = OverridesParser.create()
    composed: dict[tuple[str, ...], tuple[dict, str, Any]] = {}
    with initialize_config_dir(config_dir=CONF_DIR, version_base=None):
        for overrides in jobs:
            parsed = parser.parse_overrides(overrides)
            shared = tuple(o.input_line for o in parsed if o.key_or_group not in REPLICATE_KEYS)
            run_dir = None
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
                run_dir = Path(sweep_dir) / _run_name(dirname)
                run(resolved, run_dir)
            except (HydraException, *USER_ERRORS) as err:
                if run_dir is not None:
                    _remove_if_empty(run_dir)
                raise StudyError(f"job {' '.join(overrides)}: {err}") from None
    return len(jobs)


def run_inprocess(presets: list[str], results_dir: Path, overrides: list[str], workers: int) -> list[dict]:
    """Every preset's jobs, interleaved over `workers` processes in chunks of 8."""
    common = [f"results_dir={results_dir}", "progress=false", *overrides]
    jobs = [job for preset in presets for job in expand(preset, common)]
    chunks = [jobs[i : i + 8] for i in range(0, len(jobs), 8)]
    started = time.perf_counter()
    with ProcessPoolExecutor(max(1, workers), mp_context=multiprocessing.get_context("fork")) as pool:
        done = sum(pool.map(run_jobs, chunks))
    return [{"preset": "+".join(presets), "runs": done, "wall_s": time.perf_counter() - started}]


def run_cli(preset: str, results_dir: Path, overrides: list[str], log_dir: Path, joblib_workers: int | None) -> dict:
    """One preset through the Hydra CLI in a child process; its wall and CPU seconds (wait4)."""
    log = log_dir / f"{preset}.log"
    launcher = ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={joblib_workers}"] if joblib_workers else []
    command = [sys.executable, "-m", "memrl_bench", f"+experiment={preset}", f"results_dir={results_dir}", "progress=false", *launcher, *overrides]
    started = time.perf_counter()
    with open(log, "w") as out:
        child = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"critique study: preset {preset} failed (exit {code}); see {log}")
    runs = sum(1 for line in log.read_text().splitlines() if "[HYDRA] \t#" in line)
    return {"preset": preset, "runs": runs, "wall_s": time.perf_counter() - started, "cpu_s": usage.ru_utime + usage.ru_stime}


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results-dir", type=Path, default=Path("results"))
    parser.add_argument("--launcher", choices=("inprocess", "hydra", "joblib"), default="inprocess")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes running jobs (inprocess, joblib) or presets (hydra); default 2")
    parser.add_argument("--presets", nargs="*", default=list(PRESETS))
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for every preset (after --)")
    args = parser.parse_args()
    results_dir = args.results_dir.resolve()
    out_dir = results_dir / "critique"
    log_dir = out_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)

    started, cpu_before = time.perf_counter(), cpu_seconds()
    if args.launcher == "inprocess":
        try:
            steps = run_inprocess(args.presets, results_dir, args.overrides, args.workers)
        except StudyError as err:
            print(f"critique study: error: {err}", file=sys.stderr)
            sys.exit(2)
    else:
        presets_at_once = args.workers if args.launcher == "hydra" else 1
        joblib_workers = args.workers if args.launcher == "joblib" else None
        with ThreadPoolExecutor(presets_at_once) as pool:
            steps = list(pool.map(lambda p: run_cli(p, results_dir, args.overrides, log_dir, joblib_workers), args.presets))
    runs_done, cpu_runs = time.perf_counter(), cpu_seconds()

    from memrl_bench.findings import findings, render_html, render_markdown

    found = findings(out_dir)
    (out_dir / "findings.md").write_text(render_markdown(found, out_dir))
    (out_dir / "findings.html").write_text(render_html(found, out_dir))
    timing = {
        "launcher": args.launcher,
        "workers": args.workers,
        "steps": steps,
        "runs_wall_s": runs_done - started,
        "runs_cpu_s": cpu_runs - cpu_before,
        "findings_wall_s": time.perf_counter() - runs_done,
        "findings_cpu_s": cpu_seconds() - cpu_runs,
        "total_wall_s": time.perf_counter() - started,
        "total_cpu_s": cpu_seconds() - cpu_before,
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
    }
    (out_dir / "timing.json").write_text(json.dumps(timing, indent=1))
    for s in steps:
        print(f"{s['preset']:<24} {s['runs']:>4} runs  wall {s['wall_s']:6.1f} s" + (f"  cpu {s['cpu_s']:6.1f} s" if "cpu_s" in s else ""))
    print(f"runs      wall {timing['runs_wall_s']:6.1f} s  cpu {timing['runs_cpu_s']:6.1f} s  ({args.launcher}, {args.workers} workers)")
    print(f"findings  wall {timing['findings_wall_s']:6.1f} s  cpu {timing['findings_cpu_s']:6.1f} s")
    print(f"total     wall {timing['total_wall_s']:6.1f} s  cpu {timing['total_cpu_s']:6.1f} s  (load average at end {timing['load_average_at_end'][0]:.1f} on {timing['cpus']} CPUs)")
    print(f"-> {out_dir / 'findings.md'}")


if __name__ == "__main__":
    main()
