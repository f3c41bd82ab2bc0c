"""Run untrusted shell commands and generated code contained.

`Sandbox` is a throwaway container for one episode, built from kernel features only
(no docker, no image): `unshare` gives it its own mount, pid, network (loopback only),
uts and ipc namespaces; its root is an overlayfs whose lower layer is the host's `/`
(read only) and whose upper layer lives in a size-capped tmpfs, so every write vanishes
with the container; `pivot_root` detaches the host tree; folders such as /root, /home,
/work and /tmp, this harness's checkout and the shared data beside it are shown empty
(opaque overlay directories). Commands run as root in the
container with a capability bounding set that keeps file ownership, permissions and
user switching but drops mount, mknod, chroot, raw I/O, module loading, ptrace and
network administration; /proc/sys is read-only. Each command also gets no_new_privs, a
fresh session keyring and a seccomp filter (compiled by libseccomp) that refuses
namespaces, mounts, the kernel keyring, ptrace, module loading, bpf and their like; /proc/keys
and other host-wide /proc files are empty. Memory and live processes are capped by a cgroup
(v2 when delegated, else v1), or failing that by RLIMIT_AS per process; one tmpfs holds
every write, /dev/shm included. /etc/shadow and /etc/gshadow (and their backups) are the
container's own: the host's with every password hash replaced by `*`.

`Sandbox.check` runs a task's check with trusted tools: the host's system folders (/usr, /bin,
/lib ...) are laid over the episode's, read only, in a mount namespace of the check's own, and
the episode's changes to system files (files of the host modified, replaced or deleted, commands
shadowed, libraries added, the loader's configuration) are listed from the overlay's upper layer
before anything the episode wrote runs.

A command ends when every process holding its output has exited, as with `docker exec`
(so `cmd &` that keeps writing is waited for). At the time limit every such process and
the command's process tree are killed. A process that lets go of the output (a daemon)
keeps running until the container is closed, which kills its whole pid namespace.

`CodeRunner` runs one Python program: in a fresh Sandbox (root), or in a bare subprocess
for users without root, which contains much less (see RELIABILITY.md "Containment"); either
way the program gets a minimal environment and cannot read the harness's (`/proc/<ppid>/environ`).
A trusted launcher may run the program instead of python (`CodeRunner.run(launcher=...)`),
with a secret line on its standard input that the program never sees.

Settings that would switch the sandbox off (a hidden path that is `/` or holds the folders the
sandbox runs from, a relative or missing working directory) raise `SandboxSettingError`.

Whatever needs root or kernel features fails with `SandboxUnavailable`, whose message
names the failing call, never with a crash of the harness.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import json
import os
import select
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

_REQUIREMENT = "the sandbox needs root, mount/pid/net namespaces and overlayfs"
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Rights a root shell keeps inside: ownership, permissions and switching users (docker's
# default set without mknod, raw sockets, chroot and file capabilities).
_KEPT_CAPABILITIES = "chown,dac_override,fowner,fsetid,kill,setgid,setuid,setpcap,net_bind_service,audit_write"
# /proc entries that would let root change the host kernel; bound read-only inside.
_READONLY_PROC = ("sys", "sysrq-trigger", "irq", "bus", "fs")
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_PYTHON = os.path.realpath(sys.executable)
# /proc entries about the whole host (the kernel keyring's key names, timers, the scheduler);
# docker masks the same: they are shown as empty files.
_MASKED_PROC = ("keys", "key-users", "timer_list", "sched_debug")
# System calls that fail with EPERM for the code run inside (a seccomp filter compiled by
# libseccomp). Most of them also need a capability the bounding set drops; the filter is a
# second wall, and the only one for user namespaces, the kernel keyring and ptrace.
_DENIED_SYSCALLS = {
    "namespaces: a user namespace needs no capability and opens kernel code to its owner": ("unshare", "setns"),
    "mounts": ("mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"),
    "the kernel keyring: uid 0 inside is uid 0 of the host, whose keys it could read": ("keyctl", "add_key", "request_key"),
    "other processes' memory": ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"),
    "kernel modules and kexec": ("init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load"),
    "kernel interfaces with a record of privilege escalations": ("bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register"),
    "host-wide state": ("reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "quotactl_fd", "settimeofday", "clock_settime", "clock_adjtime", "iopl", "ioperm", "open_by_handle_at", "lookup_dcookie"),
}
# clone() flags that make a namespace; clone() with any of them fails like unshare().
_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET


def _harness_folders() -> tuple[str, ...]:
    """This source checkout (code, results/) and the shared data beside it, wherever they live."""
    checkout = Path(__file__).resolve().parents[2]
    if not (checkout / "pyproject.toml").is_file():
        return ()  # installed from a wheel: its site-packages folder is part of Python itself
    return tuple(sorted({str(p.resolve()) for p in (checkout, checkout.parent / "shared") if p.is_dir()}))


# Host folders shown empty inside: homes, scratch space, and the harness with its data, so
# that generated code reads neither gold answers nor other runs.
DEFAULT_HIDDEN_PATHS = ("/root", "/home", "/tmp", "/var/tmp", "/work", "/mnt", "/media") + _harness_folders()
# Folders the sandbox runs from (its shell, tools and libraries, /etc, /proc, /dev): a hidden path may not be or hold one.
_NEEDED_FOLDERS = ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev")
# The host's password files and their backups: the container gets copies whose password hashes are
# replaced (_PREPARE_UPPER); pam_pwhistory's old hashes (opasswd) an empty copy.
_PASSWORD_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd")
# The container's first process holds this descriptor on the tmpfs of the overlay's layers, so that a
# check can read the upper layer; commands cannot follow it (pid 1 keeps capabilities they lack).
_LAYERS_FD = 3


class SandboxUnavailable(RuntimeError):
    """This machine cannot build the sandbox; the message names the failing call."""


class SandboxError(RuntimeError):
    """A running sandbox broke (its container died)."""


class SandboxSettingError(ValueError):
    """A setting would switch the sandbox off or keep it from starting; the message names the value
    (an env turns it into a ConfigError naming its key)."""


def normal_hidden_paths(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The hidden paths in one form: `/opt/`, `/var/lib/x/.` and `//opt` would otherwise hide nothing (checked first)."""
    check_hidden_paths(paths)
    return tuple("/" + os.path.normpath(path).lstrip("/") for path in paths)


