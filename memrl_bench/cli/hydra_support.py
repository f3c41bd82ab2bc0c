"""What the harness takes from Hydra besides `@hydra.main`: the resolvers conf/config.yaml
names its folders with, the config folders of installed packages on the search path, the
defaults of each part's settings model as configs (`settings/<kind>/<name>`, which the YAMLs of
conf/ start from), config files read within bounds, composing conf/ from code, and a sweep's
jobs as Hydra's basic sweeper expands them.

The only module that reaches below Hydra's documented API (it swaps the global Hydra
state aside so that compose runs inside the running app, it puts its own reader of config
files in the place of Hydra's, and it repeats the basic sweeper's expansion with the public
override parser). tests/unit/test_hydra_support.py checks them against Hydra itself, so a
Hydra upgrade that changes them fails there, loudly, and nowhere else.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra._internal.core_plugins.file_config_source import FileConfigSource
from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.global_hydra import GlobalHydra
from hydra.core.object_type import ObjectType
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.plugins import Plugins
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import DictConfig, ListConfig, OmegaConf

from memrl_bench.core import registry
from memrl_bench.core.bounded_yaml import YAMLTooLargeError, bounded_yaml
from memrl_bench.core.config import CONF_DIR, NAMED_BY, ConfigError, InputError, defaults_of, results_folder, run_name
from memrl_bench.core.interrupts import note_the_sweep, watch_the_sweep
from memrl_bench.core.redaction import remember_key_variables, scrub
from memrl_bench.core.runfolder import CorruptRunFolderError, note_new


# Resolvers of conf/config.yaml's hydra.run.dir and hydra.sweep.dir/subdir. Hydra
# evaluates them just before it creates the folder: they check results_dir and
# experiment_name first, name the run from the job's overrides (memrl_bench.core.config.run_name),
# and note which folders do not exist yet, so that a failed start removes only those.
def _experiment_folder(results_dir: str, experiment_name: str) -> str:
    path = results_folder(results_dir, experiment_name)
    note_new(path)  # a study's own folder (its presets' hydra.run.dir): a study refused before it ran leaves none
    return str(path)


def _run_folder(results_dir: str, experiment_name: str, overrides: list[str]) -> str:
    path = results_folder(results_dir, experiment_name) / run_name(overrides)
    note_new(path)
    return str(path)


def _job_folder(sweep_dir: str, overrides: list[str]) -> str:
    name = run_name(overrides)
    note_new(Path(sweep_dir) / name)
    return name


def dotted_items(value: Any) -> Iterator[tuple[str, Any]]:
    """(dotted key, node) of every node below `value`, nested mappings and lists as OmegaConf.to_container gives them."""
    todo = [("", value)]
    while todo:
        dotted, node = todo.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, item in items:
            where = f"{dotted}.{key}" if dotted else str(key)
            yield where, item
            todo.append((where, item))


SWEEP_RECORDS: list[Path] = []  # the records (multirun.yaml) of the sweeps this process started: scrubbed as it ends


# launchers whose jobs run in worker processes on this host, which end with the sweep (interrupts.a_sweeps_job: 55b);
# a cluster's (submitit's Slurm) are meant to outlive the process that submitted them
JOBLIB_LAUNCHER = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
LOCAL_LAUNCHERS = (JOBLIB_LAUNCHER, "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher")
JOBS_ON_DISK = "hydra_plugins.hydra_submitit_launcher."  # launchers that pickle every job, its settings too, into a folder


def joblib_workers_watch_the_sweep() -> None:
    """joblib's workers (loky's, the only backend Hydra's launcher uses) watch the sweep from their start, not only from
    their first job's: a worker that had no job yet when the sweep was killed waited on its queue for good, holding the
    sweep's stderr open (56b). joblib's own registry makes "loky" a LokyBackend with this initializer, in this process."""
    from joblib import register_parallel_backend
    from joblib._parallel_backends import LokyBackend

    register_parallel_backend("loky", functools.partial(LokyBackend, initializer=watch_the_sweep))


def refuse_secrets_written_with_the_jobs(settings: dict, launcher: str) -> None:
    """A sweep whose launcher writes its jobs to disk (submitit's `.submitit` folder: every job's overrides and its whole
    config, the `hydra` node's too) holds no URL password, key-like URL parameter or remembered key in its `settings` (as
    written) or its overrides: both were written there in clear (55b; in `hydra.sweeper.params` or `hydra.job.env_set`,
    56b)."""
    overrides = [(f"override {override.split('=', 1)[0]}", override) for override in settings["hydra"]["overrides"]["task"]]
    for where, value in [*overrides, *dotted_items(settings)]:  # an override named as typed first
        if isinstance(value, str) and scrub(value) != value:
            raise SweepRefused from ConfigError(
                f"{scrub(where)}: holds a URL password or a key, and hydra/launcher={launcher} writes every job, "
                "its settings too, to disk; give the URL through an environment variable (llm.base_url='${oc.env:MY_URL}') and "
                "a key through api_key_env"
            )


class SweepRecordCheck(Callback):
    """Before a sweep starts, its record (`multirun.yaml`, which Hydra rewrites) is a regular file or absent: Hydra's open
    for writing hung on a FIFO there, with no output (round 25b), and would write through a link. The record's path is
    kept in SWEEP_RECORDS: Hydra writes every override into it as typed, and a sweep whose first job fails to compose
    runs no job that would scrub it. A basic sweep's jobs are counted and checked as a study's are (`sweep_jobs`)."""

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        try:
            path = Path(config.hydra.sweep.dir) / "multirun.yaml"
        except Exception:  # noqa: BLE001 - a bad name in the folder's settings: Hydra reports it as the sweep starts
            return
        SWEEP_RECORDS.append(path)
        if os.path.islink(path) or (os.path.lexists(path) and not path.is_file()):
            why = InputError(f"{path} is not a regular file, so not the sweep's record; remove it and run the same command again")
            raise SweepRefused from why
        # read as written: an `${oc.env:MY_URL}` travels to the jobs as itself, and an override only a job resolves
        # (`seed=${hydra:job.num}`) raised here, which Hydra turns into a warning, skipping the checks below (56b)
        settings = OmegaConf.to_container(config, resolve=False)
        launcher = str(settings["hydra"]["launcher"].get("_target_", ""))
        if launcher.startswith(JOBS_ON_DISK):
            refuse_secrets_written_with_the_jobs(settings, settings["hydra"]["runtime"]["choices"].get("hydra/launcher", launcher))
        note_the_sweep(in_workers=launcher in LOCAL_LAUNCHERS)
        if launcher == JOBLIB_LAUNCHER:
            joblib_workers_watch_the_sweep()
        arguments = basic_sweep_arguments(settings["hydra"])
        if arguments is not None:
            # its jobs counted as the study and the report count them: Hydra's sweeper lists every job before the first
            # runs (`seed=range(0,1e400)` grew to gigabytes with no output, 51b) and refuses a range of nan in a traceback
            try:
                sweep_jobs(arguments)
            except InputError as why:
                raise SweepRefused from why
            except Exception:  # noqa: BLE001 - what else the sweep cannot take, Hydra's sweeper says as it did
                pass


class SweepRefused(BaseException):
    """A sweep stopped before it starts, its reason the cause: Hydra turns an Exception a callback raises into a warning."""


def register_resolvers() -> None:
    """Make conf/config.yaml's folder resolvers known to OmegaConf (before composing it with its hydra part)."""
    for name, resolver in (("experiment_folder", _experiment_folder), ("run_folder", _run_folder), ("job_folder", _job_folder)):
        OmegaConf.register_new_resolver(name, resolver, replace=True)


