"""A run's progress: a bar on a terminal, log lines when stderr is not one (nohup, SLURM, CI).

Both take the episode records of each logged batch, so the lines can count LLM calls
and retries (acting and memory management together) besides episodes.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

LOG_INTERVAL_S = 30.0  # at most one line per interval, plus the first and the last


class Progress:
    """Does nothing: progress=false."""

    def update(self, records: list[dict[str, Any]]) -> None:
        pass

    def close(self) -> None:
        pass


class ProgressBar(Progress):
    def __init__(self, total: int, initial: int, name: str):
        from tqdm import tqdm

        self._bar = tqdm(total=total, initial=initial, unit="ep", desc=name, leave=False)

    def update(self, records: list[dict[str, Any]]) -> None:
        self._bar.update(len(records))

    def close(self) -> None:
        self._bar.close()


class ProgressLog(Progress):
    """One line now, then one per LOG_INTERVAL_S as batches finish, and one at the end:
    episodes done, episodes/s and ETA (from this invocation's pace), LLM calls and retries."""

    def __init__(self, total: int, initial: int, name: str, stream: TextIO | None = None, interval_s: float = LOG_INTERVAL_S):
        self.total, self.initial, self.done, self.name = total, initial, initial, name
        self.calls = self.retries = self.failures = 0
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self.started = self.last_line = time.monotonic()
        self._line()

    def update(self, records: list[dict[str, Any]]) -> None:
        self.done += len(records)
        for record in records:
            for usage in (record.get("act_usage") or {}, record.get("memory_usage") or {}):
                self.calls += usage.get("calls", 0)
                self.retries += usage.get("retries", 0)
                self.failures += usage.get("failures", 0)
        if time.monotonic() - self.last_line >= self.interval_s:
            self._line()

    def close(self) -> None:
        if self.done != self.done_at_last_line:
            self._line()

    def _line(self) -> None:
        now = time.monotonic()
        self.last_line, self.done_at_last_line = now, self.done
        played = self.done - self.initial
        rate = played / (now - self.started) if played and now > self.started else 0.0
        eta = f"ETA {_duration((self.total - self.done) / rate)}" if rate else "ETA -"
        resumed = f" ({self.initial} from an earlier invocation)" if self.initial else ""
        failures = f", {self.failures} failed" if self.failures else ""
        print(
            f"[{time.strftime('%H:%M:%S')}] {self.name}: {self.done}/{self.total} episodes{resumed}, {rate:.3g} episodes/s, "
            f"{self.calls} LLM calls, {self.retries} retries{failures}, {eta}",
            file=self.stream,
            flush=True,
        )


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def make_progress(total: int, initial: int, name: str, enabled: bool) -> Progress:
    """A bar on a terminal, log lines otherwise, nothing when disabled."""
    if not enabled:
        return Progress()
    return ProgressBar(total, initial, name) if sys.stderr.isatty() else ProgressLog(total, initial, name)
