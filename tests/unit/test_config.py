"""The config module: every shipped config passes its group's model; names and places of results."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrl_bench import CONF_DIR, protocols
from memrl_bench.core import registry
from memrl_bench.core.config import (
    KEY_ROLES,
    NOT_RESULTS,
    ConfigError,
    KeyRole,
    config_hash,
    results_folder,
    role_of,
    run_name,
    validate_config,
)
from memrl_bench.envs.settings import EnvSettings
from tests.helpers import composed

CONF = Path(CONF_DIR)
OPTIONS = {
    group: sorted(p.stem for p in (CONF / group).glob("*.yaml")) for group in ("env", "method", "llm", "embedder", "actor", "protocol")
}
NEEDS = {
    "llm=openai": ["llm.model=m"],
    "protocol=transfer": ["protocol.transfer_from=runs/source"],
}  # a mandatory value the YAML leaves to the command line


@pytest.mark.parametrize("choice", [f"{g}={o}" for g, options in OPTIONS.items() for o in options])
def test_every_shipped_option_passes_its_model(choice):
    cfg = composed(choice, *NEEDS.get(choice, []))
    validate_config(cfg)
    protocol = protocols.build(cfg["protocol"]).settings
    assert protocol.epochs >= 1 or protocol.transfer_from == "runs/source"


@pytest.mark.parametrize("preset", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_shipped_experiment_passes(preset):
    cfg = {k: v for k, v in composed(f"+experiment={preset}").items() if k != "study"}
    validate_config(cfg)
    if cfg["protocol"].get("transfer_from") != "???":  # transfer_target's source is given at run time
        protocols.build(cfg["protocol"])


def test_every_shipped_env_declares_its_own_settings_model():
    for name in OPTIONS["env"]:
        assert registry.get("env", name).Settings is not EnvSettings, name


def test_run_names_fit_a_file_name_and_keep_their_start():
    assert run_name([]) == "default"
    assert run_name(["seed=1", "method=rag"]) == "method=rag,seed=1"
    long = [f"env.subjects=[{'é' * 40}{i}]" for i in range(5)]  # 2-byte characters
    name = run_name(long)
    assert len(name.encode()) <= 255 and name.startswith("env.subjects=[éé") and name != run_name([*long, "x=1"])


def test_run_names_start_with_the_method_and_env_and_leave_out_what_changes_no_result():
    overrides = [
        "seed=0",
        "protocol.epochs=3",
        "llm.cache_path=/tmp/a/cache.sqlite",
        "llm.threads=2",
        "+experiment=demo",
        "env.tasks.train=4",
        "env=llb_db",
        "results_dir=r",
        "method.k=2",
        "method=mem0",
    ]
    assert run_name(overrides) == "method=mem0,method.k=2,env=llb_db,env.tasks.train=4,protocol.epochs=3,seed=0"
    # Long names are cut at the end: runs of four methods stay four names that say their method.
    long = [f"env.subjects=[{'x' * 60}{i}]" for i in range(4)]
    names = [run_name([*long, f"method={m}"]) for m in ("none", "rag", "memrl", "mem0")]
    assert [n.split(",")[0] for n in names] == ["method=none", "method=rag", "method=memrl", "method=mem0"]
    assert all(len(n.encode()) <= 200 for n in names)


def test_the_key_role_table_decides_hash_and_name_alike():
    """Every key the hash leaves out is left out of names too, and the other way round."""
    for key, role in KEY_ROLES.items():
        in_name = run_name([f"{key}=1"]) != "default"
        assert in_name == (role not in (*NOT_RESULTS, KeyRole.PRESET)), key
    assert role_of("+experiment=demo") is KeyRole.PRESET and role_of("study.presets=[a]") is KeyRole.PRESET
    assert role_of("method.epsilon=0.1") is KeyRole.ARM and role_of("env.tasks.train=4") is KeyRole.CONDITION


@pytest.mark.parametrize(
    "results_dir, experiment_name", [("results", "demo"), ("results", "critique/main"), ("/tmp/x", "."), ("results", 2024)]
)
def test_results_folders_inside_results_dir_are_accepted(results_dir, experiment_name):
    assert results_folder(results_dir, experiment_name) == Path(results_dir) / str(experiment_name)


@pytest.mark.parametrize("experiment_name", ["../x", "a/../../x", "/abs", "", "x" * 256])
def test_experiment_names_that_leave_results_dir_are_refused(experiment_name):
    with pytest.raises(ConfigError, match="experiment_name"):
        results_folder("results", experiment_name)


def test_the_config_hash_ignores_what_does_not_change_results():
    cfg = composed("llm=local")
    assert config_hash(cfg) == config_hash(composed("llm=local", "llm.max_concurrency=9", "progress=false", "results_dir=elsewhere"))
    assert config_hash(cfg) != config_hash(composed("llm=local", "llm.temperature=0.5"))
