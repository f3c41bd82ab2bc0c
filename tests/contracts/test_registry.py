"""The registry: one way to find every pluggable part (built in, installed by another
distribution's entry points, or named as package.module:Attribute), and one error for an
unknown name or a name given twice."""

from __future__ import annotations

import sys

import pytest

from memrl_bench.actors.base import Actor
from memrl_bench.core import registry
from memrl_bench.core.config import InputError
from memrl_bench.core.registry import NameClashError, UnknownNameError
from memrl_bench.envs.base import Env
from memrl_bench.llm.embedders import Embedder
from memrl_bench.methods.base import MemoryMethod
from memrl_bench.methods.rag import RAG
from tests.helpers import install_distribution

KIND_TYPES = {"method": MemoryMethod, "env": Env, "actor": Actor, "embedder": Embedder}


def test_helper_modules_are_not_entries():
    """A module of envs/ or methods/ that assigns no ENV / METHOD (base, gold, checker, the ALFWorld grammar, llm_ops) is no entry."""
    assert registry.names("env") == ["alfworld", "bigcodebench", "llb_db", "llb_os", "mmlu", "synthetic", "textworld_express"]
    assert registry.names("method") == [
        "awm",
        "dynamic_cheatsheet",
        "expel",
        "full_context",
        "mem0",
        "memp",
        "memrl",
        "none",
        "rag",
        "reasoningbank",
        "selfrag",
        "simplemem",
        "skillbank",
    ]
    for kind, helper in (
        ("env", "alfworld_grammar"),
        ("env", "base"),
        ("env", "gold"),
        ("env", "checker"),
        ("method", "llm_ops"),
        ("method", "budget"),
        ("method", "checker"),
    ):
        with pytest.raises(UnknownNameError, match=f"unknown {kind} '{helper}'; valid {kind}s: "):
            registry.get(kind, helper)


@pytest.mark.parametrize("kind", registry.KINDS)
def test_every_name_resolves_to_its_kind(kind):
    for name in registry.names(kind):
        part = registry.get(kind, name)
        if kind in KIND_TYPES:
            assert issubclass(part, KIND_TYPES[kind]), (kind, name)
        else:
            assert callable(part), (kind, name)  # an LLM kind: a function opening the run's model


def test_unknown_kinds_and_names_are_one_line_listing_the_valid_ones():
    with pytest.raises(UnknownNameError, match="unknown registry kind 'tool'; valid: actor, embedder, env, llm, method"):
        registry.get("tool", "x")
    with pytest.raises(UnknownNameError, match="unknown llm 'vllm'; valid llms: local, none, openai"):
        registry.get("llm", "vllm")
    assert str(UnknownNameError("one line")) == "one line"


PART = "class Part:\n    pass\n"


@pytest.mark.parametrize("kind", registry.KINDS)
def test_another_distributions_entry_points_add_parts_of_every_kind_imported_when_asked_for(kind, tmp_path, monkeypatch):
    module = f"plugin_{kind}_part"
    install_distribution(tmp_path, "plugin-parts", {registry.entry_point_group(kind): {"mine": f"{module}:Part"}}, {f"{module}.py": PART})
    monkeypatch.syspath_prepend(tmp_path)
    assert "mine" in registry.names(kind) and module not in sys.modules  # listed, not imported
    assert registry.get(kind, "mine").__module__ == module


