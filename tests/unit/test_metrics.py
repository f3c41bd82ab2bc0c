"""SR, CSR and both forgetting rates pinned on a hand-built episode log."""

import pytest

from memrl_bench.core import metrics
from tests.helpers import record

# Four tasks over three epochs (1 = solved):
#        e1 e2 e3
#   a     1  0  1
#   b     0  1  1
#   c     1  1  0
#   d     0  0  0
LOG = [
    record(task, epoch, bool(ok))
    for task, row in {"a": (1, 0, 1), "b": (0, 1, 1), "c": (1, 1, 0), "d": (0, 0, 0)}.items()
    for epoch, ok in enumerate(row, start=1)
]


def test_success_rate_per_epoch():
    assert metrics.success_rates(LOG)["train"] == {1: 0.5, 2: 0.5, 3: 0.5}


def test_cumulative_success_rate():
    # e1: {a, c}; e2: + b; e3: nothing new. d never.
    assert metrics.cumulative_success_rates(LOG) == {1: 0.5, 2: 0.75, 3: 0.75}


def test_forgetting_rates():
    fr = metrics.forgetting_rates(LOG)
    # e2: lost {a}; failures at e2 {a, d}; solved at e1 {a, c}
    # e3: lost {c}; failures at e3 {c, d}; solved at e2 {b, c}
    assert fr["forgetting_rate"] == {2: 0.5, 3: 0.5}
    assert fr["forgetting_of_solved"] == {2: 0.5, 3: 0.5}


def test_forgetting_distinguishes_its_two_denominators():
    log = [
        record(t, e, ok) for t, e, ok in [("a", 1, True), ("b", 1, True), ("c", 1, False), ("a", 2, False), ("b", 2, True), ("c", 2, False)]
    ]
    fr = metrics.forgetting_rates(log)
    assert fr["forgetting_rate"][2] == pytest.approx(1 / 2)  # lost a; failures a, c
    assert fr["forgetting_of_solved"][2] == pytest.approx(1 / 2)  # lost a; solved a, b
    log.append(record("d", 2, False))
    log.append(record("d", 1, False))
    fr = metrics.forgetting_rates(log)
    assert fr["forgetting_rate"][2] == pytest.approx(1 / 3)
    assert fr["forgetting_of_solved"][2] == pytest.approx(1 / 2)


def test_test_phases_are_named_by_split_and_pass_at_k():
    log = [
        record("a", 3, False, phase="test", split="test_in_distribution", sample_index=0),
        record("a", 3, True, phase="test", split="test_in_distribution", sample_index=1),
    ]
    log += [record("b", 3, False, phase="test", split="test_in_distribution", sample_index=s) for s in (0, 1)]
    assert metrics.success_rates(log) == {"test_in_distribution": {3: 0.25}}
    assert metrics.pass_at_k(log) == {"test_in_distribution@2": 0.5}


def test_gini_extremes():
    assert metrics.gini([5, 5, 5, 5]) == pytest.approx(0.0)
    assert metrics.gini([0, 0, 0, 12]) == pytest.approx(3 / 4)


def test_latency_leaves_out_cache_hits():
    hit = record("a", 1, True, latency_s={"act": 0.0, "retrieve": 0.001}, act_usage={"calls": 2, "cache_hits": 2})
    miss = record("b", 1, True, latency_s={"act": 2.0, "retrieve": 0.003}, act_usage={"calls": 2, "cache_hits": 0})
    lat = metrics.latency_percentiles([hit, miss])
    assert lat["act"]["n"] == 1 and lat["act"]["p50"] == 2.0
    assert lat["retrieve"]["n"] == 2


def test_forgetting_rate_is_undefined_when_nothing_was_solved_before():
    log = [record(t, e, False) for t in ("a", "b") for e in (1, 2)]
    fr = metrics.forgetting_rates(log)
    assert fr["forgetting_rate"] == {2: None} and fr["forgetting_of_solved"] == {2: None}


def test_never_retrieved_counts_retrievals_of_every_phase():
    train = record("a", 1, True)
    test = record("b", 2, False, phase="test", split="test_in_distribution", retrieved=[{"item_id": "m2", "similarity": 0.9}])
    assert metrics.retrieval_counts([train, test], ["m1", "m2"]) == {"m1": 0, "m2": 1}
    assert metrics.retrieval_counts([train, test], ["m1", "m2"], ("train",)) == {"m1": 0, "m2": 0}


def test_step_latency_names_cache_hits_apart():
    turns = [
        {"action": "a", "observation": "o", "latency_s": {"act": 2.0, "env": 0.1}, "cache_hit": False},
        {"action": "a", "observation": "o", "latency_s": {"act": 0.0, "env": 0.1}, "cache_hit": True},
    ]
    log = [record("a", 1, True, turns=turns)]
    steps = metrics.step_latency_percentiles(log)
    assert steps["act"]["n"] == 1 and steps["act"]["p50"] == 2.0
    assert steps["act_with_cache_hits"]["n"] == 2


def _two_items() -> list:
    from memrl_bench.core.schema import MemoryItem

    provenance = {"split": "train", "phase": "train", "epoch": 1, "success": True}
    return [
        MemoryItem.from_dict({"id": i, "content": "", "provenance": {**provenance, "task_id": i, "episode_id": f"e-{i}"}})
        for i in ("m1", "m2")
    ]


def test_the_findings_count_a_memory_as_tested_only_when_training_injects_it():
    items = _two_items()
    train = record("a", 1, True, retrieved=[{"item_id": "m1", "similarity": 0.9}])
    test = record("b", 2, False, phase="test", split="test_in_distribution", retrieved=[{"item_id": "m2", "similarity": 0.9}])
    assert metrics.injection_spread([train, test], items) == {"never_retrieved": 0.0, "gini": 0.0}  # metrics.json: any phase
    assert metrics.injection_spread([train, test], items, ("train",))["never_retrieved"] == 0.5  # the findings: training only


def test_a_run_that_injects_a_document_rebuilt_from_its_items_has_no_share_of_items_never_injected():
    items = _two_items()
    document = [record("a", 1, True, retrieved=[{"item_id": "workflows", "similarity": 0.0}])]  # AWM: its sources are the items
    assert metrics.injection_spread(document, items, ("train",)) == {"never_retrieved": None, "gini": None}
    nothing = [record("a", 1, True)]  # no injection at all: every item is left out (MemRL below its threshold)
    assert metrics.injection_spread(nothing, items, ("train",))["never_retrieved"] == 1.0
    both = [record("a", 1, True, retrieved=[{"item_id": "workflows", "similarity": 0.0}, {"item_id": "m1", "similarity": 0.9}])]
    assert metrics.injection_spread(both, items, ("train",))["never_retrieved"] == 0.5  # Dynamic Cheatsheet's retrieval synthesis
