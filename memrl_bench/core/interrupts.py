"""A Ctrl-C is never lost.

Python raises KeyboardInterrupt wherever the main thread happens to be, also inside a
finalizer (py4j's weakref callbacks for TextWorldExpress's JVM objects). There the
exception is handed to sys.unraisablehook, printed as "Exception ignored in ..." and
dropped: the run would go on to the end and exit 0. `keep_dropped_interrupts` makes the
hook remember such an interrupt instead of printing it, and the runner calls
`raise_if_interrupted` before every batch and before marking a run complete. An interrupt
that lands inside an asyncio task is raised out of the loop by asyncio itself;
`close_event_loop` and `quiet_about_interrupted_tasks` keep it from also being printed.
Nor does a Ctrl-C that lands between a coroutine's creation and its `await` print "coroutine
... was never awaited": after the first interrupt that warning is ignored (before it, it is
a bug and still shown).

Nor does a sweep's job outlive the sweep: a job a local launcher (joblib, submitit_local) runs in a worker process
of its own (`a_sweeps_job`) is interrupted as by a Ctrl-C when the sweep's process ends, however it ends, and its
worker ends then too (a killed sweep's workers went on playing their runs, holding their folders' locks, 55b).

Nor is a killed process's pool left behind: `die_with_parent`, a pool's initializer, has
the kernel kill each worker when the process that forked it dies, however it dies (a
SIGKILL gives it no chance to stop its pool; forked workers blocked on the pool's queue
would wait forever). A study's workers (`study_worker`, `study_task`) take a Ctrl-C that
finds them idle on the pool's queue quietly (Python would print the worker's traceback
there) and start no task after one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import select
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any

_dropped = threading.Event()
_next_hook = sys.unraisablehook


def _hook(unraisable: Any) -> None:
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _dropped.set()
        return
    _next_hook(unraisable)


def _on_sigint(signum: int, frame: Any) -> None:
    warnings.filterwarnings("ignore", message="coroutine .* was never awaited", category=RuntimeWarning)
    signal.default_int_handler(signum, frame)


def keep_dropped_interrupts() -> None:
    """Install the hook and the SIGINT handler (once per process; other unraisable errors go to
    the previous hook; a SIGINT that is ignored or handled by someone else is left so)."""
    global _next_hook
    if sys.unraisablehook is not _hook:
        _next_hook = sys.unraisablehook
        sys.unraisablehook = _hook
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt (once) if an interrupt was dropped in a finalizer since the last call."""
    if _dropped.is_set():
        _dropped.clear()
        raise KeyboardInterrupt


def close_event_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close `loop`, first ending the tasks an interrupt left in flight, quietly.

    asyncio raises a KeyboardInterrupt that lands inside a task out of the loop and also
    leaves it on the task, where nobody retrieves it: the task's finalizer then prints "Task
    exception was never retrieved" with a traceback. This can happen while the tasks unwind
    here (the terminal's Ctrl-C reaches a JVM first, the env fails, and Python sees the signal
    only now), so the loop is run until every task is done, every task's exception is
    retrieved, and the interrupt is raised again once the loop is closed.
    """
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    interrupted: KeyboardInterrupt | None = None
    while not all(task.done() for task in tasks):
        try:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        except KeyboardInterrupt as exc:
            interrupted = exc
    for task in tasks:
        if not task.cancelled():
            task.exception()  # marks it retrieved
    loop.close()
    if interrupted is not None:
        raise interrupted


def quiet_about_interrupted_tasks(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The loop's exception handler: a task that ended with a KeyboardInterrupt is not news
    (the interrupt itself is raised out of the loop); everything else goes to the default handler."""
    if not isinstance(context.get("exception"), KeyboardInterrupt):
        loop.default_exception_handler(context)


INTERRUPTED = 130  # the shell's code for a command ended by SIGINT
PR_SET_PDEATHSIG = 1  # linux/prctl.h
# what a command says when a worker of its pool died outright (the OOM killer, a SIGKILL): concurrent.futures' own
# BrokenProcessPool is a traceback (42b); what finished before is kept
WORKER_LOST = "stopped: a worker process died (killed by a signal: out of memory?); what finished is kept: re-run the same command"


