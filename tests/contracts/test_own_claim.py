"""Claims as registered parts: a claim of one's own is one decorated function in any imported
module (tests/own_claim.py), found by `findings` and rendered with the others; the registry's
errors name the claim; every registered claim keeps the interface's promises."""

from __future__ import annotations

import html
import importlib
import json
import sys
from pathlib import Path

import pytest

from memrl_bench import CONF_DIR
from memrl_bench import findings as fd
from memrl_bench.core.stats import INCONCLUSIVE, NOT_MEASURED, NOT_SUPPORTED, SUPPORTED

BUILT_IN = [
    "determinism",
    "epoch1_lock_in",
    "epoch1_counterfactual",
    "never_tested",
    "good_amplified",
    "bad_locked_in",
    "regret",
    "order_dependence",
    "memory_helps",
    "runtime_learning",
    "weak_baselines",
    "drift_stale_kept",
    "drift_adaptation",
    "drift_gain_per_token",
    "step_level_gain",
    "step_level_under_drift",
    "skills_without_rl",
    "writer_model",
    "strong_baselines",
]


@pytest.fixture
def own_claim():
    """The claim of tests/own_claim.py, registered by importing the module and removed after the test."""
    module = importlib.import_module("tests.own_claim")
    try:
        yield module.memrl_beats_none
    finally:
        fd.unregister(module.memrl_beats_none.id)
        sys.modules.pop("tests.own_claim", None)


def test_an_own_claim_is_found_and_rendered_with_the_others(tmp_path, own_claim):
    from memrl_bench.runner.loop import run as run_one
    from tests.integration.test_findings import tiny

    for method in ({"name": "memrl"}, {"name": "none"}):
        for order in (0, 1, 2):
            run_one(tiny(method, order), tmp_path / f"{method['name']}-{order}")
    found = fd.findings(tmp_path, warn=None)
    assert [f.id for f in found] == [*BUILT_IN, "own_memrl_beats_none"]  # registered last, listed last
    mine = found[-1]
    assert mine.claim is own_claim and mine.verdict in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)
    (decides,) = mine.rows
    test_sr = {
        name: [
            json.loads((tmp_path / f"{name}-{o}" / "metrics.json").read_text())["success_rate"]["test_in_distribution"] for o in (0, 1, 2)
        ]
        for name in ("memrl", "none")
    }
    last = lambda by_epoch: by_epoch[max(by_epoch, key=int)]  # noqa: E731
    assert decides.n == 3 and decides.mean == pytest.approx(sum(last(m) - last(n) for m, n in zip(test_sr["memrl"], test_sr["none"])) / 3)
    markdown, page = fd.render_markdown(found, tmp_path), fd.render_html(found, tmp_path)
    number = [f for f in found if f.verdict != NOT_MEASURED].index(mine) + 1
    assert f"### {number}. {own_claim.text}\n\n**Verdict: {mine.verdict}.** {own_claim.measurement}" in markdown
    assert "| memrl ε=0 - none: held-out test SR (decides) |" in markdown
    assert f"<h3>{number}. {html.escape(own_claim.text)}</h3>" in page  # escaped as every claim


def test_an_own_claim_leaves_the_registry_when_removed():
    module = importlib.import_module("tests.own_claim")
    try:
        assert fd.claims()[-1] is module.memrl_beats_none and fd.claim_by_id("own_memrl_beats_none") is module.memrl_beats_none
    finally:
        fd.unregister("own_memrl_beats_none")
        sys.modules.pop("tests.own_claim", None)
    assert [c.id for c in fd.claims()] == BUILT_IN
    for lookup in (fd.claim_by_id, fd.unregister):
        with pytest.raises(fd.ClaimError, match="no claim 'own_memrl_beats_none' is registered"):
            lookup("own_memrl_beats_none")


def test_registering_a_claim_wrongly_is_one_clear_error(own_claim):
    def rows(study: fd.Study) -> list[fd.Row | None]:
        return []

    with pytest.raises(fd.ClaimError, match="claim 'own_memrl_beats_none' is registered twice: by tests.own_claim.memrl_beats_none and"):
        fd.claim(id="own_memrl_beats_none", text="t", measurement="m", measured_by=("critique",), study_kind="critique")(rows)
    with pytest.raises(fd.ClaimError, match="claim 'x': study_kind 'real' is not one of critique, drift, families, families_drift"):
        fd.claim(id="x", text="t", measurement="m", measured_by=("critique",), study_kind="real")
    with pytest.raises(fd.ClaimError, match="claim 'x': measured_by and real_measured_by are lists of presets"):
        fd.claim(id="x", text="t", measurement="m", measured_by="critique", study_kind="critique")
    with pytest.raises(fd.ClaimError, match="claim 'x' needs the synthetic env's ground truth"):
        fd.claim(
            id="x",
            text="t",
            measurement="m",
            measured_by=("critique",),
            study_kind="critique",
            needs_ground_truth=True,
            real_measured_by=("critique_real_methods",),
        )
    with pytest.raises(
        fd.ClaimError, match="claim 'x' needs a real model: it needs real_measured_by presets and no synthetic ground truth"
    ):
        fd.claim(id="x", text="t", measurement="m", measured_by=("critique",), study_kind="critique", needs_real_model=True)
    assert [c.id for c in fd.claims()] == [*BUILT_IN, own_claim.id]  # nothing half-registered


@pytest.mark.parametrize("registered", fd.claims(), ids=lambda c: c.id)
def test_every_registered_claim_keeps_the_interface(registered):
    """Its presets exist (the real-model ones are the real study's), and on a study without runs it
    is not measured, naming those presets, rather than failing."""
    presets = {p.stem for p in (Path(CONF_DIR) / "experiment").glob("*.yaml")}
    kind = fd.STUDY_KINDS[registered.study_kind]
    assert registered.measured_by and set(registered.measured_by) <= presets and kind.study in presets
    assert set(registered.real_measured_by) <= presets and all(p.startswith(f"{kind.real_study}_") for p in registered.real_measured_by)
    assert kind.real_study is None or kind.real_study in presets
    finding = registered.finding(fd.Study([]), fd.SYNTHETIC)
    assert finding.rows == () and finding.verdict == NOT_MEASURED and finding.presets == registered.measured_by
    on_llm = registered.finding(fd.Study([]), fd.Section("REAL MODEL m on env e", synthetic=False))
    assert on_llm.presets == (registered.real_measured_by if kind.real_study else registered.measured_by)
