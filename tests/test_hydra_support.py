"""memrl_bench.hydra_support against Hydra itself: a Hydra upgrade that changes how the
basic sweeper expands a sweep, or how compose runs inside the app, fails here."""

from __future__ import annotations

import pytest
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper  # only here: the reference the adapter must match

from memrl_bench.hydra_support import compose, composing, fixed, parsed, sweep_jobs

SWEEPS = [
    ["method=none,rag,memrl", "seed=0,1,2"],
    ["+experiment=critique_epsilon", "env.outcome_temperature=0,0.7", "task_order_seed=0,1", "seed=0"],
    ["method.epsilon=0.05,0.1", "protocol.epoch_order_seeds=null,[1],[0,1]", "method.epsilon=0.2"],  # a later value replaces the sweep in its place
    ["~memrl_preset@method", "++progress=false", "env.tasks={train: 4}"],
    ["llm.model='a,b'", "seed=range(0,3)"],
]


@pytest.mark.parametrize("arguments", SWEEPS)
def test_sweep_jobs_are_the_basic_sweepers(arguments):
    (jobs,) = BasicSweeper.split_arguments(parsed(arguments), None)
    assert sweep_jobs(arguments) == jobs


def test_compose_runs_inside_a_running_app_and_reads_the_sweep():
    with composing():
        outer = compose(fixed(["+experiment=demo", "seed=5,6"]), hydra_config=True)
        with composing():  # as the study does inside the memrl-bench app
            inner = compose(["method=rag"])
        assert outer.hydra.sweeper.params == {"method": "none,rag,memrl", "seed": "0,1,2"}
    assert inner.method.name == "rag" and "hydra" not in inner