def check_hidden_paths(paths: tuple[str, ...]) -> None:
    """Refuse a hidden path that is relative, is `/`, or is or holds a folder the sandbox runs from.

    Hiding works by showing a folder empty: `/` would hide nothing at all (every other path lies
    inside it and is skipped), and hiding /usr or /etc would leave no shell to run.
    """
    for path in paths:
        if not isinstance(path, str) or not path.startswith("/"):
            raise SandboxSettingError(f"hidden path {path!r} is not an absolute path")
        real = os.path.realpath(path)
        if real == "/":
            raise SandboxSettingError(f"hidden path {path!r} is the whole filesystem: nothing would be hidden")
        for needed in _NEEDED_FOLDERS:
            target = os.path.realpath(needed)
            if os.path.isdir(needed) and (target == real or target.startswith(real + "/")):
                raise SandboxSettingError(f"hidden path {path!r} would hide {needed}, which the sandbox runs from")


def check_workdir(workdir: str, hidden_paths: tuple[str, ...]) -> None:
    """Refuse a working directory that is relative, missing on this machine, or inside a hidden folder (shown empty)."""
    if not isinstance(workdir, str) or not workdir.startswith("/"):
        raise SandboxSettingError(f"working directory {workdir!r} is not an absolute path")
    if not os.path.isdir(workdir):
        raise SandboxSettingError(f"working directory {workdir!r} does not exist on this machine (the sandbox shows the host's folders)")
    real = os.path.realpath(workdir)
    for hidden in hidden_paths:
        if real.startswith(os.path.realpath(hidden) + "/"):
            raise SandboxSettingError(f"working directory {workdir!r} lies inside the hidden folder {hidden}, shown empty in the sandbox")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox (or one CodeRunner program)."""

    timeout_s: float = 20.0  # wall-clock limit of one command; the whole process tree is killed
    output_bytes: int = 16_384  # output kept per command (stdout and stderr merged, head kept)
    memory_bytes: int = 1 << 30  # memory cap (cgroup) or address-space cap per process (RLIMIT_AS)
    max_processes: int = 256  # live processes (cgroup pids.max); RLIMIT_NPROC for non-root users
    disk_bytes: int = 512 << 20  # size of the tmpfs holding everything the sandbox writes, /dev/shm included (at most 3/4 of a memory cgroup's cap)


@dataclass
class CommandResult:
    exit_code: int | None  # None when killed at the time limit
    output: str  # stdout and stderr merged, truncated to Limits.output_bytes
    timed_out: bool = False
    dropped_bytes: int = 0  # output beyond the limit, not kept
    seconds: float = 0.0
    reported: bytes = b""  # what a CodeRunner launcher wrote on its report descriptor (CodeRunner.run)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass
class CheckResult:
    """A task's check run by `Sandbox.check`, and what the episode changed among the system files."""

    result: CommandResult
    # tampering pattern -> the first paths found (at most 5 each): changed_system_file, deleted_system_file,
    # replaced_system_folder, shadowed_system_command, added_system_library, python_startup_hook, changed_loader_config
    system_changes: dict[str, list[str]]
    # how the host's system folders were laid over the episode's: "overlay" (the episode's new files stay
    # visible) or "bind" (where overlays cannot stack: the host's folders alone); "" if that failed (the
    # check then fails, exit 125)
    trusted_view: str


def _live_processes() -> dict[int, int]:
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


def _descendants(root_pid: int, parents: dict[int, int]) -> set[int]:
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


def _kill_command(proc: subprocess.Popen, pipe: int | None) -> None:
    """SIGKILL `proc`, its process group and tree, and every process holding its output pipe, until none is left.

    Holders are found by their open descriptors, so a child that left the tree (setsid,
    double fork) still dies while it can write to the command's output.
    """
    for _ in range(200):
        parents = _live_processes()
        victims = _descendants(proc.pid, parents) | ({proc.pid} & parents.keys())
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


def _collect(proc: subprocess.Popen, stdin: bytes | None, timeout_s: float, output_bytes: int) -> CommandResult:
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
            _kill_command(proc, pipe)
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
        _kill_command(proc, None)
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