def test_a_name_registered_twice_is_one_error_naming_both(tmp_path, monkeypatch):
    install_distribution(
        tmp_path / "a", "plugin-a", {"memrl_bench.methods": {"rag": "plugin_a:Part", "mine": "plugin_a:Part"}}, {"plugin_a.py": PART}
    )
    monkeypatch.syspath_prepend(tmp_path / "a")
    with pytest.raises(
        NameClashError,
        match=(
            r"^method 'rag' is registered twice: built in \(memrl_bench/methods/rag.py\) and the entry point rag = 'plugin_a:Part' of "
            r"plugin-a 1.0 \(group memrl_bench.methods\); rename one of them$"
        ),
    ):
        registry.get("method", "none")  # whichever name is asked for: what runs must not depend on what else is installed
    install_distribution(tmp_path / "b", "plugin-b", {"memrl_bench.envs": {"mine": "plugin_b:Part"}}, {"plugin_b.py": PART})
    install_distribution(tmp_path / "c", "plugin-c", {"memrl_bench.envs": {"mine": "plugin_c:Part"}}, {"plugin_c.py": PART})
    monkeypatch.syspath_prepend(tmp_path / "b")
    monkeypatch.syspath_prepend(tmp_path / "c")
    with pytest.raises(
        NameClashError,
        match=(
            "env 'mine' is registered twice: the entry point mine = 'plugin_.:Part' of plugin-. 1.0 .* and the entry point mine = "
            "'plugin_.:Part' of plugin-. 1.0"
        ),
    ):
        registry.names("env")


def test_a_part_is_named_directly_as_module_and_attribute():
    assert registry.get("method", "memrl_bench.methods.rag:RAG") is RAG
    assert registry.get("method", "memrl_bench.methods.rag:RAG.name") == "rag"  # a dotted attribute, as entry points allow
    for name, message in (
        (
            "no_such_package.mod:Method",
            "method 'no_such_package.mod:Method': no module named 'no_such_package' (is its package installed?)",
        ),
        ("memrl_bench.methods.rag:Nope", "method 'memrl_bench.methods.rag:Nope': module 'memrl_bench.methods.rag' has no attribute 'Nope'"),
        (
            "memrl_bench.methods.rag:",
            "method 'memrl_bench.methods.rag:': 'memrl_bench.methods.rag:' must have the form package.module:Attribute",
        ),
    ):
        with pytest.raises(UnknownNameError) as err:
            registry.get("method", name)
        assert str(err.value) == message


def test_an_import_error_inside_a_named_module_is_its_own(tmp_path, monkeypatch):
    (tmp_path / "plugin_broken.py").write_text("import no_such_dependency\nclass Part:\n    pass\n")
    monkeypatch.syspath_prepend(tmp_path)
    with pytest.raises(
        ModuleNotFoundError, match="no_such_dependency"
    ):  # the user's bug, with its traceback: not "no module plugin_broken"
        registry.get("method", "plugin_broken:Part")


def test_config_folders_of_installed_distributions_must_be_packages(tmp_path, monkeypatch):
    install_distribution(
        tmp_path,
        "plugin-conf",
        {"memrl_bench.conf": {"plugin_conf": "plugin_conf.conf"}},
        {"plugin_conf/__init__.py": "", "plugin_conf/conf/__init__.py": "", "plugin_conf/conf/method/mine.yaml": "name: mine\n"},
    )
    monkeypatch.syspath_prepend(tmp_path)
    assert registry.config_packages() == ["plugin_conf.conf"]
    (tmp_path / "plugin_conf/conf/__init__.py").unlink()
    sys.modules.pop("plugin_conf.conf", None)
    with pytest.raises(
        InputError,
        match=(
            r"^the entry point plugin_conf = 'plugin_conf.conf' of plugin-conf 1.0 \(group memrl_bench.conf\): 'plugin_conf.conf' has no "
            r"__init__.py; add an empty one"
        ),
    ):
        registry.config_packages()
    install_distribution(tmp_path / "other", "plugin-gone", {"memrl_bench.conf": {"gone": "plugin_gone.conf"}}, {})
    monkeypatch.syspath_prepend(tmp_path / "other")
    with pytest.raises(InputError, match="of plugin-gone 1.0 \\(group memrl_bench.conf\\): no package named 'plugin_gone.conf'"):
        registry.config_packages()


def test_every_built_in_method_has_a_readme_row_with_its_family():
    """README's method table names each method's family of the critique (and its source, deviations)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2].strip() for line in readme.splitlines() if line.startswith("| `")}
    for name in registry.names("method"):
        assert rows.get(name), f"README's method table has no row, or no family, for method {name!r}"
