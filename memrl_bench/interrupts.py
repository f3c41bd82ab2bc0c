"""A Ctrl-C is never lost.

Python raises KeyboardInterrupt wherever the main thread happens to be, also inside a
finalizer (py4j's weakref callbacks for TextWorldExpress's JVM objects). There the
exception is handed to sys.unraisablehook, printed as "Exception ignored in ..." and
dropped: the run would go on to the end and exit 0. `keep_dropped_interrupts` makes the
hook remember such an interrupt instead of printing it, and the runner calls
`raise_if_interrupted` before every batch and before marking a run complete.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_dropped = threading.Event()
_next_hook = sys.unraisablehook


def _hook(unraisable: Any) -> None:
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _dropped.set()
        return
    _next_hook(unraisable)


def keep_dropped_interrupts() -> None:
    """Install the hook (once per process; other unraisable errors go to the previous hook)."""
    global _next_hook
    if sys.unraisablehook is not _hook:
        _next_hook = sys.unraisablehook
        sys.unraisablehook = _hook


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt (once) if an interrupt was dropped in a finalizer since the last call."""
    if _dropped.is_set():
        _dropped.clear()
        raise KeyboardInterrupt