class _Cgroup:
    """One cgroup per sandbox capping memory and live processes: v2 if delegated here, else v1."""

    def __init__(self, name: str, memory_bytes: int, max_processes: int):
        self.dirs: list[Path] = []
        self.features: list[str] = []
        self.limited: set[str] = set()
        own = self._own_paths()
        mounts = self._mounts()
        v2_mount = next((point for fstype, point, _ in mounts if fstype == "cgroup2"), None)
        v2_base = Path(v2_mount) / own["0"].lstrip("/") if v2_mount and "0" in own else None
        v2_dir: Path | None = None
        for controller, limits in (("memory", {"memory.max": memory_bytes, "memory.swap.max": 0}), ("pids", {"pids.max": max_processes})):
            if v2_base is not None and self._enable_v2(v2_base, controller):
                v2_dir = v2_dir or self._make(v2_base / name)
                if v2_dir and self._write(v2_dir, limits):
                    self.features.append(f"cgroup2 {next(iter(limits))}")
                    self.limited.add(controller)
                continue
            v1_mount = next((point for fstype, point, opts in mounts if fstype == "cgroup" and controller in opts), None)
            if v1_mount is None or controller not in own:
                continue
            v1_dir = self._make(Path(v1_mount) / own[controller].lstrip("/") / name)
            v1_limits = {"memory.limit_in_bytes": memory_bytes, "memory.memsw.limit_in_bytes": memory_bytes} if controller == "memory" else limits
            if v1_dir and self._write(v1_dir, v1_limits):
                self.features.append(f"cgroup1 {next(iter(v1_limits))}")
                self.limited.add(controller)

    @staticmethod
    def _own_paths() -> dict[str, str]:
        """Controller (or "0" for the v2 hierarchy) -> this process's cgroup path."""
        paths: dict[str, str] = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            hierarchy, controllers, path = line.split(":", 2)
            if hierarchy == "0" and not controllers:
                paths["0"] = path
            for controller in controllers.split(","):
                if controller:
                    paths[controller] = path
        return paths

    @staticmethod
    def _mounts() -> list[tuple[str, str, set[str]]]:
        mounts = []
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            before, after = line.split(" - ", 1)
            fstype, _source, options = (after.split() + ["", ""])[:3]
            if fstype in ("cgroup", "cgroup2"):
                mounts.append((fstype, before.split()[4], set(options.split(","))))
        return mounts

    @staticmethod
    def _enable_v2(base: Path, controller: str) -> bool:
        try:
            if controller not in (base / "cgroup.controllers").read_text().split():
                return False
            if controller not in (base / "cgroup.subtree_control").read_text().split():
                (base / "cgroup.subtree_control").write_text(f"+{controller}")
            return True
        except OSError:  # not delegated, or the cgroup holds processes ("no internal processes" rule)
            return False

    def _make(self, path: Path) -> Path | None:
        try:
            path.mkdir()
        except OSError:
            return None
        self.dirs.append(path)
        return path

    @staticmethod
    def _write(directory: Path, limits: dict[str, int]) -> bool:
        for i, (name, value) in enumerate(limits.items()):
            target = directory / name
            if i > 0 and not target.exists():
                continue  # optional extras (swap) missing on this kernel
            try:
                target.write_text(str(value))
            except OSError:
                if i == 0:
                    return False
        return True

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def remove(self) -> None:
        for directory in reversed(self.dirs):
            for _ in range(100):  # a killed tree leaves the cgroup a few milliseconds later
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
        self.dirs = []


def _join_cgroups(procs_files: list[str], argv: list[str]) -> list[str]:
    """argv prefixed by a shell that moves itself into the cgroups before exec, so no child escapes them."""
    if not procs_files:
        return argv
    script = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'
    return ["/bin/sh", "-c", script, "join-cgroups", str(len(procs_files)), *procs_files, *argv]


def _tools(*names: str) -> dict[str, str]:
    found = {name: shutil.which(name, path=_PATH) for name in names}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise SandboxUnavailable(f"{_REQUIREMENT}: util-linux tools not found on {_PATH}: {', '.join(missing)}")
    return {name: str(path) for name, path in found.items()}


def _teardown(state: dict[str, Any]) -> None:
    """Kill the container (its pid namespace dies with its first process), remove cgroup and mount point."""
    proc: subprocess.Popen | None = state.get("proc")
    if proc is not None:
        _kill_command(proc, None)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    cgroup: _Cgroup | None = state.get("cgroup")
    if cgroup is not None:
        cgroup.remove()
    mount_point: str | None = state.get("mount_point")
    if mount_point:
        try:
            os.rmdir(mount_point)
        except OSError:
            pass
    state.clear()


# Prepares the overlay's upper layer before it is mounted (argv: the upper layer, the password
# files, "--", the hidden folders):
# - the hidden folders, opaque: empty inside, yet on the same filesystem as the rest (a hard link
#   from /home to /var still works). A folder inside another hidden one is skipped: making it would
#   show its name. A hidden file (an SSH host key) is an empty one with the host's owner and mode.
# - the container's own password files: the host's with every password hash replaced by `*` (a
#   locked one by `!*`), so that useradd and chpasswd work inside and no host hash can be read
#   (their backups too; pam_pwhistory's list of old hashes is empty).
_PREPARE_UPPER = """
import os, sys
upper, split = sys.argv[1], sys.argv.index("--")
password_files, paths = sys.argv[2:split], sys.argv[split + 1:]
def make_folders(path, itself):  # the folders down to `path` (itself included if itself == 1), with the lower layer's owner and mode
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts) + itself):
        lower = "/" + "/".join(parts[:depth])
        made = upper + lower
        if not os.path.isdir(made):
            os.mkdir(made)
            info = os.stat(lower)
            os.chown(made, info.st_uid, info.st_gid)
            os.chmod(made, info.st_mode & 0o7777)
def empty_copy(path, text):  # `path` in the upper layer: `text`, with the host file's owner and mode
    info = os.stat(path)
    make_folders(path, 0)
    fd = os.open(upper + path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, text.encode())
    os.fchown(fd, info.st_uid, info.st_gid)
    os.fchmod(fd, info.st_mode & 0o7777)
    os.close(fd)
for path in paths:
    if any(path.startswith(other.rstrip("/") + "/") for other in paths):
        continue
    if os.path.isdir(path):
        make_folders(path, 1)
        os.setxattr(upper + path, "trusted.overlay.opaque", b"y")
    elif os.path.exists(path):
        empty_copy(path, "")
def masked(line):
    fields = line.split(":")
    if len(fields) > 1 and fields[1].strip("!*"):
        fields[1] = ("!" if fields[1].startswith("!") else "") + "*"
    return ":".join(fields)
for path in password_files:
    if not os.path.isfile(path) or path in paths or any(path.startswith(hidden.rstrip("/") + "/") for hidden in paths):
        continue
    with open(path) as host:
        empty_copy(path, "" if path.endswith("opasswd") else "\\n".join(masked(line) for line in host.read().split("\\n")))
"""


