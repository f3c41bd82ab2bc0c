"""memrl_bench.cli.hydra_support against Hydra itself: a Hydra upgrade that changes how the
basic sweeper expands a sweep, or how compose runs inside the app, fails here."""

from __future__ import annotations

import pytest
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper  # only here: the reference the adapter must match
from omegaconf import OmegaConf

from memrl_bench.cli.hydra_support import compose, composing, fixed, parsed, sweep_jobs
from memrl_bench.core.config import InputError
from tests.helpers import install_distribution

SWEEPS = [
    ["method=none,rag,memrl", "seed=0,1,2"],
    ["+experiment=critique_epsilon", "env.outcome_temperature=0,0.7", "task_order_seed=0,1", "seed=0"],
    [
        "method.epsilon=0.05,0.1",
        "protocol.epoch_order_seeds=null,[1],[0,1]",
        "method.epsilon=0.2",
    ],  # a later value replaces the sweep in its place
    ["~memrl_preset@method", "++progress=false", "env.tasks={train: 4}"],
    ["llm.model='a,b'", "seed=range(0,3)"],
]


@pytest.mark.parametrize("arguments", SWEEPS)
def test_sweep_jobs_are_the_basic_sweepers(arguments):
    (jobs,) = BasicSweeper.split_arguments(parsed(arguments), None)
    assert sweep_jobs(arguments) == jobs


UNEXPANDABLE = {  # 51b: each a traceback (decimal's InvalidOperation, ValueError, RecursionError) from a sweep's record or a grid
    "range of nan": ("seed=range(0,nan)", "seed=range(0,nan): not a sweep Hydra can expand (a bound or step that is no finite number)"),
    "sorted range from nan": ("seed=sort(range(nan,1))", "not a sweep Hydra can expand (a bound or step that is no finite number)"),
    "step of 0": ("seed=range(0,10,0)", "seed=range(0,10,0): not a sweep Hydra can expand (range() arg 3 must not be zero)"),
    "no value": ("seed=range(0,1,-inf)", "seed=range(0,1,-inf): a sweep of no value"),
    "endless": ("seed=range(0,1e400)", "seed=range(0,1e400): more than 10000 values"),
    "nested 600 deep": ("seed=" + "[" * 600 + "]" * 600, "seed=" + "[" * 72 + "...: nested too deep"),
}


@pytest.mark.parametrize("name", UNEXPANDABLE)
def test_a_sweep_hydra_cannot_expand_is_an_input_error_naming_it(name):
    override, message = UNEXPANDABLE[name]
    with pytest.raises(InputError) as refused:
        sweep_jobs(["method=none,rag", override])
    assert message in str(refused.value)


def test_compose_runs_inside_a_running_app_and_reads_the_sweep():
    with composing():
        outer = compose(fixed(["+experiment=demo", "seed=5,6"]), hydra_config=True)
        with composing():  # as the study does inside the memrl-bench app
            inner = compose(["method=rag"])
        assert outer.hydra.sweeper.params == {"method": "none,rag,memrl", "seed": "0,1,2"}
    assert inner.method.name == "rag" and "hydra" not in inner


def test_config_files_are_read_by_the_bounded_reader_in_hydras_place(tmp_path):
    """Hydra resolves file:// to CheckedConfigFiles (its registry is below the documented API): a config file past the
    bounds is refused as Hydra loads it (what it remembers: test_secrets_messages)."""
    from hydra._internal.sources_registry import SourcesRegistry

    from memrl_bench.cli.hydra_support import CheckedConfigFiles

    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "deep.yaml").write_text("# @package _global_\nseed: " + "[" * 100 + "]" * 100 + "\n")
    with composing():
        assert SourcesRegistry.instance().resolve("file") is CheckedConfigFiles
        with pytest.raises(InputError, match="deep.yaml: nested more than 64 deep"):
            compose([f"hydra.searchpath=[file://{tmp_path}]", "+experiment=deep"])


def test_a_launchers_worker_keeps_the_bounded_reader_as_it_restores_hydras_state():
    """A joblib or submitit worker restores the parent's Hydra singletons, then Hydra scans its plugins again and registers
    its own FileConfigSource: it refused a second class for file:// there ("file is already registered with a different
    class": every launcher sweep failed), and must keep the bounded reader in place."""
    from hydra._internal.sources_registry import SourcesRegistry
    from hydra.core.singleton import Singleton

    from memrl_bench.cli.hydra_support import CheckedConfigFiles

    saved = dict(Singleton._instances)
    try:
        with composing():
            state = Singleton.get_state()
        Singleton.set_state(state)  # what the launchers' workers do first (joblib's execute_job, submitit's __call__)
        assert SourcesRegistry.instance().resolve("file") is CheckedConfigFiles
    finally:
        Singleton._instances = saved


def test_installed_packages_add_their_config_folders_after_the_harnesss_own(tmp_path, monkeypatch):
    files = {
        "plugin_search/__init__.py": "",
        "plugin_search/conf/__init__.py": "",
        "plugin_search/conf/method/mine.yaml": "name: mine\nk: 4\n",
        "plugin_search/conf/method/rag.yaml": "name: not_rag\n",
    }
    install_distribution(tmp_path, "plugin-search", {"memrl_bench.conf": {"plugin_search": "plugin_search.conf"}}, files)
    monkeypatch.syspath_prepend(tmp_path)
    with composing():
        assert compose(["method=mine"]).method == {"name": "mine", "k": 4}
        assert compose(["method=rag"]).method.name == "rag"  # memrl-bench's conf/ is searched first
    install_distribution(tmp_path / "other", "plugin-gone", {"memrl_bench.conf": {"gone": "plugin_gone.conf"}}, {})
    monkeypatch.syspath_prepend(tmp_path / "other")
    with pytest.raises(InputError, match="no package named 'plugin_gone.conf'"), composing():
        compose([])


def test_a_yaml_starts_from_its_parts_settings_as_from_a_file_of_them():
    """conf/method/rag.yaml holds only `defaults: [/settings/method/rag@_here_, _self_]`: Hydra composes
    the model's defaults (PartSettings) under the group, and overrides act on them as on a YAML's keys."""
    from hydra.errors import ConfigCompositionException

    from memrl_bench.core.config import defaults_of
    from memrl_bench.methods.rag import RAG

    with composing():
        assert OmegaConf.to_container(compose(["method=rag", "method.top_k=5"]).method) == {
            "name": "rag",
            **defaults_of(RAG.Settings),
            "top_k": 5,
        }
        assert compose(["+env.task_types=[0,1]"]).env.task_types == [0, 1]  # an unlisted key: added, as before
        with pytest.raises(ConfigCompositionException, match="already at 'method.top_k'"):
            compose(["method=rag", "+method.top_k=5"])
