"""A Ctrl-C that lands in a finalizer (py4j's, for TextWorldExpress's JVMs) is not lost."""

from __future__ import annotations

import gc
import weakref

import pytest

from memrl_bench import interrupts
from memrl_bench.runner import run
from tests.helpers import config


def _drop_an_interrupt_in_a_finalizer() -> None:
    class Held:
        pass

    def finalizer(_ref):
        raise KeyboardInterrupt  # what Python does when SIGINT arrives while a weakref callback runs

    held = Held()
    ref = weakref.ref(held, finalizer)
    del held
    gc.collect()
    assert ref() is None


def test_an_interrupt_dropped_in_a_finalizer_is_remembered_not_printed(capsys):
    interrupts.keep_dropped_interrupts()
    _drop_an_interrupt_in_a_finalizer()
    assert "Exception ignored" not in capsys.readouterr().err
    with pytest.raises(KeyboardInterrupt):
        interrupts.raise_if_interrupted()
    interrupts.raise_if_interrupted()  # delivered once


def test_a_run_stops_at_its_next_batch_after_a_dropped_interrupt(tmp_path):
    interrupts.keep_dropped_interrupts()
    _drop_an_interrupt_in_a_finalizer()
    with pytest.raises(KeyboardInterrupt):
        run(config(), tmp_path / "run")
    assert not (tmp_path / "run" / "COMPLETE").exists()
    run(config(), tmp_path / "run")  # the interrupt was delivered once: the same command now runs to the end
    assert (tmp_path / "run" / "COMPLETE").exists()