class PartSettings(ConfigSource):
    """Configs `settings/<kind>/<name>`: the part's name and the defaults of the settings model the part
    `name` of `kind` declares (memrl_bench.core.config.defaults_of), for a YAML's defaults list to start from
    (`- /settings/env/llb_db@_here_`), so that the model is the one place a default lives. The part
    is found by the registry (built in or installed) and imported only when its config is loaded,
    as a run would: storing every part's defaults in Hydra's ConfigStore up front would import
    every env and method at each start (0.7 s). Its group stays out of `--help`'s listing."""

    GROUP = "settings"

    @staticmethod
    def scheme() -> str:
        return "memrl-bench-settings"

    def _named(self, config_path: str) -> tuple[str, str] | None:
        parts = config_path.removesuffix(".yaml").strip("/").split("/")
        if len(parts) == 3 and parts[0] == self.GROUP and parts[1] in registry.KINDS and parts[2] in registry.names(parts[1]):
            return parts[1], parts[2]
        return None

    def load_config(self, config_path: str) -> ConfigResult:
        named = self._named(config_path)
        if named is None:
            raise ConfigLoadError(f"no part's settings at {config_path}")
        kind, name = named
        model = getattr(registry.get(kind, name), "Settings", None)
        key = NAMED_BY.get(kind, "name")
        node = {key: name, **(defaults_of(model) if model is not None else {})}  # its name first, as the YAMLs list it
        node[key] = name
        return ConfigResult(config=OmegaConf.create(node), path=self.full_path(), provider=self.provider, header={"package": None})

    def available(self) -> bool:
        return True

    def is_group(self, config_path: str) -> bool:
        parts = config_path.strip("/").split("/")
        return config_path.strip("/") == "" or (
            parts[0] == self.GROUP and (len(parts) == 1 or (len(parts) == 2 and parts[1] in registry.KINDS))
        )

    def is_config(self, config_path: str) -> bool:
        return self._named(config_path) is not None

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        parts = config_path.strip("/").split("/")
        if parts[0] != self.GROUP or results_filter == ObjectType.GROUP:  # the root: not listed in --help
            return []
        return sorted(registry.KINDS) if len(parts) == 1 else registry.names(parts[1])


