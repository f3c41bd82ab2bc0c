"""`Sandbox`: the throwaway container of one episode (see the package's docstring), and whether one can be built here."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import tempfile
import time
import uuid
import weakref
from functools import lru_cache
from pathlib import Path
from typing import Any

from memrl_bench.envs.sandbox.cgroup import Cgroup, join_cgroups
from memrl_bench.envs.sandbox.check import CHECK_ENV, CheckResult, check_rules, system_changes
from memrl_bench.envs.sandbox.enter import ENTER
from memrl_bench.envs.sandbox.overlay import HIDDEN_LIST, LAYERS_FD, MASKED_PROC, setup_script
from memrl_bench.envs.sandbox.processes import collect_output, kill_command, live_processes
from memrl_bench.envs.sandbox.seccomp import syscall_filter
from memrl_bench.envs.sandbox.settings import (
    DEFAULT_HIDDEN_PATHS,
    PATH,
    PYTHON,
    REQUIREMENT,
    CommandResult,
    Limits,
    SandboxError,
    SandboxUnavailable,
    check_workdir,
    find_tools,
    hidden_for_this_process,
    normal_hidden_paths,
)

_STOP_ROUNDS = 20  # passes over /proc to stop what the episode left running before a check
# Rights a root shell keeps inside: ownership, permissions and switching users (docker's
# default set without mknod, raw sockets, chroot and file capabilities).
_KEPT_CAPABILITIES = "chown,dac_override,fowner,fsetid,kill,setgid,setuid,setpcap,net_bind_service,audit_write"


def _teardown(state: dict[str, Any]) -> None:
    """Kill the container (its pid namespace dies with its first process), remove cgroup and mount point."""
    proc: subprocess.Popen | None = state.get("proc")
    if proc is not None:
        kill_command(proc, None)
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
    cgroup: Cgroup | None = state.get("cgroup")
    if cgroup is not None:
        cgroup.remove()
    mount_point: str | None = state.get("mount_point")
    if mount_point:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(mount_point, HIDDEN_LIST))
        with contextlib.suppress(OSError):
            os.rmdir(mount_point)
    state.clear()


class Sandbox:
    """A throwaway container: run bash commands in it, then close it; nothing reaches the host.

    Use as a context manager, or call `start()` and `close()`.
    """

    def __init__(
        self,
        limits: Limits = Limits(),  # noqa: B008 (Limits is a frozen dataclass: one shared default is safe)
        workdir: str = "/root",
        hidden_paths: tuple[str, ...] = DEFAULT_HIDDEN_PATHS,
        readonly_binds: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ):
        hidden_paths = normal_hidden_paths((*hidden_paths, *hidden_for_this_process()))
        check_workdir(workdir, hidden_paths)
        self.limits = limits
        self.workdir = workdir  # the cwd of every command
        self.hidden_paths = hidden_paths  # host folders shown empty inside
        self.readonly_binds = readonly_binds  # host folders shown read-only inside, even under a hidden one
        self.env = {
            "PATH": PATH,
            "HOME": "/root",
            "USER": "root",
            "LOGNAME": "root",
            "SHELL": "/bin/bash",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            **(env or {}),
        }
        self.features: list[str] = []
        self._state: dict[str, Any] = {}
        self._init_pid: int | None = None
        self._finalizer = weakref.finalize(self, _teardown, self._state)

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._init_pid is not None and Path(f"/proc/{self._init_pid}").exists()

    def start(self) -> None:
        if os.geteuid() != 0:
            raise SandboxUnavailable(f"{REQUIREMENT}: geteuid() returned {os.geteuid()}, not 0")
        self._tools = find_tools("unshare", "nsenter", "setpriv", "prlimit", "mount", "umount", "pivot_root", "sleep", "bash")
        syscall_filter()  # compiled before anything is built: without libseccomp the sandbox is unavailable
        name = f"memrl-sandbox-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        cgroup = Cgroup(name, self.limits.memory_bytes, self.limits.max_processes)
        # on the host it holds the hidden paths alone (the tmpfs is mounted over it in the private namespace)
        mount_point = tempfile.mkdtemp(prefix=f"{name}-")
        self._state.update(cgroup=cgroup, mount_point=mount_point)
        Path(mount_point, HIDDEN_LIST).write_bytes(b"\0".join(os.fsencode(path) for path in self.hidden_paths))
        # The tmpfs is RAM charged to the memory cgroup: full, it must leave room for the processes, else the
        # cgroup's OOM killer goes on to the container's first process
        disk_bytes = (
            min(self.limits.disk_bytes, self.limits.memory_bytes * 3 // 4) if "memory" in cgroup.limited else self.limits.disk_bytes
        )
        argv = [
            self._tools["unshare"],
            "--mount",
            "--pid",
            "--fork",
            "--net",
            "--uts",
            "--ipc",
            "--propagation",
            "private",
            "/bin/sh",
            "-c",
            setup_script(disk_bytes, self.readonly_binds, self.workdir),
            "setup",
            mount_point,
        ]
        try:
            proc = subprocess.Popen(
                join_cgroups(cgroup.procs_files(), argv),
                stdin=subprocess.PIPE,  # never written: its end tells the container's first process the harness is gone
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={"PATH": PATH},
            )
        except OSError as err:
            self.close()
            raise SandboxUnavailable(f"{REQUIREMENT}: starting unshare failed: {err}") from err
        self._state["proc"] = proc
        log = self._wait_ready(proc)
        if log is not None:
            self.close()
            raise SandboxUnavailable(f"{REQUIREMENT}: {log.strip() or 'the container exited during setup'}")
        init = [pid for pid, parent in live_processes().items() if parent == proc.pid]  # the container's pid 1
        if len(init) != 1:
            self.close()
            raise SandboxError(f"the sandbox container has {len(init)} first processes after setup, expected 1")
        self._init_pid = init[0]
        try:  # an OOM kill should pick a command, not the container (needs CAP_SYS_RESOURCE)
            Path(f"/proc/{self._init_pid}/oom_score_adj").write_text("-1000")
        except OSError:
            pass
        self.features = [
            "mount, pid, net, uts, ipc namespaces",
            f"overlayfs (lower: host /) with its upper layer and /dev/shm in one tmpfs of {disk_bytes} bytes",
            "pivot_root",
            f"capability bounding set {_KEPT_CAPABILITIES}",
            "/proc/sys read-only",
            f"/proc/{{{','.join(MASKED_PROC)}}} empty",
            "a fresh session keyring per command",
            "no_new_privs and a seccomp filter (libseccomp) per command",
            *cgroup.features,
        ]
        if "memory" not in cgroup.limited:
            self.features.append("RLIMIT_AS per process (no memory cgroup writable)")
        if "pids" not in cgroup.limited:
            self.features.append("RLIMIT_NPROC (no pids cgroup writable; uid 0 is exempt)")

    def _wait_ready(self, proc: subprocess.Popen) -> str | None:
        """None once the container printed "ready"; else everything it printed (the failing call)."""
        assert proc.stdout is not None
        fd, log, deadline = proc.stdout.fileno(), b"", time.monotonic() + 30.0
        while not log.endswith(b"ready\n"):
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return log.decode(errors="replace") + "\n(container setup did not finish within 30 s)"
            chunk = os.read(fd, 65536)
            if not chunk:
                return log.decode(errors="replace")
            log += chunk
        return None

    def run(
        self,
        command: str,
        timeout_s: float | None = None,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> CommandResult:
        """Run `command` with bash as root inside the container (see the package's docstring for when it ends);
        `pass_fds`: descriptors of this process the command inherits, under the same numbers."""
        return self._run(command, timeout_s, stdin, env, None, pass_fds)

    def check(self, command: str, timeout_s: float | None = None) -> CheckResult:
        """Run a task's check as `run` does, but with trusted tools: the host's system folders laid over the
        episode's, read only, in a mount namespace of the check's own, system folders first on PATH; and
        list what the episode changed among the system files (CheckResult.system_changes), before the
        check runs and after, with what the episode left running stopped from before the first list to after the last."""
        if not self.running:
            raise SandboxError("the sandbox is not running (never started, closed, or its container died)")
        upper = f"/proc/{self._init_pid}/fd/{LAYERS_FD}/upper"
        if not os.path.isdir(upper):
            raise SandboxError(f"the sandbox's upper layer is not readable at {upper}")
        read, write = os.pipe()
        settings = {"fd": write, "workdir": self.workdir, "rules": check_rules()}
        # What the episode left running cannot act while the system files are listed and the check runs (write into the
        # check's pipes through /proc/<pid>/fd, stop or rewrite its shell; a forged /etc/group put in place once the first
        # list had read it and taken away before the second: the thirty-sixth round): frozen (a cgroup freezer), else
        # stopped; a check that looks for such a process (pgrep) still finds it, and it runs again after.
        cgroup: Cgroup = self._state["cgroup"]
        stopped = [] if cgroup.freeze() else self._stop_episode_processes()
        with os.fdopen(read, "rb") as channel:
            try:
                try:
                    changes = system_changes(upper, self.hidden_paths)
                    refused_before = cgroup.refusals()
                    result = self._run(command, timeout_s, None, CHECK_ENV, settings, (write,))
                    refused = cgroup.refusals()
                    starved = tuple(resource for resource, count in refused_before.items() if refused.get(resource, count) > count)
                finally:
                    os.close(write)
                for kind, paths in system_changes(upper, self.hidden_paths).items():
                    changes[kind] = list(dict.fromkeys(changes.get(kind, []) + paths))
            finally:
                cgroup.thaw()
                for pid in stopped:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGCONT)
            view = channel.read().decode(errors="replace")
        return CheckResult(result, {kind: paths[:5] for kind, paths in changes.items()}, view, starved)

    def _episode_processes(self) -> set[int]:
        """Every live process in the container but its first."""
        namespace = os.stat(f"/proc/{self._init_pid}/ns/pid").st_ino
        found = set()
        for pid in live_processes():
            with contextlib.suppress(OSError):
                if pid != self._init_pid and os.stat(f"/proc/{pid}/ns/pid").st_ino == namespace:
                    found.add(pid)
        return found

    def _stop_episode_processes(self) -> list[int]:
        """Where no cgroup freezer is writable: SIGSTOP every process the episode left running, until none is left running
        (weaker: a process's own timers can send it SIGCONT)."""
        stopped: set[int] = set()
        for _ in range(_STOP_ROUNDS):  # a process may fork while the others are being stopped
            found = self._episode_processes() - stopped
            for pid in found:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
            if not found:
                break
            stopped |= found
        return sorted(stopped)

    def _run(
        self,
        command: str,
        timeout_s: float | None,
        stdin: bytes | None,
        env: dict[str, str] | None,
        check: dict[str, Any] | None,
        pass_fds: tuple[int, ...],
    ) -> CommandResult:
        if not self.running:
            raise SandboxError("the sandbox is not running (never started, closed, or its container died)")
        cgroup: Cgroup = self._state["cgroup"]
        tools = self._tools
        capabilities = ",".join("+" + c for c in _KEPT_CAPABILITIES.split(","))
        syscalls = syscall_filter()
        argv = [tools["nsenter"], "-t", str(self._init_pid), "-u", "-i", "-n", "-p", "--"]  # the mount namespace last, in ENTER
        argv += [
            PYTHON,
            "-I",
            "-S",
            "-c",
            ENTER,
            str(self._init_pid),
            syscalls.program,
            syscalls.calls,
            json.dumps(check) if check is not None else "-",
        ]
        argv += [tools["setpriv"], f"--bounding-set=-all,{capabilities}", "--"]
        argv += [tools["prlimit"], "--core=0", f"--nproc={self.limits.max_processes}"]
        if "memory" not in cgroup.limited:
            argv.append(f"--as={self.limits.memory_bytes}")
        argv += ["--", tools["bash"], "-c", command]
        proc = subprocess.Popen(
            join_cgroups(cgroup.procs_files() if check is not None else cgroup.episode_procs_files(), argv),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**self.env, **(env or {})},
            pass_fds=pass_fds,
        )
        result = collect_output(proc, stdin, self.limits.timeout_s if timeout_s is None else timeout_s, self.limits.output_bytes)
        if not self.running:
            raise SandboxError(f"the sandbox container died while running {command[:200]!r}")
        return result

    def close(self) -> None:
        self._init_pid = None
        _teardown(self._state)


@lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """None if a sandbox can be built here; else why not (the failing call). Probed once per process."""
    try:
        with Sandbox(Limits(timeout_s=10.0)) as sandbox:
            result = sandbox.run("true")
        return None if result.ok else f"{REQUIREMENT}: a probe command failed: {result.output.strip()}"
    except (SandboxUnavailable, SandboxError) as err:
        return str(err)


def require_sandbox() -> None:
    """Raise SandboxUnavailable (naming the failing call) unless a sandbox can be built here."""
    reason = unavailable_reason()
    if reason:
        raise SandboxUnavailable(reason)


# What code inside a Sandbox may do, in short; a change makes gold results checked in the sandbox stale.
CONTAINMENT = (
    "namespaces, overlay, capabilities, cgroup; seccomp filter, fresh session keyring, /dev/shm in the disk tmpfs; own shadow files, "
    "checks with the host's system folders; a first process that starts nothing; the host's device nodes read only; no file "
    "leases; a check refused memory or a process has no verdict"
)
