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

# Where each part lives: settings.py (limits, hidden paths, errors, results), overlay.py (the
# container's root), cgroup.py, seccomp.py, enter.py (the step into the container before each
# command), processes.py (collecting a command's output, killing its processes), check.py
# (`Sandbox.check`'s view of the system files), container.py (`Sandbox`), code_runner.py.

from memrl_bench.envs.sandbox.code_runner import CodeRunner
from memrl_bench.envs.sandbox.container import CONTAINMENT, Sandbox, require_sandbox, unavailable_reason
from memrl_bench.envs.sandbox.settings import (
    DEFAULT_HIDDEN_PATHS,
    CommandResult,
    Limits,
    SandboxSettingError,
    SandboxUnavailable,
    check_hidden_paths,
    check_workdir,
    hidden_for_this_process,
    hide_from_sandboxes,
)

# The names the envs, scripts and tests use.
__all__ = [
    "CONTAINMENT",
    "DEFAULT_HIDDEN_PATHS",
    "CodeRunner",
    "CommandResult",
    "Limits",
    "Sandbox",
    "SandboxSettingError",
    "SandboxUnavailable",
    "check_hidden_paths",
    "check_workdir",
    "hidden_for_this_process",
    "hide_from_sandboxes",
    "require_sandbox",
    "unavailable_reason",
]
