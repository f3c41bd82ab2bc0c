"""Shared fixtures: one local llama.cpp server (SmolLM2-135M) for the whole test session.

Tests that need the real model take `local_chat_model` (an OpenAIChatModel on it) or
`local_llm_server`, and are marked @pytest.mark.llm.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from memrl_bench.llm.client import OpenAIChatModel
    from memrl_bench.llm.local_server import LocalLlamaServer

LOCAL_MODEL = "smollm2-135m"


@pytest.fixture(scope="session")
def local_llm_server() -> Iterator[LocalLlamaServer]:
    """A LocalLlamaServer on SmolLM2-135M, started once per session (~1 s) and stopped at its end."""
    from memrl_bench.llm import catalogue as models
    from memrl_bench.llm.local_server import LocalLlamaServer

    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("the xllamacpp package is not installed (pip install 'memrl-bench[local]')")
    try:
        model_path = models.ensure(LOCAL_MODEL)
    except models.ModelError as err:
        pytest.skip(f"the {LOCAL_MODEL} model file is not available: {err}")
    # 1 thread: with 2, llama.cpp slows 10-20x whenever other processes load both cores.
    with LocalLlamaServer(model_path, alias=LOCAL_MODEL, threads=1, ctx_size=1024, parallel=2) as server:
        yield server


@pytest.fixture(scope="session")
def local_chat_model(local_llm_server: LocalLlamaServer) -> Iterator[OpenAIChatModel]:
    """An OpenAIChatModel on the session's local server: temperature 0, seed 0, at most 32 tokens, no cache."""
    from memrl_bench.llm.client import OpenAIChatModel

    model = OpenAIChatModel(
        local_llm_server.base_url, LOCAL_MODEL, generation={"temperature": 0.0, "seed": 0, "max_tokens": 32}, max_concurrency=2
    )
    yield model
    model.close()
