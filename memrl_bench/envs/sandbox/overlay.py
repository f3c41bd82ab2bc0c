"""Building the container's root: the overlay on the host's `/` in a size-capped tmpfs, the hidden paths
shown empty, the container's own password files, /proc, /dev, then pivot_root into it."""

from __future__ import annotations

import shlex
from pathlib import Path

from memrl_bench.envs.sandbox.settings import PYTHON

# /proc entries that would let root change the host kernel; bound read-only inside.
_READONLY_PROC = ("sys", "sysrq-trigger", "irq", "bus", "fs")
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
# /proc entries about the whole host (the kernel keyring's key names, timers, the scheduler);
# docker masks the same: they are shown as empty files.
MASKED_PROC = ("keys", "key-users", "timer_list", "sched_debug")
# The host's password files and their backups: the container gets copies whose password hashes are
# replaced (_PREPARE_UPPER); pam_pwhistory's old hashes (opasswd) an empty copy.
_PASSWORD_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd")
# The container's first process holds this descriptor on the tmpfs of the overlay's layers, so that a
# check can read the upper layer; commands cannot follow it (pid 1 keeps capabilities they lack).
LAYERS_FD = 3
IDLE_FD = 4  # the container's first process's end of the pipe from the harness it waits on (setup_script)
HIDDEN_FD = 5  # the hidden paths during setup: the file HIDDEN_LIST beside the tmpfs, read before the tmpfs covers it
HIDDEN_LIST = "hidden"  # in the mount point: the hidden paths, NUL-separated (as arguments, past 128 KiB, no sandbox started: 48b)


# Prepares the overlay's upper layer before it is mounted (argv: the upper layer, the descriptor of
# the hidden paths, the password files):
# - the hidden folders, opaque: empty inside, yet on the same filesystem as the rest (a hard link
#   from /home to /var still works). A folder inside another hidden one is skipped: making it would
#   show its name. A hidden file (an SSH host key) is an empty one with the host's owner and mode.
# - the container's own password files: the host's with every password hash replaced by `*` (a
#   locked one by `!*`), so that useradd and chpasswd work inside and no host hash can be read
#   (their backups too; pam_pwhistory's list of old hashes is empty).
_PREPARE_UPPER = """
import os, sys
upper, hidden_fd, password_files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
with open(hidden_fd, "rb") as listed:
    paths = [os.fsdecode(path) for path in listed.read().split(b"\\0") if path]
hidden = set(paths)
def inside_a_hidden_one(path):  # by its ancestors, not by every other path: thousands of results folders are hidden
    while path != "/":
        path = os.path.dirname(path)
        if path in hidden:
            return True
    return False
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
    if inside_a_hidden_one(path):
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
    if not os.path.isfile(path) or path in hidden or inside_a_hidden_one(path):
        continue
    with open(path) as host:
        empty_copy(path, "" if path.endswith("opasswd") else "\\n".join(masked(line) for line in host.read().split("\\n")))
"""


