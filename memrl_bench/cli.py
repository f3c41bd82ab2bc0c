"""The `memrl-bench` command: a Hydra app running (or resuming) one run per job."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from memrl_bench import CONF_DIR
from memrl_bench.envs.base import DataMissingError
from memrl_bench.llm import LLMOutageError
from memrl_bench.protocol import ProtocolViolation
from memrl_bench.registry import UnknownNameError
from memrl_bench.runfolder import CorruptRunFolderError
from memrl_bench.runner import ConfigError, ConfigMismatchError, run
from memrl_bench.summary import print_summary

# Errors that mean "the input is wrong": one clear line, exit code 2, no traceback.
USER_ERRORS = (ConfigError, ConfigMismatchError, ProtocolViolation, DataMissingError, UnknownNameError, CorruptRunFolderError)


def _run_name(override_dirname: str) -> str:
    """A run folder name from the command's overrides ("default" without any).

    Names past 200 characters keep their start and end a short hash, as file names
    are limited to 255 bytes.
    """
    name = override_dirname.replace("/", "_").replace("+", "") or "default"
    if len(name) > 200:
        name = f"{name[:180]}...{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return name


OmegaConf.register_new_resolver("run_name", _run_name, replace=True)


def _remove_if_empty(path: Path) -> None:
    """A failed start must not leave a folder that could be mistaken for a result."""
    if path.exists() and not (path / "manifest.json").exists():
        shutil.rmtree(path, ignore_errors=True)




@hydra.main(config_path=CONF_DIR, config_name="config", version_base=None)
def app(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    if cfg.get("study"):
        _run_study(cfg, list(hydra_cfg.overrides.task))
        return
    run_dir = Path(hydra_cfg.runtime.output_dir)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    resolved["hydra"] = {"overrides": list(hydra_cfg.overrides.task)}
    try:
        metrics = run(resolved, run_dir)
    except USER_ERRORS as err:
        _remove_if_empty(run_dir)
        print(f"memrl-bench: error: {err}", file=sys.stderr)
        sys.exit(2)
    except LLMOutageError as err:
        _remove_if_empty(run_dir)
        print(f"memrl-bench: stopped: {err}\n  every finished batch is kept in {run_dir}; re-run the same command to resume once the server is back", file=sys.stderr)
        sys.exit(3)
    print_summary(run_dir.name, metrics, run_dir)


def _run_study(cfg: DictConfig, overrides: list[str]) -> None:
    """A study (conf/experiment/critique_study.yaml): its presets' sweeps, then the findings."""
    from memrl_bench.study import StudyError, passed_on, run_study

    results_dir = Path(cfg.results_dir).resolve()
    study_dir = results_dir / cfg.experiment_name
    study_dir.mkdir(parents=True, exist_ok=True)
    try:
        timing = run_study(list(cfg.study.presets), results_dir, study_dir, passed_on(overrides), int(cfg.study.workers), bool(cfg.progress))
    except StudyError as err:
        print(f"memrl-bench: error: {err}", file=sys.stderr)
        sys.exit(2)
    print(f"{timing['runs']} runs in {timing['runs_wall_s']:.0f} s, findings in {timing['findings_wall_s']:.0f} s ({timing['workers']} workers)")
    print(f"findings: {study_dir / 'findings.md'}; report: memrl-bench-report {study_dir}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