def die_with_parent(parent: int) -> None:
    """In a worker process (a pool's initializer, given the parent's pid): SIGKILL it when the
    thread that forked it ends (prctl PR_SET_PDEATHSIG; Linux: elsewhere only the check below),
    and end it now if `parent` already died before this call (the worker then has another parent)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


_in_task = threading.Event()  # a study worker is running a task
_stopped = threading.Event()  # a study worker was interrupted: it starts no further task


def study_worker(parent: int) -> None:
    """A study pool's initializer (given the study's pid): `die_with_parent`, and a Ctrl-C interrupts only a task in
    progress; one that finds the worker waiting on the pool's queue is kept for the next task (`study_task`)."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, _study_worker_sigint)


def _study_worker_sigint(signum: int, frame: Any) -> None:
    _stopped.set()
    if _in_task.is_set():
        _on_sigint(signum, frame)


@contextlib.contextmanager
def study_task() -> Iterator[None]:
    """Around a study worker's task: KeyboardInterrupt at once if the worker was interrupted before (the study is stopping:
    the tasks the pool had queued do not start)."""
    if _stopped.is_set():
        raise KeyboardInterrupt
    _in_task.set()
    try:
        yield
    finally:
        _in_task.clear()


SWEEP_PROCESS = "MEMRL_BENCH_SWEEP_PROCESS"  # "<pid> <start time>" of the sweep whose local launcher runs its jobs elsewhere
JOB_STOP_S = 60  # how long a job whose sweep ended may take to stop as a Ctrl-C stops it, before its worker ends anyway
_idle = threading.Event()  # no job is running in this (worker) process
_idle.set()
_watching = threading.Lock()


def _started(pid: int) -> str | None:
    """The start time of process `pid` (clock ticks after boot: a pid used again has another), or None if it has ended."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[19].decode()
    except (OSError, IndexError):
        return None


def note_the_sweep(in_workers: bool) -> None:
    """In a sweep's process, before its launcher starts: name this process to the worker processes that run its jobs
    (they inherit the environment: `a_sweeps_job`) where a local launcher runs them so (`in_workers`); else name none
    (a name inherited from elsewhere would stop a job run here)."""
    if in_workers:
        os.environ[SWEEP_PROCESS] = f"{os.getpid()} {_started(os.getpid())}"
    else:
        os.environ.pop(SWEEP_PROCESS, None)


def watch_the_sweep() -> None:
    """In a worker process of a sweep's (SWEEP_PROCESS names another process), as a job starts or as the worker does (a
    pool's initializer): a thread that waits for the sweep's process to end, then interrupts the job running (as a Ctrl-C:
    what it finished is kept), waits up to JOB_STOP_S for it to stop and ends the worker; started once. Not watched: no
    pidfd (Linux before 5.3)."""
    pid, _, started = os.environ.get(SWEEP_PROCESS, "").partition(" ")
    if not pid.isdigit() or int(pid) == os.getpid() or not _watching.acquire(blocking=False):
        return
    try:
        sweep: int | None = os.pidfd_open(int(pid))
    except ProcessLookupError:
        sweep = None
    except OSError:
        return
    if _started(int(pid)) != started:  # ended before this worker looked, its pid perhaps another process's since
        sweep = None
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # a sweep started in the background (`nohup ... &`) hands its workers SIGINT ignored: the watch's SIGINT did not
        # stop the job, which played on for JOB_STOP_S after the sweep was killed
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def watch() -> None:
        if sweep is not None:
            poller = select.poll()
            poller.register(sweep, select.POLLIN)  # readable once the process has ended
            poller.poll()
        if not _idle.is_set():
            os.kill(os.getpid(), signal.SIGINT)
            _idle.wait(JOB_STOP_S)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(INTERRUPTED)

    threading.Thread(target=watch, name="memrl-bench sweep watch", daemon=True).start()


@contextlib.contextmanager
def a_sweeps_job(in_a_sweep: bool) -> Iterator[None]:
    """Around a job (`in_a_sweep`: of a sweep): where a local launcher runs it in a worker process (note_the_sweep), it is
    interrupted as by a Ctrl-C when the sweep's process ends (a SIGKILL, a SIGTERM), and the worker ends then (one idle at
    once); a job the sweep's own process runs, and a single run, are left as they are."""
    if in_a_sweep:
        watch_the_sweep()
    _idle.clear()
    try:
        yield
    finally:
        _idle.set()