def setup_script(disk_bytes: int, readonly_binds: tuple[str, ...], workdir: str) -> str:
    """The shell run as the container's first process ($1 = its mount point, holding HIDDEN_LIST): build the root, pivot
    into it, sleep."""
    lines = [
        'run() { "$@" || { echo "failing call: $*"; exit 1; }; }',
        "B=$1; R=$B/root",
        f'exec {HIDDEN_FD}<"$B/{HIDDEN_LIST}" || exit 1',
        f'run mount -t tmpfs -o size={disk_bytes},mode=0755 memrl-sandbox "$B"',
        f'exec {LAYERS_FD}<"$B"',  # held by the container's first process: a check reads the upper layer through it
        'run mkdir "$B/upper" "$B/work" "$R"',
        # what the first process waits on: the harness's pipe (stdin), held apart from the commands run during setup
        f"exec {IDLE_FD}<&0 </dev/null",
        f'run {shlex.quote(PYTHON)} -c {shlex.quote(_PREPARE_UPPER)} "$B/upper" {HIDDEN_FD} {" ".join(_PASSWORD_FILES)}',
        f"exec {HIDDEN_FD}<&-",
        'run mount -t overlay overlay -o "lowerdir=/,upperdir=$B/upper,workdir=$B/work" "$R"',
        'run mount -t proc -o nosuid,nodev,noexec proc "$R/proc"',
        f'for entry in {" ".join(_READONLY_PROC)}; do if [ -e "$R/proc/$entry" ]; then run mount --bind "$R/proc/$entry" "$R/proc/$entry"; '
        'run mount -o remount,bind,ro "$R/proc/$entry"; fi; done',
        # the host's device nodes, bound read only: their data is the device's (writable still), their mode, owner and times
        # the host's (a `chmod 600 /proc/keys` inside made the host's /dev/null unusable to every other user: the thirty-sixth round)
        f'for entry in {" ".join(MASKED_PROC)}; do if [ -e "$R/proc/$entry" ]; then run mount --bind /dev/null "$R/proc/$entry"; '
        'run mount -o remount,bind,ro,nosuid "$R/proc/$entry"; fi; done',
        'run mount -t tmpfs -o size=1m,mode=0755,nosuid dev "$R/dev"',
        f'for device in {" ".join(_DEVICES)}; do run touch "$R/dev/$device"; run mount --bind "/dev/$device" "$R/dev/$device"; '
        'run mount -o remount,bind,ro,nosuid "$R/dev/$device"; done',
        'run ln -s /proc/self/fd "$R/dev/fd"; run ln -s /proc/self/fd/0 "$R/dev/stdin"; run ln -s /proc/self/fd/1 "$R/dev/stdout"; run ln '
        '-s /proc/self/fd/2 "$R/dev/stderr"',
        # /dev/shm is a folder of the same tmpfs as the overlay's upper layer: one disk cap for all writes
        'run mkdir -m 1777 "$B/shm" "$R/dev/shm"; run mount --bind "$B/shm" "$R/dev/shm"; run mount -o remount,bind,nosuid,nodev '
        '"$R/dev/shm"',
        # /dev itself read only (its devices and /dev/shm are mounts of their own): a /dev/fd replaced by a folder of the
        # episode's files was what every `<(...)` of a check read (the ninth independent round forged two tasks that way)
        'run mount -o remount,ro,nosuid "$R/dev"',
    ]
    for path in readonly_binds:
        target = '"$R"' + shlex.quote(path)
        lines.append(f"run mkdir -p {target}; run mount --bind {shlex.quote(path)} {target}; run mount -o remount,bind,ro {target}")
        for ancestor in Path(path).parents:  # reachable by any user inside, even under /root (mode 700)
            if str(ancestor) != "/":
                lines.append(f'run chmod o+x "$R"{shlex.quote(str(ancestor))}')
    lines += [
        'cd "$R" || exit 1',
        "run pivot_root . .",
        "run umount -l .",
        f"run cd {shlex.quote(workdir)}",
        "ip link set lo up 2>/dev/null",
        "hostname sandbox 2>/dev/null",
        "echo ready",
        # bash as pid 1 reaps adopted orphans (its SIGCHLD handler waits for any child, like the bash of a docker ubuntu
        # container), so dead background processes do not pile up against the process cap. It starts nothing: it keeps
        # every capability and no seccomp filter, and a `sleep` it started again after the episode killed the last one
        # loaded the episode's /etc/ld.so.preload with those rights (the thirty-fifth round: every check forged, the host's
        # root reached); it waits with builtins only, and ignores the signals it could be sent. It waits on the harness's
        # pipe, which nothing writes: at its end (the harness gone, even by SIGKILL) it exits, and the container dies with it.
        f"exec bash -c 'trap \"\" HUP INT QUIT USR1 USR2 PIPE ALRM TERM; while read -r _; do :; done' "
        f"<&{IDLE_FD} {IDLE_FD}<&- >/dev/null 2>&1",
    ]
    return "\n".join(lines)