class InstalledConfigs(SearchPathPlugin):
    """Hydra's search path extended by the config folders of installed packages (the entry points
    of memrl_bench.core.registry.CONF_GROUP), after memrl-bench's own conf/: `method=my_method` then
    finds my_pkg/conf/method/my_method.yaml once my_pkg is installed; then the parts' settings (PartSettings)."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for package in registry.config_packages():
            search_path.append(provider="memrl-bench plugin", path=f"pkg://{package}")
        search_path.append(provider="memrl-bench settings", path=f"{PartSettings.scheme()}://")


MAX_DEFAULTS = 100  # entries of one config file's defaults list (conf/'s longest has 10)


class CheckedConfigFiles(FileConfigSource):
    """Hydra's reader of config files in a folder (`file://`: conf/, `--config-dir`, a search path's), which reads each file
    within bounded_yaml's bounds first: an alias bomb of 11 lines in a config file composed for minutes, growing past
    gigabytes, with no output (53b). It also remembers, as a secret, the variable a file's `api_key_env` names, before Hydra
    or a setting's check quotes a refused override holding its value (53b)."""

    def load_config(self, config_path: str) -> ConfigResult:
        path = Path(os.path.realpath(os.path.join(self.path, self._normalize_file_name(config_path))))
        if path.exists():
            try:
                bounded_yaml(path)
            except (YAMLTooLargeError, CorruptRunFolderError, yaml.YAMLError, UnicodeDecodeError) as err:
                what = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
                raise ConfigError(f"config file {path}: {what}") from None
        result = super().load_config(config_path)
        defaults = result.config.get("defaults") if isinstance(result.config, DictConfig) else None
        if isinstance(defaults, ListConfig) and len(defaults) > MAX_DEFAULTS:
            # Hydra's defaults tree takes time growing with the square of a list's length: 500 entries (10 KB) composed for
            # 49 s, 1,000 for minutes, with no output (54b)
            raise ConfigError(f"config file {path}: a defaults list of {len(defaults)} entries, more than {MAX_DEFAULTS}")
        for where, value in dotted_items(OmegaConf.to_container(result.config, resolve=False)):
            if where.rpartition(".")[2] == "api_key_env":  # as the file resolves it (`${.which}`, `${oc.env:WHICH}`: 54b), or as written
                resolved = OmegaConf.select(result.config, where, throw_on_resolution_failure=False)
                remember_key_variables(str(value if resolved is None else resolved))
        return result


# Hydra's registry keeps a source already registered for a scheme when a later one has the same class name: a launcher's
# worker restores the parent's registry (this class in file://), then registers Hydra's FileConfigSource again, which it
# refused as "a different class" under this class's own name (every joblib and submitit sweep failed)
CheckedConfigFiles.__name__ = FileConfigSource.__name__


def add_config_sources() -> None:
    """Register InstalledConfigs and PartSettings with Hydra (before it composes), and put CheckedConfigFiles in the place
    of Hydra's FileConfigSource. Registered by hand, not found in the hydra_plugins namespace package: Hydra's scan of that
    package misses the modules of an editable install (setuptools >= 64, hydra issue 2359), which is how this project is
    installed for work on it; and Hydra's registry refuses a second class for a scheme."""
    Plugins.instance().register(PartSettings)
    Plugins.instance().register(InstalledConfigs)
    SourcesRegistry.instance().types[FileConfigSource.scheme()] = CheckedConfigFiles


