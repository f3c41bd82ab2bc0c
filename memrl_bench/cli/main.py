"""The `memrl-bench` command: a Hydra app running (or resuming) one run per job.

Every way it can fail ends with one line on stderr and an exit code: 2 for wrong input
(memrl_bench.core.config.InputError: a config value, a file, a run folder another process
is writing, a refused API key; also a full disk), 3 for an LLM server that went down (re-run once it is back), 130
for Ctrl-C. Anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import traceback
import warnings
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import NoReturn

import hydra
import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from memrl_bench.cli.hydra_support import SWEEP_RECORDS, add_config_sources, register_resolvers
from memrl_bench.cli.summary import print_summary
from memrl_bench.core.config import CONF_DIR, GROUPS, InputError
from memrl_bench.core.interrupts import INTERRUPTED, WORKER_LOST, a_sweeps_job
from memrl_bench.core.redaction import (
    ScrubbedStream,
    hide_url_secrets_from_command_line,
    redact_server_text,
    remember_command_line,
    remember_key_variable,
    remember_key_variables,
    scrub,
)
from memrl_bench.core.runfolder import MANIFEST, RunFolder, is_disk_full, remove_new_folders, write_text_atomic
from memrl_bench.llm import LLMOutageError
from memrl_bench.runner.loop import run

SERVER_BACK = "re-run the same command once the server is back"  # how an outage's line ends (exit 3)


def _one_line(err: BaseException) -> str:
    """A multi-line message (Hydra's, YAML's) on one line."""
    lines = [line.strip() for line in str(err).split("Config search path:")[0].splitlines() if line.strip()]
    if isinstance(err.__cause__, OmegaConfBaseException):
        lines.append(str(err.__cause__).splitlines()[0])
    text = lines[0] if lines else type(err).__name__
    for line in lines[1:]:
        text += (" " if text.endswith((".", ":")) else "; ") + line
    return text


def _caused_by(err: BaseException | None, kinds: type[BaseException] | tuple[type[BaseException], ...]) -> BaseException | None:
    """The first error of `kinds` in the chain that led to `err` (Hydra and OmegaConf wrap a resolver's)."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, kinds):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def _outcome(err: BaseException, run_dir: Path | None = None, composing: bool = False) -> tuple[str, int] | None:
    """The line and the exit code for a known failure; None for a bug (and for an exit already decided). `composing`: raised
    while Hydra read the command line and the config files, before any job ran."""
    if isinstance(err, SystemExit):
        return None
    if _caused_by(err, KeyboardInterrupt):  # also when a library turned the interrupt into its own error
        return "interrupted; re-run the same command to resume", INTERRUPTED
    user = _caused_by(err, InputError)
    if user is not None:
        return f"error: {user}", 2
    if getattr(err, "status_code", None) in (401, 403) and type(err).__module__.startswith("openai"):  # the embeddings server's
        return (
            f"error: a server refused the API key ({redact_server_text(str(err))}); set a valid key in the variable embedder.api_key_env "
            "names",
            2,
        )
    if _caused_by(err, BrokenProcessPool):  # a study's worker killed outright
        return WORKER_LOST, 1
    if isinstance(err, LLMOutageError):
        kept = f"every finished batch is kept in {run_dir}; " if run_dir is not None and (run_dir / MANIFEST).exists() else ""
        return f"stopped: {err}; {kept}{SERVER_BACK}", 3
    if isinstance(err, OSError) and (err.filename or is_disk_full(err)):
        where = f"{err.filename}: " if err.filename else ""
        hint = "; free some space and re-run the same command to resume" if is_disk_full(err) else ""
        return f"error: {where}{err.strerror or err}{hint}", 2
    if isinstance(err, (HydraException, OmegaConfBaseException, yaml.YAMLError)):
        return f"error: {_one_line(err)}", 2
    if isinstance(err, ValueError) and _raised_in(err, "hydra"):  # Hydra's own checks of the command line (`env=null`)
        nulls = [arg for arg in sys.argv[1:] if arg.lstrip("+~").split("=", 1)[0] in GROUPS and arg.endswith(("=null", "=~"))]
        named = f" ({', '.join(nulls)}: a config group is chosen by its name)" if nulls else ""
        return f"error: {_one_line(err)}{named}", 2
    if composing and type(err).__module__.startswith("submitit."):
        return _a_jobs_own_line(err)
    if composing and isinstance(err, TimeoutError | multiprocessing.TimeoutError):  # joblib's launcher past its `timeout`
        return "error: a job of the sweep ran past hydra.launcher.timeout; what finished is kept: re-run the same command to resume", 2
    if composing and isinstance(err, AttributeError | AssertionError) and _raised_in(err, "hydra", "omegaconf"):
        # OmegaConf's merge into a node that is None (`hydra.sweeper.params={x:1}`): its own AttributeError (56b)
        return f"error: the command line or a config file could not be read: {_one_line(err)}", 2
    if composing and isinstance(err, (ValueError, RecursionError)):
        # what YAML or OmegaConf cannot take in (a 5,000-digit integer, 200 nested brackets, a lone surrogate in a folder
        # Hydra makes): a traceback before (50b)
        reason = "values nested too deep" if isinstance(err, RecursionError) else _one_line(err)
        return f"error: the command line or a config file could not be read: {reason}", 2
    return None


def _a_jobs_own_line(err: BaseException) -> tuple[str, int] | None:
    """The line a job submitit ran in another process ended on (submitit hands the sweep the job's stderr inside a
    traceback of its own: 40 lines, exit 1), with the code `_outcome` gave it there; None if the job printed none."""
    lines = [line.removeprefix("memrl-bench: ") for line in str(err).splitlines() if line.startswith("memrl-bench: ")]
    if not lines:
        return None
    line = lines[-1]
    if line.startswith("interrupted"):
        return line, INTERRUPTED
    if line.startswith("error: "):
        return line, 2
    return line, 3 if line.endswith(SERVER_BACK) else 1


def _raised_in(err: BaseException, *packages: str) -> bool:
    """`err` was raised by the code of one of `packages` (its innermost frame is theirs)."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and any(f"{os.sep}{package}{os.sep}" in tb.tb_frame.f_code.co_filename for package in packages)


def _exit(line: str, code: int) -> NoReturn:
    if code == INTERRUPTED:
        # An interrupt can land between creating a batch's coroutine and awaiting it; Python
        # would report that at exit, after the one line this exit promises.
        warnings.filterwarnings("ignore", message="coroutine .* was never awaited", category=RuntimeWarning)
    print(f"memrl-bench: {scrub(line)}", file=sys.stderr)
    sys.exit(code)


register_resolvers()
add_config_sources()


def _stop(err: BaseException, run_dir: Path | None = None, composing: bool = False) -> NoReturn:
    """Exit on `err`: its one line and code, or for a bug its scrubbed traceback and exit 1.

    Inside a job this must exit here: an error reaching Hydra makes it print "Error executing
    job with overrides: [...]", every override as typed (URL passwords, ?key= values), unscrubbed.
    """
    outcome = _outcome(err, run_dir, composing)
    if outcome is not None:
        _exit(*outcome)
    if isinstance(err, SystemExit):
        raise err
    # a bug: its traceback, as Python would print it, without secrets (a message may quote a URL)
    print(scrub("".join(traceback.format_exception(err))), end="", file=sys.stderr)
    sys.exit(1)


@hydra.main(config_path=CONF_DIR, config_name="config", version_base=None)
def app(cfg: DictConfig) -> None:
    with a_sweeps_job(HydraConfig.get().mode == RunMode.MULTIRUN):  # in a launcher's worker process: ends with the sweep (55b)
        try:
            _job(cfg)
        except BaseException as err:
            _stop(err)


def _job(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    if cfg.get("study"):
        _run_study(cfg, list(hydra_cfg.overrides.task))
        return
    if hydra_cfg.mode == RunMode.MULTIRUN:
        _scrub_file(Path(hydra_cfg.sweep.dir) / "multirun.yaml")
    run_dir = Path(hydra_cfg.runtime.output_dir)
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True)
    except BaseException as err:  # `~seed`: Hydra made the folder; a failed start leaves nothing it created (20th round)
        RunFolder(run_dir).remove_if_new()
        _stop(err)
    resolved["hydra"] = {"overrides": list(hydra_cfg.overrides.task)}
    try:
        metrics = run(resolved, run_dir)
    except BaseException as err:
        _stop(err, run_dir)
    print_summary(run_dir.name, metrics, run_dir)


def _scrub_file(path: Path) -> None:
    """Hydra's record of a sweep (multirun.yaml), without URL userinfo; only a regular file (a FIFO or a link there is
    refused as the sweep starts, SweepRecordCheck: reading it would hang, writing would go through the link)."""
    if path.is_file() and not path.is_symlink():
        text = path.read_text()
        if scrub(text) != text:
            write_text_atomic(path, scrub(text))


def _run_study(cfg: DictConfig, overrides: list[str]) -> None:
    """A study (conf/experiment/critique_study.yaml): its presets' sweeps, then the findings."""
    from memrl_bench.cli.study import StudyError, passed_on, run_study, study_settings

    results_dir = Path(cfg.results_dir).resolve()
    study_dir = results_dir / cfg.experiment_name
    try:
        study = study_settings(OmegaConf.to_container(cfg.study, resolve=True))
        study_dir.mkdir(parents=True, exist_ok=True)
        timing = run_study(
            study.presets, results_dir, study_dir, passed_on(overrides), study.workers, bool(cfg.progress), study.grids, study.in_order
        )
    except BaseException as err:
        # the folder Hydra made for the study, if this command made it and it is empty: a study refused before its first run
        # (its settings, a grid) leaves none (51b, 52b)
        remove_new_folders(HydraConfig.get().runtime.output_dir)
        if isinstance(err, StudyError):
            _exit(f"error: {err}", 2)
        raise
    print(
        f"{timing['runs']} runs in {timing['runs_wall_s']:.0f} s, findings in {timing['findings_wall_s']:.0f} s ({timing['workers']} "
        "workers)"
    )
    print(f"findings: {study_dir / 'findings.md'}; report: memrl-bench-report {study_dir}")


def main() -> None:
    # Hydra then raises its errors (and the app's) here instead of printing them itself.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    hide_url_secrets_from_command_line()  # Hydra reads sys.argv, a copy
    remember_command_line(sys.argv[1:])
    # the keys of the variables the groups read (OPENAI_API_KEY, any other an override names; one a config file names is
    # remembered as Hydra reads the file: CheckedConfigFiles), before Hydra or a setting's check quotes a refused override
    # that holds one (`llm.api_key=$OPENAI_API_KEY`: 47b)
    remember_key_variable("OPENAI_API_KEY")
    for arg in sys.argv[1:]:
        if "api_key_env" in arg:  # every name in it: Hydra reads `'NAME'`, `= NAME`, `llm={api_key_env:NAME}`, a sweep (54b)
            remember_key_variables(arg)
    sys.stderr = ScrubbedStream(sys.stderr)  # argparse and Hydra print what they refuse, quoting it
    try:
        app()
    except BaseException as err:  # a job's own errors have ended it (app): this one came as Hydra composed the config
        _stop(err, composing=True)
    finally:
        for record in SWEEP_RECORDS:
            _scrub_file(record)


if __name__ == "__main__":
    main()
