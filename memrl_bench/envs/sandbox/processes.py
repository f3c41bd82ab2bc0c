"""Running a command and collecting its output: read until every holder of the output let go, kill at the time limit."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from memrl_bench.envs.sandbox.settings import CommandResult


def live_processes() -> dict[int, int]:
    """pid -> parent pid of every process that is not a zombie, from /proc/*/stat."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    return parents


def descendants(root_pid: int, parents: dict[int, int]) -> set[int]:
    """The processes below `root_pid` in `parents` (live_processes)."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, frontier = set(), [root_pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.add(child)
            frontier.append(child)
    return found


def _pipe_holders(pipe: int, pids: set[int]) -> set[int]:
    """The processes among `pids` with an open descriptor on the pipe whose inode is `pipe`."""
    target = f"pipe:[{pipe}]"
    holders = set()
    for pid in pids:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(f"/proc/{pid}/fd/{descriptor}") == target:
                    holders.add(pid)
                    break
            except OSError:
                continue
    return holders


def kill_command(proc: subprocess.Popen, pipe: int | None) -> None:
    """SIGKILL `proc`, its process group and tree, and every process holding its output pipe, until none is left.

    Holders are found by their open descriptors, so a child that left the tree (setsid,
    double fork) still dies while it can write to the command's output.
    """
    for _ in range(200):
        parents = live_processes()
        victims = descendants(proc.pid, parents) | ({proc.pid} & parents.keys())
        if pipe is not None:
            victims |= _pipe_holders(pipe, set(parents) - {os.getpid()})
        try:  # the process group too: every Popen here starts a session, so its pgid is proc.pid
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if not victims:
            return
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.005)


def collect_output(proc: subprocess.Popen, stdin: bytes | None, timeout_s: float, output_bytes: int) -> CommandResult:
    """Read the merged output of `proc` until every holder closed it, within the time limit."""
    start = time.monotonic()
    deadline = start + timeout_s
    if proc.stdin is not None:
        threading.Thread(target=_feed, args=(proc.stdin, stdin or b""), daemon=True).start()
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    pipe = os.fstat(fd).st_ino
    tail_room = output_bytes // 4  # the end of a long output (errors, verdicts) is kept too
    head_room = output_bytes - tail_room
    head, tail, seen, timed_out = bytearray(), bytearray(), 0, False
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 and not timed_out:
            timed_out = True
            kill_command(proc, pipe)
            deadline, remaining = time.monotonic() + 2.0, 2.0  # read what the killed processes left in the pipe
        if remaining <= 0:
            break
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        seen += len(chunk)
        room = max(0, head_room - len(head))
        head += chunk[:room]
        if tail_room:
            tail = (tail + chunk[room:])[-tail_room:]
    try:
        status = proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:  # output closed but the process lingers: treat as a timeout
        timed_out = True
        kill_command(proc, None)
        status = proc.wait()
    proc.stdout.close()
    dropped = seen - len(head) - len(tail)
    gap = f"\n[... {dropped} bytes of output not shown ...]\n" if dropped else ""
    output = head.decode("utf-8", errors="replace") + gap + tail.decode("utf-8", errors="replace")
    exit_code = None if timed_out else (128 - status if status < 0 else status)  # killed by signal N -> 128 + N, as bash reports
    return CommandResult(exit_code, output, timed_out, dropped, time.monotonic() - start)


def _feed(pipe: Any, data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, OSError):
        pass