@contextmanager
def composing() -> Iterator[None]:
    """Hydra's compose API on conf/, also inside the running `memrl-bench` app (whose global
    Hydra is set aside meanwhile: compose refuses to start while one is initialised)."""
    register_resolvers()
    add_config_sources()
    state = GlobalHydra.instance()
    outer, state.hydra = state.hydra, None
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base=None):
            yield
    finally:
        state.hydra = outer


def compose(overrides: list[str], hydra_config: bool = False) -> Any:
    """conf/config.yaml composed with `overrides` (call inside `composing()`)."""
    return hydra_compose("config", overrides=overrides, return_hydra_config=hydra_config)


class SweepValueError(InputError, ValueError):
    """An override Hydra's parser or its sweeps cannot take: nested too deep, a range of nan, a step of 0, no value."""


def _shown(line: str) -> str:
    return line if len(line) <= 80 else f"{line[:77]}..."


def parsed(overrides: list[str]) -> list[Any]:
    """Hydra's Override objects of command-line overrides (SweepValueError for one nested past the parser's recursion:
    a traceback from a sweep's record or a study's grid before, 51b)."""
    parser, found = OverridesParser.create(), []
    for line in overrides:  # one at a time, to name the one
        try:
            found += parser.parse_overrides([line])
        except RecursionError:
            raise SweepValueError(f"{_shown(line)}: nested too deep") from None
    return found


def fixed(overrides: list[str]) -> list[str]:
    """The overrides that are not sweeps (`a=1,2` is a sweep, `a=1` is not)."""
    return [o.input_line for o in parsed(overrides) if not o.is_sweep_override()]


MAX_SWEEP_JOBS = 10_000  # far past any study; what a sweep expands to is bounded before it is built (a range of 10^8 seeds)


class SweepTooLargeError(SweepValueError):
    """A sweep of more jobs than MAX_SWEEP_JOBS."""


def basic_sweep_arguments(hydra: Any) -> list[str] | None:
    """What Hydra's basic sweeper expands for a sweep whose `hydra` node (the running config's or a record's, as a mapping)
    is this: its params, then the command's overrides; None for another sweeper."""
    if not str(hydra["sweeper"].get("_target_", "")).endswith("BasicSweeper"):
        return None
    return [f"{k}={v}" for k, v in (hydra["sweeper"].get("params") or {}).items()] + [str(o) for o in hydra["overrides"]["task"]]


def sweep_jobs(arguments: list[str]) -> list[list[str]]:
    """Every job's overrides for `arguments` (the sweeper's params first, then the command's),
    as Hydra's basic sweeper expands them: a later value of a key replaces an earlier one
    in its place, and jobs are the product of the swept values in order; SweepTooLargeError
    past MAX_SWEEP_JOBS jobs, counted before any list of that size is made."""
    by_key: dict[str, list[str]] = {}
    for override in parsed(arguments):
        key = override.get_key_element()
        if not override.is_sweep_override():
            by_key[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            by_key[key] = _values(override)
        else:
            raise HydraException(f"{override.input_line}: range and interval sweeps are not supported by the basic sweeper")
    if math.prod(len(values) for values in by_key.values()) > MAX_SWEEP_JOBS:
        raise SweepTooLargeError(f"{' x '.join(str(len(v)) for v in by_key.values() if len(v) > 1)} jobs, more than {MAX_SWEEP_JOBS}")
    return [list(job) for job in itertools.product(*by_key.values())]


def _values(override: Any) -> list[str]:
    """A discrete sweep's `key=value` lines; SweepTooLargeError past MAX_SWEEP_JOBS (a range counted before Hydra lists it:
    shuffle does, and `range(0,1e400)` is endless), SweepValueError for a range Hydra's arithmetic refuses or one of no value."""
    line, key = _shown(override.input_line), override.get_key_element()
    try:
        counted = sum(1 for _ in itertools.islice(override.value().range(), MAX_SWEEP_JOBS + 1)) if override.is_range_sweep() else 0
        values = [f"{key}={value}" for value in override.sweep_string_iterator()] if counted <= MAX_SWEEP_JOBS else []
    except (ArithmeticError, ValueError) as err:  # decimal's InvalidOperation for nan, range's "arg 3 must not be zero"
        why = "a bound or step that is no finite number" if isinstance(err, ArithmeticError) else str(err)
        raise SweepValueError(f"{line}: not a sweep Hydra can expand ({why})") from None
    if counted > MAX_SWEEP_JOBS:
        raise SweepTooLargeError(f"{line}: more than {MAX_SWEEP_JOBS} values")
    if not values:
        raise SweepValueError(f"{line}: a sweep of no value (a sweep would run no job)")
    return values
