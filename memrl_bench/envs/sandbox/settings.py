"""The sandbox's settings and limits, the errors it raises and what a command's run returns."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# How every SandboxUnavailable message starts: what the sandbox needs.
REQUIREMENT = "the sandbox needs root, mount/pid/net namespaces and overlayfs"
# The PATH of commands inside, and where the host's tools are looked for.
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The host's Python, which runs the steps that need no file inside the container (overlay.py, enter.py).
PYTHON = os.path.realpath(sys.executable)


def _harness_folders() -> tuple[str, ...]:
    """This source checkout (code, results/) and the shared data beside it, wherever they live."""
    checkout = Path(__file__).resolve().parents[3]  # memrl_bench/envs/sandbox/settings.py
    if not (checkout / "pyproject.toml").is_file():
        return ()  # installed from a wheel: its site-packages folder is part of Python itself
    return tuple(sorted({str(p.resolve()) for p in (checkout, checkout.parent / "shared") if p.is_dir()}))


# Host folders shown empty inside: homes, scratch space, and the harness with its data, so
# that generated code reads neither gold answers nor other runs.
DEFAULT_HIDDEN_PATHS = ("/root", "/home", "/tmp", "/var/tmp", "/work", "/mnt", "/media") + _harness_folders()
# Folders the sandbox runs from (its shell, tools and libraries, /etc, /proc, /dev): a hidden path may not be or hold one.
_NEEDED_FOLDERS = ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev")
# Nothing inside them may be hidden either (a hidden file is shown empty: /usr/bin/prlimit shown so ran as an empty
# script, and every command and check exited 0 with nothing done; 49b: `finish` alone solved 10 of 10 LLB-OS tasks), but
# inside /etc: its secrets (/etc/shadow, SSH host keys) are what one hides.
_HIDEABLE_INSIDE = ("/etc",)


class SandboxUnavailable(RuntimeError):
    """This machine cannot build the sandbox; the message names the failing call."""


class SandboxError(RuntimeError):
    """A running sandbox broke (its container died)."""


class SandboxSettingError(ValueError):
    """A setting would switch the sandbox off or keep it from starting; the message names the value
    (an env turns it into a ConfigError naming its key)."""


@lru_cache(maxsize=1)
def _library_folders() -> tuple[str, ...]:
    """The system folders of the shared libraries this process has loaded (libc and the loader among them), which the
    sandbox's tools load too: hiding /usr/lib/x86_64-linux-gnu stopped every sandbox from starting (47b)."""
    roots = [os.path.realpath(folder) for folder in _NEEDED_FOLDERS]
    folders = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/maps").read_text().splitlines():
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/") and ".so" in fields[5]:
                folder = os.path.dirname(os.path.realpath(fields[5]))
                if any(folder == root or folder.startswith(root + "/") for root in roots):
                    folders.add(folder)
    return tuple(sorted(folders))


def normal_hidden_paths(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The hidden paths in one form, the host's real path (checked first): `/opt/`, `/var/lib/x/.` and `//opt` would
    otherwise hide nothing, and `/var/run` (a link to /run) only the link, the folder it names staying readable."""
    check_hidden_paths(paths)
    return tuple(dict.fromkeys(os.path.realpath(path) for path in paths))


def check_hidden_paths(paths: tuple[str, ...]) -> None:
    """Refuse a hidden path that is relative, is `/`, is or holds a folder the sandbox runs from, or lies inside one (but
    /etc: _HIDEABLE_INSIDE).

    Hiding works by showing a folder empty: `/` would hide nothing at all (every other path lies
    inside it and is skipped), and hiding /usr or /etc would leave no shell to run.
    """
    # found once, not for each path: a sandbox may hide thousands of results folders (48b)
    needed = [(folder, os.path.realpath(folder)) for folder in (*_NEEDED_FOLDERS, *_library_folders()) if os.path.isdir(folder)]
    sealed = [(folder, target) for folder, target in needed if folder not in _HIDEABLE_INSIDE]
    for path in paths:
        if not isinstance(path, str) or not path.startswith("/"):
            raise SandboxSettingError(f"hidden path {path!r} is not an absolute path")
        real = os.path.realpath(path)
        if real == "/":
            raise SandboxSettingError(f"hidden path {path!r} is the whole filesystem: nothing would be hidden")
        for folder, target in needed:
            if target == real or target.startswith(real + "/"):
                raise SandboxSettingError(f"hidden path {path!r} would hide {folder}, which the sandbox runs from")
        for folder, target in sealed:
            if real.startswith(target + "/"):
                raise SandboxSettingError(
                    f"hidden path {path!r} lies inside {folder}, which the sandbox runs from (shown empty, a program there would "
                    "do nothing and exit 0)"
                )


_HIDDEN_FOR_THIS_PROCESS: dict[str, None] = {}  # hide_from_sandboxes': the folders this process writes, in order


def hide_from_sandboxes(*folders: str | os.PathLike) -> None:
    """Folders this process writes (its results, its caches), shown empty in every sandbox it starts from now on, as the
    default hidden ones are: a results_dir or a cache outside them was readable inside, other runs' logs and transcripts
    with it (43b). One that cannot be hidden (`/`, or a folder holding /usr/bin) is a SandboxSettingError naming it."""
    defaults = normal_hidden_paths(DEFAULT_HIDDEN_PATHS)
    reals = (os.path.realpath(os.path.abspath(folder)) for folder in folders)  # a relative results_dir: from the working directory
    added = tuple(real for real in reals if not any(real == hidden or real.startswith(hidden + "/") for hidden in defaults))
    check_hidden_paths(added)
    _HIDDEN_FOR_THIS_PROCESS.update(dict.fromkeys(added))


def hidden_for_this_process() -> tuple[str, ...]:
    """The folders hide_from_sandboxes was given in this process (each sandbox adds them to its hidden paths)."""
    return tuple(_HIDDEN_FOR_THIS_PROCESS)


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
    disk_bytes: int = (
        512 << 20
    )  # size of the tmpfs holding everything the sandbox writes, /dev/shm included (at most 3/4 of a memory cgroup's cap)


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


def find_tools(*names: str) -> dict[str, str]:
    """Name -> path of the host's tools on PATH; SandboxUnavailable naming the missing ones."""
    found = {name: shutil.which(name, path=PATH) for name in names}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise SandboxUnavailable(f"{REQUIREMENT}: util-linux tools not found on {PATH}: {', '.join(missing)}")
    return {name: str(path) for name, path in found.items()}
