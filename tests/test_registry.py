"""The registry: one way to find every pluggable part, and one error for an unknown name."""

from __future__ import annotations

import pytest

from memrl_bench import registry
from memrl_bench.actors import Actor
from memrl_bench.embed import Embedder
from memrl_bench.envs.base import Env
from memrl_bench.methods.base import MemoryMethod
from memrl_bench.registry import UnknownNameError

KIND_TYPES = {"method": MemoryMethod, "env": Env, "actor": Actor, "embedder": Embedder}


def test_helper_modules_are_not_entries():
    """A module of envs/ or methods/ that assigns no ENV / METHOD (base, gold, checker, the ALFWorld grammar, llm_ops) is no entry."""
    assert registry.names("env") == ["alfworld", "bigcodebench", "llb_db", "llb_os", "mmlu", "synthetic", "textworld_express"]
    assert registry.names("method") == ["expel", "full_context", "mem0", "memp", "memrl", "none", "rag", "simplemem"]
    for kind, helper in (("env", "alfworld_grammar"), ("env", "base"), ("env", "gold"), ("env", "checker"), ("method", "llm_ops"), ("method", "budget")):
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
