"""The seccomp filters of the code run inside the container and of LLB-DB's SQL worker, compiled by libseccomp."""

from __future__ import annotations

import errno
import fcntl
import tempfile
from dataclasses import dataclass
from functools import lru_cache

from memrl_bench.envs.sandbox.settings import REQUIREMENT, SandboxUnavailable

# System calls that fail with EPERM for the code run inside (a seccomp filter compiled by
# libseccomp). Most of them also need a capability the bounding set drops; the filter is a
# second wall, and the only one for user namespaces, the kernel keyring and ptrace.
_DENIED_SYSCALLS = {
    "namespaces: a user namespace needs no capability and opens kernel code to its owner": ("unshare", "setns"),
    "mounts": (
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "move_mount",
        "open_tree",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
    ),
    "the kernel keyring: uid 0 inside is uid 0 of the host, whose keys it could read": ("keyctl", "add_key", "request_key"),
    "other processes' memory": ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"),
    "kernel modules and kexec": ("init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load"),
    "kernel interfaces with a record of privilege escalations": (
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
    ),
    "host-wide state": (
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "syslog",
        "quotactl",
        "quotactl_fd",
        "settimeofday",
        "clock_settime",
        "clock_adjtime",
        "iopl",
        "ioperm",
        "open_by_handle_at",
        "lookup_dcookie",
    ),
}
# clone() flags that make a namespace; clone() with any of them fails like unshare().
_NAMESPACE_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET


@dataclass(frozen=True)
class SyscallFilter:
    program: str  # the BPF program (hex), as the kernel takes it
    calls: str  # the numbers of keyctl, open_tree and move_mount on this architecture, as ENTER takes them


# What LLB-DB's SQL worker (memrl_bench/envs/sqlite_worker.py) never does once it is ready, beside the list above: its
# database is in memory and what it reads and writes was open before; a SQLite bug its SQL reached could otherwise read
# the host's world-readable files into a result, connect out, or start a program.
_SQL_WORKER_DENIED = {
    "files: none opened, none changed": (
        "open", "openat", "openat2", "creat", "truncate", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir",
        "mkdirat", "rmdir", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmodat", "chown", "fchownat", "lchown",
        "mknod", "mknodat",
    ),
    "processes and programs": ("execve", "execveat", "fork", "vfork", "clone", "clone3"),
    "network": ("socket", "socketpair", "connect", "bind", "listen", "accept", "accept4"),
    # it runs as nobody, as other runs' workers and sandboxed programs do: a taken-over worker could signal them, and reach
    # the host's System V IPC (44b, simulated: no SQL reaches a system call)
    "other processes and shared memory": (
        "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal", "shmget",
        "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl", "memfd_create",
    ),
}  # fmt: skip


def _libseccomp():
    try:
        import pyseccomp
    except (ImportError, RuntimeError) as err:  # pyseccomp raises RuntimeError when it finds no libseccomp
        raise SandboxUnavailable(
            f"{REQUIREMENT}: its seccomp filter needs the Python package pyseccomp and the system's libseccomp (Debian: libseccomp2): {err}"
        ) from err
    return pyseccomp


def _compiled(seccomp, denied: dict[str, tuple[str, ...]], rules=None) -> bytes:
    """The BPF program of a filter that lets every call through but `denied`'s (EPERM), `rules` its own added."""
    rules = rules or seccomp.SyscallFilter(seccomp.ALLOW)  # calls of another architecture (i386 on x86_64) kill the process
    for names in denied.values():
        for name in names:
            if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) >= 0:  # negative: no such call on this architecture
                rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
    with tempfile.TemporaryFile() as compiled:
        rules.export_bpf(compiled)
        compiled.seek(0)
        return compiled.read()


@lru_cache(maxsize=1)
def syscall_filter() -> SyscallFilter:
    """The seccomp filter of the code run inside, compiled once by libseccomp for this machine's architecture."""
    seccomp = _libseccomp()
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for flag in _NAMESPACE_FLAGS:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory, out of a filter's reach; ENOSYS makes libc fall back to clone
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    # A lease makes others' opens of the file wait or fail (O_NONBLOCK: `grep -r`'s) while its holder lives: held by what
    # an episode left, frozen through the check, it made the check's grep fail, read as "not found" (59b: 6 real tasks)
    rules.add_rule(seccomp.ERRNO(errno.EPERM), "fcntl", seccomp.Arg(1, seccomp.EQ, fcntl.F_SETLEASE))
    program = _compiled(seccomp, _DENIED_SYSCALLS, rules)
    calls = ",".join(str(seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)) for name in ("keyctl", "open_tree", "move_mount"))
    return SyscallFilter(program.hex(), calls)


@lru_cache(maxsize=1)
def sql_worker_filter() -> bytes | None:
    """The seccomp filter of LLB-DB's SQL worker (BPF), or None where libseccomp is missing (the worker then runs without)."""
    try:
        seccomp = _libseccomp()
    except SandboxUnavailable:
        return None
    return _compiled(seccomp, {**_DENIED_SYSCALLS, **_SQL_WORKER_DENIED})
