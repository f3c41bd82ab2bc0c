"""Every YAML of conf/ against the settings model of its part (issue 29, settings beside their part).

Each group option, MemRL preset and experiment preset composes with Hydra into the models of
the parts it names, with no key unknown to them. A YAML that starts from its part's defaults
(`- /settings/<kind>/<name>@_here_`, served from the model by memrl_bench.cli.hydra_support)
sets only what differs from them, so the model is the one place a default lives. The YAMLs that
list their keys themselves restate the model's default or a value listed below as deliberate:
the llm group (its three kinds share one model, not its defaults, and changing what they compose
would change the hash of every run), actor=single_turn (it composes only its own keys), and the
MemRL presets (each value an official config's line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra.plugins.config_source import ConfigLoadError

from memrl_bench import protocols
from memrl_bench.cli.hydra_support import PartSettings
from memrl_bench.core import registry
from memrl_bench.core.config import CONF_DIR, NAMED_BY, canonical, defaults_of, validate_config, validated
from tests.helpers import composed

CONF = Path(CONF_DIR)
GROUPS = ("env", "method", "protocol", "actor", "embedder", "llm")
OPTIONS = [(group, path.stem) for group in GROUPS for path in sorted((CONF / group).glob("*.yaml"))]
PRESETS = sorted(path.stem for path in (CONF / "memrl_preset").glob("*.yaml"))
EXPERIMENTS = sorted(path.stem for path in (CONF / "experiment").glob("*.yaml"))
NEEDS = {
    "llm/openai": ["llm.model=m"],
    "protocol/transfer": ["protocol.transfer_from=runs/source"],
}  # a mandatory value (???) the YAML leaves to the command

# The values a YAML that lists its keys sets apart from its model's defaults: its part's name aside, on purpose.
DELIBERATE: dict[str, set[str]] = {
    "llm/local": {"model", "temperature", "top_p", "seed", "max_tokens", "cache_mode", "startup_timeout_s"},
    "llm/openai": {
        "base_url",
        "model",
        "max_concurrency",
        "max_retries",
        "backoff_base_s",
        "backoff_max_s",
        "max_retry_after_s",
        "temperature",
        "top_p",
        "seed",
        "max_tokens",
        "cache_mode",
    },
}


def yaml_file(group: str, option: str) -> dict[str, Any]:
    return yaml.safe_load((CONF / group / f"{option}.yaml").read_text()) or {}


def checked(cfg: dict[str, Any]) -> None:
    """Every group of a composed config through the model of the part it names (as the runner checks them)."""
    cfg = {k: v for k, v in cfg.items() if k != "study"}
    validate_config(cfg)  # env, llm, embedder, actor: each part's Settings, through the registry
    method = registry.get("method", cfg["method"]["name"])
    settings = {k: v for k, v in cfg["method"].items() if k != "name"}
    if method.Settings is None:
        assert not settings, f"method {cfg['method']['name']} has no settings, the config gives {sorted(settings)}"
    else:
        validated(method.Settings, settings, "method")
    if cfg["protocol"].get("transfer_from") != "???":  # transfer_target's source is given at run time
        protocols.build(cfg["protocol"])


@pytest.mark.parametrize("group, option", OPTIONS, ids=[f"{g}/{o}" for g, o in OPTIONS])
def test_every_group_option_composes_into_the_models_of_its_parts(group, option):
    cfg = composed(f"{group}={option}", *NEEDS.get(f"{group}/{option}", []))
    checked(cfg)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_memrl_preset_composes_into_memrls_model(preset):
    cfg = composed("method=memrl", f"memrl_preset@method={preset}")
    checked(cfg)
    assert set(yaml_file("memrl_preset", preset)) - {"defaults"} <= set(cfg["method"])


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_preset_composes_into_the_models_of_its_parts(experiment):
    checked(composed(f"+experiment={experiment}"))


def starts_from(data: dict[str, Any]) -> str | None:
    """The settings node a YAML's defaults list starts from (settings/<kind>/<name>), if any."""
    entries = [e for e in data.get("defaults") or [] if isinstance(e, str) and e.startswith(f"/{PartSettings.GROUP}/")]
    return entries[0].lstrip("/").split("@")[0] if entries else None


def served(path: str) -> dict[str, Any]:
    return PartSettings("test", f"{PartSettings.scheme()}://").load_config(path).config  # type: ignore[return-value]


@pytest.mark.parametrize("group, option", OPTIONS, ids=[f"{g}/{o}" for g, o in OPTIONS])
def test_a_yaml_sets_only_what_differs_from_the_defaults_it_starts_from(group, option):
    data = yaml_file(group, option)
    own = {k: v for k, v in data.items() if k != "defaults"}
    base = starts_from(data)
    siblings = [e for e in data.get("defaults") or [] if isinstance(e, str) and not e.startswith(("/", "_self_"))]
    if siblings:  # it starts from another option of its group (memp_memrl_alpha0: memrl)
        start = composed(f"{group}={siblings[0]}")[group]
    elif base is not None:
        start = served(base)
    else:
        cfg = composed(f"{group}={option}", *NEEDS.get(f"{group}/{option}", []))
        key = NAMED_BY.get(group, "name")
        model = registry.get(group, cfg[group].get(key) or "none").Settings  # a YAML listing its keys: against its model's defaults
        defaults = defaults_of(model)
        listed = DELIBERATE.get(f"{group}/{option}", set()) | {key}
        restated = {k: v for k, v in own.items() if k not in listed and (k not in defaults or canonical(v) != canonical(defaults[k]))}
        assert not restated, (
            f"{group}/{option}.yaml sets {restated}, not the model's defaults { ({k: defaults.get(k) for k in restated}) }: list them in "
            "DELIBERATE if on purpose"
        )
        assert DELIBERATE.get(f"{group}/{option}", set()) <= set(own)
        return
    same = {k: v for k, v in own.items() if k in start and canonical(v) == canonical(start[k])}
    assert not same, f"{group}/{option}.yaml restates what it starts from: {same}"


def test_the_settings_a_yaml_starts_from_are_its_parts_name_and_its_models_defaults():
    assert served("settings/env/llb_db") == {"name": "llb_db", **defaults_of(registry.get("env", "llb_db").Settings)}
    assert served("settings/actor/react")["kind"] == "react" and served("settings/actor/react")["generation"] == {}
    assert "skip_tasks" not in served("settings/protocol/held_out") and "task_types" not in served(
        "settings/env/synthetic"
    )  # unlisted: +key=... sets them
    assert served("settings/method/none") == {"name": "none"}
    with pytest.raises(ConfigLoadError, match="no part's settings"):
        served("settings/env/nosuchenv")


WRITER_OPTIONS = sorted(path.stem for path in (CONF / "memory_llm").glob("*.yaml"))


@pytest.mark.parametrize("option", WRITER_OPTIONS)
def test_a_memory_llm_option_is_the_llm_option_of_its_name_or_composes_nothing(option):
    """memory_llm=local|openai compose the llm group's YAML of that name (one settings model, one list of keys for both);
    memory_llm=same composes nothing, so a run without a writer keeps the config (and hash) it had before the group existed."""
    given = ["memory_llm.model=m"] if option == "openai" else []
    cfg = composed(f"memory_llm={option}", *given)
    checked(cfg)
    if option == "same":
        assert "memory_llm" not in cfg and cfg == composed()
    else:
        assert cfg["memory_llm"] == composed(f"llm={option}", *[g.replace("memory_llm.", "llm.") for g in given])["llm"]
        assert yaml_file("memory_llm", option) == {"defaults": [f"/llm/{option}@_here_", "_self_"]}