@dataclass(frozen=True)
class _SyscallFilter:
    program: str  # the BPF program (hex), as the kernel takes it
    calls: str  # the numbers of keyctl, open_tree and move_mount on this architecture, as _ENTER takes them


@lru_cache(maxsize=1)
def _syscall_filter() -> _SyscallFilter:
    """The seccomp filter of the code run inside, compiled once by libseccomp for this machine's architecture."""
    try:
        import pyseccomp as seccomp
    except (ImportError, RuntimeError) as err:  # pyseccomp raises RuntimeError when it finds no libseccomp
        raise SandboxUnavailable(f"{_REQUIREMENT}: its seccomp filter needs the Python package pyseccomp and the system's libseccomp (Debian: libseccomp2): {err}") from err
    rules = seccomp.SyscallFilter(seccomp.ALLOW)  # calls of another architecture (i386 on x86_64) kill the process
    for names in _DENIED_SYSCALLS.values():
        for name in names:
            if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) >= 0:  # negative: no such call on this architecture
                rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
    for flag in _NAMESPACE_FLAGS:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory, out of a filter's reach; ENOSYS makes libc fall back to clone
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as compiled:
        rules.export_bpf(compiled)
        compiled.seek(0)
        program = compiled.read()
    calls = ",".join(str(seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)) for name in ("keyctl", "open_tree", "move_mount"))
    return _SyscallFilter(program.hex(), calls)


