"""A Ctrl-C that lands in a finalizer (py4j's, for TextWorldExpress's JVMs) is not lost."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref

import pytest

from memrl_bench.core import interrupts
from memrl_bench.runner.loop import run
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


def _loop_with_a_task_that_a_late_ctrl_c_ends() -> tuple[asyncio.AbstractEventLoop, list[asyncio.Task]]:
    """Two tasks in flight: one ends with the KeyboardInterrupt Python raises while it unwinds
    (the signal is seen only after the env failed), one with an ordinary error."""

    async def interrupted_while_unwinding():
        try:
            await asyncio.sleep(3600)
        finally:
            raise KeyboardInterrupt

    async def failing():
        await asyncio.sleep(3600)

    loop = asyncio.new_event_loop()
    loop.set_exception_handler(interrupts.quiet_about_interrupted_tasks)
    tasks = [loop.create_task(interrupted_while_unwinding()), loop.create_task(failing())]
    loop.run_until_complete(asyncio.sleep(0))  # both started
    return loop, tasks


def test_closing_the_loop_ends_every_task_and_raises_a_late_interrupt_quietly(caplog):
    loop, tasks = _loop_with_a_task_that_a_late_ctrl_c_ends()
    with pytest.raises(KeyboardInterrupt):
        interrupts.close_event_loop(loop)
    assert loop.is_closed() and all(task.done() for task in tasks)
    del tasks
    gc.collect()
    assert "never retrieved" not in caplog.text


def test_a_task_left_with_an_interrupt_prints_nothing_when_collected(caplog):
    """The handler: a task that ended with KeyboardInterrupt outside close_event_loop (e.g. inside
    a batch) is finalized without 'Task exception was never retrieved'; other errors still are."""
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(interrupts.quiet_about_interrupted_tasks)

    async def raises(exc):
        raise exc

    for exc in (KeyboardInterrupt(), ValueError("still reported")):
        task = loop.create_task(raises(exc))
        with contextlib.suppress(KeyboardInterrupt):
            loop.run_until_complete(asyncio.sleep(0.01))
        assert task.done()
        del task
        gc.collect()
    loop.close()
    assert "KeyboardInterrupt" not in caplog.text and "still reported" in caplog.text


def test_a_coroutine_an_interrupt_left_unawaited_is_not_reported(recwarn):
    """A Ctrl-C between a coroutine's creation and its `await` prints no 'never awaited' warning;
    before any interrupt that warning is a bug and still shown."""
    import os
    import signal
    import warnings

    async def chat():
        return None

    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, also when the suite inherited SIGINT ignored
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            interrupts.keep_dropped_interrupts()
            chat()
            gc.collect()
            assert [str(w.message) for w in recwarn if "never awaited" in str(w.message)]
            recwarn.clear()
            with pytest.raises(KeyboardInterrupt):
                coroutine = chat()  # noqa: F841 (created, and the interrupt comes before its await)
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):  # the handler runs at the next check between bytecodes
                    pass
            del coroutine
            gc.collect()
            assert not [str(w.message) for w in recwarn if "never awaited" in str(w.message)]
    finally:
        signal.signal(signal.SIGINT, before)
