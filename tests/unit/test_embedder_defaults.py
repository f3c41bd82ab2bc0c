"""The embedder follows the env: text envs key their tasks with MiniLM, the synthetic env with its
intent vectors, and an embedder named on the command line always wins."""

from pathlib import Path

import pytest

from memrl_bench import CONF_DIR
from tests.helpers import composed

TEXT_ENVS = sorted(p.stem for p in (Path(CONF_DIR) / "env").glob("*.yaml") if p.stem != "synthetic")


@pytest.mark.parametrize("env", TEXT_ENVS)
def test_text_envs_default_to_minilm_and_the_command_line_wins(env):
    assert composed(f"env={env}")["embedder"]["name"] == "minilm"
    assert composed(f"env={env}", "embedder=openai")["embedder"]["name"] == "openai"
    assert composed(f"env={env}", "embedder=env_intent")["embedder"]["name"] == "env_intent"


def test_the_synthetic_env_keeps_its_intent_vectors():
    assert composed()["embedder"]["name"] == "env_intent"
    assert composed("+experiment=demo")["embedder"]["name"] == "env_intent"
    assert composed("env=synthetic", "embedder=minilm")["embedder"]["name"] == "minilm"


def test_a_preset_that_names_its_env_gets_that_env_s_embedder():
    assert composed("+experiment=alfworld_memrl")["embedder"]["name"] == "minilm"
    assert composed("+experiment=alfworld_memrl", "embedder=env_intent")["embedder"]["name"] == "env_intent"