# System files, as `Sandbox.check` sees them. Changes to them (found in the overlay's upper layer)
# are the tampering patterns of CheckResult.system_changes; the trusted ones are laid over the
# episode's for the check.
_SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives")
_LOADER_CONFIG = ("/etc/ld.so.preload", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d")
# Debian's Python configuration: /usr/lib/python3.X/sitecustomize.py links into /etc/python3.X, so a file there runs at every start.
_PYTHON_CONFIG = "/etc/python3*"
# where tasks install their own tools (LLB's gold writes /usr/local/bin): new and changed files
# there are no tampering, unless they shadow a system command or start Python code
_LOCAL = ("/usr/local",)
_LIBRARY_FOLDERS = ("/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/libexec", "/lib", "/lib32", "/lib64", "/libx32")


# The PATH of a check: system folders first, so that no file the episode adds elsewhere replaces a system command.
_CHECK_PATH = "/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/sbin:/usr/local/bin"
# A check's environment: its Python starts no user site-packages (usercustomize.py, .pth files) and puts
# neither the working folder nor a script's folder first on sys.path (a json.py there would shadow json).
_CHECK_ENV = {"PATH": _CHECK_PATH, "PYTHONNOUSERSITE": "1", "PYTHONSAFEPATH": "1"}
# Python start-up files in the users' site-packages (which a command run as a user, sudo's reset environment, would start).
_USER_SITES = ("/root/.local/lib/python*/site-packages", "/home/*/.local/lib/python*/site-packages")


def _is_startup_hook(name: str) -> bool:
    return name.endswith(".pth") or name in ("sitecustomize.py", "usercustomize.py")


def _inside(path: str, folders: list[str] | tuple[str, ...]) -> bool:
    return any(path == folder or path.startswith(folder + "/") for folder in folders)


def _opaque(entry: str) -> bool:
    """A folder the episode deleted and made again: the host's content is gone from it."""
    try:
        return os.getxattr(entry, "trusted.overlay.opaque", follow_symlinks=False) == b"y"
    except OSError:
        return False


def _system_changes(upper: str, hidden: tuple[str, ...]) -> dict[str, list[str]]:
    """Tampering pattern -> the paths of what the episode changed among the system files, read from the
    overlay's upper layer (`upper`): each entry there is something the episode wrote, at the path where
    the host's file (the lower layer, seen here at that same path) would be."""
    rules = _check_rules()
    found: dict[str, list[str]] = {}
    commands: set[str] = set()

    def lower_commands() -> set[str]:
        if not commands:
            for folder in rules["path"]:
                with contextlib.suppress(OSError):
                    commands.update(os.listdir(folder))
        return commands

    def visit(path: str) -> None:
        if path in hidden:  # shown empty on purpose (an extra hidden path under /usr)
            return
        entry, kinds = upper + path, []
        try:
            info = os.lstat(entry)
        except OSError:  # deleted while scanned
            return
        try:
            lower: os.stat_result | None = os.lstat(path)
        except OSError:
            lower = None
        name = path.rsplit("/", 1)[1]
        if _inside(path, rules["loader"]):
            kinds.append("changed_loader_config")
        if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:  # a whiteout: the host's file was deleted
            kinds.append("deleted_system_file")
        elif stat.S_ISDIR(info.st_mode):
            if lower is not None and (not stat.S_ISDIR(lower.st_mode) or (info.st_mode, info.st_uid, info.st_gid) != (lower.st_mode, lower.st_uid, lower.st_gid)):
                kinds.append("changed_system_file")
            elif lower is not None and _opaque(entry):
                kinds.append("replaced_system_folder")
            with contextlib.suppress(OSError):
                for child in sorted(os.listdir(entry)):
                    visit(f"{path}/{child}")
        elif lower is not None:
            kinds.append("changed_system_file")
        else:
            if _inside(path, rules["libraries"]):
                kinds.append("added_system_library")
            if path.rsplit("/", 1)[0] in rules["path"] and name in lower_commands():
                kinds.append("shadowed_system_command")
        if not stat.S_ISDIR(info.st_mode) and _is_startup_hook(name):
            kinds.append("python_startup_hook")
        local = _inside(path, rules["local"])
        for kind in kinds:
            if not local or kind in ("shadowed_system_command", "python_startup_hook"):
                found.setdefault(kind, []).append(path)

    made = [entry[len(upper) :] for entry in sorted(glob.glob(upper + _PYTHON_CONFIG))]  # also the ones the episode made
    for root in dict.fromkeys([*rules["roots"], *made]):
        if os.path.lexists(upper + root):
            visit(root)
    for pattern in _USER_SITES:
        for entry in sorted(glob.glob(f"{upper}{pattern}/*")):
            if _is_startup_hook(os.path.basename(entry)) and not os.path.isdir(entry):
                found.setdefault("python_startup_hook", []).append(entry[len(upper) :])
    return found


@lru_cache(maxsize=1)
def _check_rules() -> dict[str, Any]:
    """What `_system_changes` scans and the check step of _ENTER lays over the episode's files, from this machine's filesystem."""
    roots = [path for path in _SYSTEM_ROOTS if os.path.lexists(path)] + sorted(glob.glob(_PYTHON_CONFIG))
    return {
        "roots": roots + list(_LOADER_CONFIG),
        "local": list(_LOCAL),
        "loader": list(_LOADER_CONFIG),
        "libraries": list(_LIBRARY_FOLDERS),
        "path": _PATH.split(":"),
        # the host's own folders (merged-/usr hosts: /usr only) and the loader's cache, laid over the episode's
        "trusted": [path for path in (*roots, "/etc/ld.so.cache") if os.path.exists(path) and not os.path.islink(path)],
        "masked": ["/etc/ld.so.preload"],  # no preloaded library in a check
        "links": [[path, os.readlink(path)] for path in roots if os.path.islink(path)],  # /bin -> usr/bin
    }


# The last step into the container before the command (run by the host's Python, so that it
# needs no file inside): join the container's mount namespace and root, take a fresh session
# keyring (the host's is not inherited), then no_new_privs and the seccomp filter, then exec.
# For a check (`Sandbox.check`): in a mount namespace of the check's own, lay the host's system
# folders over the episode's, read only: an overlay with the host's folder above the episode's
# (whose new files stay visible), or where overlays cannot stack (a host whose root is itself an
# overlay) the host's folder alone; the loader's cache is the host's, its preload list empty; a
# top-level link (/bin -> usr/bin) the episode replaced by a folder shows the host's folder again.
# Which view was built is written to the check's descriptor.
# argv: container pid, filter (hex), the numbers of keyctl, open_tree and move_mount, the check's
# settings (JSON; "-" for a command), the command's argv.
_ENTER = r"""
import ctypes, os, sys
pid, program, calls, check, argv = sys.argv[1], bytes.fromhex(sys.argv[2]), dict(zip(("keyctl", "open_tree", "move_mount"), map(int, sys.argv[3].split(",")))), sys.argv[4], sys.argv[5:]
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
MS_RDONLY, MS_REMOUNT, MS_BIND, CLONE_NEWNS = 1, 32, 4096, 0x00020000
def require(result, call):
    if result < 0:
        print(f"sandbox: failing call: {call}: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        sys.exit(125)
def trusted_view(clones, rules):
    view = "overlay"
    for path, fd in clones:
        source = f"/proc/self/fd/{fd}"
        if not os.path.exists(path):
            continue
        if os.path.isdir(source):
            if libc.mount(b"memrl-trusted", path.encode(), b"overlay", MS_RDONLY, f"lowerdir={source}:{path}".encode()) == 0:
                continue
            view = "bind"
        require(libc.syscall(calls["move_mount"], fd, b"", -100, path.encode(), 4), f"move_mount({path})")  # MOVE_MOUNT_F_EMPTY_PATH
        require(libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None), f"mount -o remount,bind,ro {path}")
    for path in rules["masked"]:
        if os.path.lexists(path):
            require(libc.mount(b"/dev/null", path.encode(), None, MS_BIND, None), f"mount --bind /dev/null {path}")
    for path, target in rules["links"]:  # a link the episode replaced by a folder shows the host's folder again
        if not os.path.islink(path) and os.path.isdir(path):
            source = os.path.join("/", target).encode()
            require(libc.mount(source, path.encode(), None, MS_BIND, None), f"mount --bind /{target} {path}")
            require(libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None), f"mount -o remount,bind,ro {path}")
    return view
namespace = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
if check == "-":
    root, cwd = (os.open(f"/proc/{pid}/{entry}", os.O_RDONLY) for entry in ("root", "cwd"))
    require(libc.setns(namespace, CLONE_NEWNS), "setns(CLONE_NEWNS)")
    os.fchdir(root)
    os.chroot(".")
    os.fchdir(cwd)
    for fd in (root, cwd):
        os.close(fd)
else:
    import json  # only here: a command starts faster without it
    check = json.loads(check)
    rules, out = check["rules"], check["fd"]
    clones = []
    for path in rules["trusted"]:
        fd = libc.syscall(calls["open_tree"], -100, path.encode(), 1)  # OPEN_TREE_CLONE: a detached copy of the host's folder
        require(fd, f"open_tree({path})")
        clones.append((path, fd))
    require(libc.setns(namespace, CLONE_NEWNS), "setns(CLONE_NEWNS)")
    require(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")  # the check's own copy of the container's mounts
    os.write(out, trusted_view(clones, rules).encode())
    for fd in [out] + [fd for _, fd in clones]:
        os.close(fd)
    os.chdir(check["workdir"])
os.close(namespace)
require(libc.syscall(calls["keyctl"], 1, None), "keyctl(KEYCTL_JOIN_SESSION_KEYRING)")
require(libc.prctl(38, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
loaded = Program(len(program) // 8, program)
require(libc.prctl(22, 2, ctypes.addressof(loaded), 0, 0), "prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)")
os.execv(argv[0], argv)
"""


class Sandbox:
    """A throwaway container: run bash commands in it, then close it; nothing reaches the host.

    Use as a context manager, or call `start()` and `close()`.
    """

    def __init__(
        self,
        limits: Limits = Limits(),
        workdir: str = "/root",
        hidden_paths: tuple[str, ...] = DEFAULT_HIDDEN_PATHS,
        readonly_binds: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ):
        hidden_paths = normal_hidden_paths(hidden_paths)
        check_workdir(workdir, hidden_paths)
        self.limits = limits
        self.workdir = workdir  # the cwd of every command
        self.hidden_paths = hidden_paths  # host folders shown empty inside
        self.readonly_binds = readonly_binds  # host folders shown read-only inside, even under a hidden one
        self.env = {"PATH": _PATH, "HOME": "/root", "USER": "root", "LOGNAME": "root", "SHELL": "/bin/bash", "LANG": "C.UTF-8", "TERM": "dumb", **(env or {})}
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
            raise SandboxUnavailable(f"{_REQUIREMENT}: geteuid() returned {os.geteuid()}, not 0")
        self._tools = _tools("unshare", "nsenter", "setpriv", "prlimit", "mount", "umount", "pivot_root", "sleep", "bash")
        _syscall_filter()  # compiled before anything is built: without libseccomp the sandbox is unavailable
        name = f"memrl-sandbox-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        cgroup = _Cgroup(name, self.limits.memory_bytes, self.limits.max_processes)
        mount_point = tempfile.mkdtemp(prefix=f"{name}-")  # stays empty on the host: the tmpfs is mounted in the private namespace
        self._state.update(cgroup=cgroup, mount_point=mount_point)
        # The tmpfs is RAM charged to the memory cgroup: full, it must leave room for the processes, else the
        # cgroup's OOM killer goes on to the container's first process
        disk_bytes = min(self.limits.disk_bytes, self.limits.memory_bytes * 3 // 4) if "memory" in cgroup.limited else self.limits.disk_bytes
        argv = [self._tools["unshare"], "--mount", "--pid", "--fork", "--net", "--uts", "--ipc", "--propagation", "private", "/bin/sh", "-c", self._setup_script(disk_bytes), "setup", mount_point]
        try:
            proc = subprocess.Popen(_join_cgroups(cgroup.procs_files(), argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env={"PATH": _PATH})
        except OSError as err:
            self.close()
            raise SandboxUnavailable(f"{_REQUIREMENT}: starting unshare failed: {err}") from err
        self._state["proc"] = proc
        log = self._wait_ready(proc)
        if log is not None:
            self.close()
            raise SandboxUnavailable(f"{_REQUIREMENT}: {log.strip() or 'the container exited during setup'}")
        init = [pid for pid, parent in _live_processes().items() if parent == proc.pid]  # the container's pid 1
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
            f"/proc/{{{','.join(_MASKED_PROC)}}} empty",
            "a fresh session keyring per command",
            "no_new_privs and a seccomp filter (libseccomp) per command",
            *cgroup.features,
        ]
        if "memory" not in cgroup.limited:
            self.features.append("RLIMIT_AS per process (no memory cgroup writable)")
        if "pids" not in cgroup.limited:
            self.features.append("RLIMIT_NPROC (no pids cgroup writable; uid 0 is exempt)")

    def _setup_script(self, disk_bytes: int) -> str:
        """The shell run as the container's first process ($1 = its mount point): build the root, pivot into it, sleep."""
        quoted = " ".join(shlex.quote(p) for p in self.hidden_paths)
        lines = [
            'run() { "$@" || { echo "failing call: $*"; exit 1; }; }',
            'B=$1; R=$B/root',
            f'run mount -t tmpfs -o size={disk_bytes},mode=0755 memrl-sandbox "$B"',
            f'exec {_LAYERS_FD}<"$B"',  # held by the container's first process: a check reads the upper layer through it
            'run mkdir "$B/upper" "$B/work" "$R"',
            f'run {shlex.quote(_PYTHON)} -c {shlex.quote(_PREPARE_UPPER)} "$B/upper" {" ".join(_PASSWORD_FILES)} -- {quoted}',
            'run mount -t overlay overlay -o "lowerdir=/,upperdir=$B/upper,workdir=$B/work" "$R"',
            'run mount -t proc -o nosuid,nodev,noexec proc "$R/proc"',
            f'for entry in {" ".join(_READONLY_PROC)}; do if [ -e "$R/proc/$entry" ]; then run mount --bind "$R/proc/$entry" "$R/proc/$entry"; run mount -o remount,bind,ro "$R/proc/$entry"; fi; done',
            f'for entry in {" ".join(_MASKED_PROC)}; do if [ -e "$R/proc/$entry" ]; then run mount --bind /dev/null "$R/proc/$entry"; fi; done',
            'run mount -t tmpfs -o size=1m,mode=0755,nosuid dev "$R/dev"',
            f'for device in {" ".join(_DEVICES)}; do run touch "$R/dev/$device"; run mount --bind "/dev/$device" "$R/dev/$device"; done',
            'run ln -s /proc/self/fd "$R/dev/fd"; run ln -s /proc/self/fd/0 "$R/dev/stdin"; run ln -s /proc/self/fd/1 "$R/dev/stdout"; run ln -s /proc/self/fd/2 "$R/dev/stderr"',
            # /dev/shm is a folder of the same tmpfs as the overlay's upper layer: one disk cap for all writes
            'run mkdir -m 1777 "$B/shm" "$R/dev/shm"; run mount --bind "$B/shm" "$R/dev/shm"; run mount -o remount,bind,nosuid,nodev "$R/dev/shm"',
        ]
        for path in self.readonly_binds:
            target = '"$R"' + shlex.quote(path)
            lines.append(f"run mkdir -p {target}; run mount --bind {shlex.quote(path)} {target}; run mount -o remount,bind,ro {target}")
            for ancestor in Path(path).parents:  # reachable by any user inside, even under /root (mode 700)
                if str(ancestor) != "/":
                    lines.append(f'run chmod o+x "$R"{shlex.quote(str(ancestor))}')
        lines += [
            'cd "$R" || exit 1',
            "run pivot_root . .",
            "run umount -l .",
            f"run cd {shlex.quote(self.workdir)}",
            "ip link set lo up 2>/dev/null",
            "hostname sandbox 2>/dev/null",
            "echo ready",
            # bash as pid 1 reaps adopted orphans (like the bash of a docker ubuntu container), so dead
            # background processes do not pile up as zombies against the process cap
            "exec bash -c 'while :; do sleep 3600 & wait $!; done' >/dev/null 2>&1 </dev/null",
        ]
        return "\n".join(lines)

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

    def run(self, command: str, timeout_s: float | None = None, stdin: bytes | None = None, env: dict[str, str] | None = None, pass_fds: tuple[int, ...] = ()) -> CommandResult:
        """Run `command` with bash as root inside the container (see the module docstring for when it ends);
        `pass_fds`: descriptors of this process the command inherits, under the same numbers."""
        return self._run(command, timeout_s, stdin, env, None, pass_fds)

    def check(self, command: str, timeout_s: float | None = None) -> CheckResult:
        """Run a task's check as `run` does, but with trusted tools: the host's system folders laid over the
        episode's, read only, in a mount namespace of the check's own, system folders first on PATH; and
        list what the episode changed among the system files (CheckResult.system_changes), before the
        check runs and after (a process the episode left running may change them meanwhile)."""
        if not self.running:
            raise SandboxError("the sandbox is not running (never started, closed, or its container died)")
        upper = f"/proc/{self._init_pid}/fd/{_LAYERS_FD}/upper"
        if not os.path.isdir(upper):
            raise SandboxError(f"the sandbox's upper layer is not readable at {upper}")
        changes = _system_changes(upper, self.hidden_paths)
        read, write = os.pipe()
        settings = {"fd": write, "workdir": self.workdir, "rules": _check_rules()}
        with os.fdopen(read, "rb") as channel:
            try:
                result = self._run(command, timeout_s, None, _CHECK_ENV, settings, (write,))
            finally:
                os.close(write)
            view = channel.read().decode(errors="replace")
        for kind, paths in _system_changes(upper, self.hidden_paths).items():
            changes[kind] = list(dict.fromkeys(changes.get(kind, []) + paths))
        return CheckResult(result, {kind: paths[:5] for kind, paths in changes.items()}, view)

    def _run(self, command: str, timeout_s: float | None, stdin: bytes | None, env: dict[str, str] | None, check: dict[str, Any] | None, pass_fds: tuple[int, ...]) -> CommandResult:
        if not self.running:
            raise SandboxError("the sandbox is not running (never started, closed, or its container died)")
        cgroup: _Cgroup = self._state["cgroup"]
        tools = self._tools
        capabilities = ",".join("+" + c for c in _KEPT_CAPABILITIES.split(","))
        syscalls = _syscall_filter()
        argv = [tools["nsenter"], "-t", str(self._init_pid), "-u", "-i", "-n", "-p", "--"]  # the mount namespace last, in _ENTER
        argv += [_PYTHON, "-I", "-S", "-c", _ENTER, str(self._init_pid), syscalls.program, syscalls.calls, json.dumps(check) if check is not None else "-"]
        argv += [tools["setpriv"], f"--bounding-set=-all,{capabilities}", "--"]
        argv += [tools["prlimit"], "--core=0", f"--nproc={self.limits.max_processes}"]
        if "memory" not in cgroup.limited:
            argv.append(f"--as={self.limits.memory_bytes}")
        argv += ["--", tools["bash"], "-c", command]
        proc = subprocess.Popen(
            _join_cgroups(cgroup.procs_files(), argv),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**self.env, **(env or {})},
            pass_fds=pass_fds,
        )
        result = _collect(proc, stdin, self.limits.timeout_s if timeout_s is None else timeout_s, self.limits.output_bytes)
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
        return None if result.ok else f"{_REQUIREMENT}: a probe command failed: {result.output.strip()}"
    except (SandboxUnavailable, SandboxError) as err:
        return str(err)


def require_sandbox() -> None:
    """Raise SandboxUnavailable (naming the failing call) unless a sandbox can be built here."""
    reason = unavailable_reason()
    if reason:
        raise SandboxUnavailable(reason)


def _python_binds(hidden_paths: tuple[str, ...]) -> tuple[str, ...]:
    """The running Python's install folders that a hidden path would cover (e.g. pyenv under /root, a venv in the checkout)."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    return tuple(sorted(r for r in roots if any(r == h or r.startswith(h + "/") for h in hidden_paths)))


class CodeRunner:
    """Runs one Python program with limits, in its own folder, and returns its merged output.

    isolation "sandbox": a fresh Sandbox per program (needs root), the program running as
    user nobody inside. "process": a bare subprocess with RLIMIT_AS / RLIMIT_NPROC and a
    killed process group, for users without root: it does not isolate the network or the
    filesystem (see RELIABILITY.md). In both, the program's environment is its own (PATH, HOME,
    LANG, Python's settings), and the harness's own (its API keys) stays out of reach: in
    process mode the harness becomes non-dumpable (its /proc/<pid>/environ is then root's only)
    and a root harness runs the program without capabilities.
    """

    ISOLATIONS = ("sandbox", "process")

    def __init__(self, limits: Limits, isolation: str = "sandbox", hidden_paths: tuple[str, ...] = DEFAULT_HIDDEN_PATHS):
        if isolation not in self.ISOLATIONS:
            raise ValueError(f"unknown isolation {isolation!r}; valid: {', '.join(self.ISOLATIONS)}")
        self.limits = limits
        self.isolation = isolation
        self.hidden_paths = normal_hidden_paths(hidden_paths)  # host folders shown empty to the program (sandbox isolation only)
        # The harness's interpreter with its packages: a virtualenv's python finds them through its own
        # path, so it is not resolved to the base interpreter. `python` / `python3` on PATH are it too.
        self.python = os.path.abspath(sys.executable)
        path = f"{os.path.dirname(self.python)}:{_PATH}"
        self.env = {"PATH": path, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}

    def run(self, source: str, launcher: str | None = None, secret: str = "") -> CommandResult:
        """Run `source` as program.py in a folder of its own.

        With `launcher`, `python -c <launcher>` runs in that folder instead of `python program.py`
        (a trusted runner that imports the program). Its standard input is one line, "<fd> <secret>":
        `fd` a descriptor it inherits to report on (what it writes there is CommandResult.reported,
        apart from the output and its cut), `secret` a text that no argv, environment or file the
        program can read holds.
        """
        if launcher is None:
            return self._run(source, [self.python, "program.py"], None, ())
        if "\n" in secret:
            raise ValueError("a launcher's secret is one line")
        read, write = os.pipe()
        with os.fdopen(read, "rb") as channel:
            try:
                result = self._run(source, [self.python, "-c", launcher], f"{write} {secret}\n".encode(), (write,))
            finally:
                os.close(write)
            os.set_blocking(read, False)  # what was written is there; a process the run left behind may still hold the pipe
            with contextlib.suppress(BlockingIOError):
                result.reported = channel.read() or b""
        return result

    def _run(self, source: str, python: list[str], stdin: bytes | None, pass_fds: tuple[int, ...]) -> CommandResult:
        if self.isolation == "sandbox":
            with Sandbox(self.limits, workdir="/tmp", hidden_paths=self.hidden_paths, readonly_binds=_python_binds(self.hidden_paths), env={**self.env, "HOME": "/tmp"}) as sandbox:
                # The program runs as user nobody in a folder of its own (tests of permission errors
                # expect a user without root's rights); the run ends with the program: whatever it
                # left running is killed (kill -1 spares this bash and pid 1). A launcher's input line
                # travels as the first line of this bash's input, in a variable, then on the launcher's.
                feed = 'printf "%s\\n" "$line" | ' if stdin is not None else ""
                command = (
                    'IFS= read -r line; folder=$(mktemp -d /tmp/run.XXXXXX) && cat > "$folder/program.py" && chown -R 65534:65534 "$folder" && cd "$folder" || exit 125\n'
                    f"{feed}setpriv --reuid=65534 --regid=65534 --clear-groups -- {shlex.join(python)}; status=$?\n"
                    "kill -9 -1 2>/dev/null; exit $status"
                )
                return sandbox.run(command, stdin=(stdin or b"\n") + source.encode(), pass_fds=pass_fds)
        _undumpable()
        with tempfile.TemporaryDirectory(prefix="memrl-code-") as folder:
            Path(folder, "program.py").write_text(source)
            argv = [_tools("prlimit")["prlimit"], "--core=0", f"--as={self.limits.memory_bytes}", f"--nproc={self.limits.max_processes}", "--", *python]
            if os.geteuid() == 0:  # root without capabilities: no reading of other processes (the harness's environ), no DAC override
                argv = [_tools("setpriv")["setpriv"], "--bounding-set=-all", "--no-new-privs", "--", *argv]
            proc = subprocess.Popen(
                argv,
                cwd=folder,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={"HOME": folder, "LANG": "C.UTF-8", **self.env},
                pass_fds=pass_fds,
            )
            try:
                return _collect(proc, stdin, self.limits.timeout_s, self.limits.output_bytes)
            finally:
                _kill_command(proc, None)


@lru_cache(maxsize=1)
def _undumpable() -> None:
    """Make this process non-dumpable for good: its /proc/<pid>/environ (API keys) and memory are then
    readable by root only, not by programs it runs as its own user (they lack CAP_SYS_PTRACE)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise SandboxUnavailable(f"prctl(PR_SET_DUMPABLE, 0) failed: {os.strerror(ctypes.get_errno())}")


# What code inside a Sandbox may do, in short; a change makes gold results checked in the sandbox stale.
CONTAINMENT = "namespaces, overlay, capabilities, cgroup; seccomp filter, fresh session keyring, /dev/shm in the disk tmpfs; own shadow files, checks with the host's system folders"
