"""An embedder, an actor and an LLM kind of one's own (tests/own_parts.py, their YAMLs in
tests/own_parts_conf/), each with its own settings model: a run's config names them as
`module:Class`, checks their groups with their own models (validate_config finds them through the
registry, as it finds the built-in ones) and hands them their settings typed; the run goes end to
end on the env of one's own (tests/own_env.py) with no package file edited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrl_bench.core.config import ConfigError, validate_config
from memrl_bench.runner.loop import run
from tests.helpers import composed
from tests.own_parts import DigitCountsSettings, Oracle, OracleSettings, SilentSettings, open_silent

TESTS = Path(__file__).parents[1]
SEARCH = f"hydra.searchpath=[file://{TESTS / 'own_env_conf'},file://{TESTS / 'own_parts_conf'}]"
OWN = ("env=parity", "embedder=digits", "actor=oracle", "llm=silent", "method=rag", "protocol.epochs=1", "protocol.batch_size=4", SEARCH)


def test_own_parts_are_checked_by_their_own_models_and_get_them_typed():
    checked = validate_config(composed(*OWN))
    assert checked.actor.cls is Oracle and checked.llm.cls is open_silent
    assert isinstance(checked.embedder.settings, DigitCountsSettings) and checked.embedder.settings.digits == "0123456789"
    assert checked.actor.settings == OracleSettings(kind="tests.own_parts:Oracle", wrong_every=3)
    assert checked.llm.settings == SilentSettings(name="tests.own_parts:open_silent", reason="the oracle answers")


@pytest.mark.parametrize(
    "override, message",
    [
        ("actor.wrong_every=1", "actor.wrong_every: Input should be greater than or equal to 2 (got 1)"),
        ("+embedder.colour=blue", "embedder.colour: Extra inputs are not permitted"),
        ("llm.reason=''", "llm.reason: String should have at least 1 character"),
        (
            "actor.kind=tests.own_parts:Nobody",
            "actor.kind: actor 'tests.own_parts:Nobody': module 'tests.own_parts' has no attribute 'Nobody'",
        ),
    ],
)
def test_a_bad_value_of_an_own_part_is_one_line_naming_its_key(override, message):
    with pytest.raises(ConfigError) as refused:
        validate_config(composed(*OWN, override))
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_own_parts_run_end_to_end_with_their_settings(tmp_path):
    expected = {3: 5 / 8, 4: 6 / 8}  # of the test numbers 200..207: 201, 204, 207 answered wrong; then 200, 204
    for wrong_every, success in expected.items():
        folder = tmp_path / f"wrong_every={wrong_every}"
        metrics = run(composed(*OWN, f"actor.wrong_every={wrong_every}"), folder)
        assert metrics["success_rate"]["test"] == {1: success} and metrics["episodes"] == 12 + 4 + 8
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["embedder"] == {"model": "digit-counts", "digits": "0123456789"}
