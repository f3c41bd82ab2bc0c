"""What `Sandbox.check` needs: the system files, what the episode changed among them (read from the
overlay's upper layer), and the rules by which the host's system folders are laid over the episode's."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import stat
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from memrl_bench.envs.sandbox.settings import PATH, CommandResult


@dataclass
class CheckResult:
    """A task's check run by `Sandbox.check`, and what the episode changed among the system files."""

    result: CommandResult
    # tampering pattern -> the first paths found (at most 5 each): changed_system_file, deleted_system_file,
    # replaced_system_folder, shadowed_system_command, added_system_library, python_startup_hook, changed_loader_config,
    # renamed_superuser, renamed_user
    system_changes: dict[str, list[str]]
    # how the host's system folders were laid over the episode's: "overlay" (the episode's new files stay
    # visible) or "bind" (where overlays cannot stack: the host's folders alone); "" if that failed (the
    # check then fails, exit 125)
    trusted_view: str
    # what the sandbox was refused while the check ran (Cgroup.refusals: "memory", a process killed for lack of it;
    # "processes", a fork refused at the process limit): its verdict is none. A file of the episode's holding one 420 MB
    # line got `! grep -q X file`'s grep killed (57b); 250 processes the episode left asleep kept `find` from starting
    # `stat`, and `find ... | awk` passed on no output (58b). Both checks passed.
    starved: tuple[str, ...] = ()


# System files, as `Sandbox.check` sees them. Changes to them (found in the overlay's upper layer)
# are the tampering patterns of CheckResult.system_changes; the trusted ones are laid over the
# episode's for the check.
_SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives")
# what decides which shared libraries a program loads: the loader's, and NSS's (nsswitch.conf names the libnss_* a user or
# group lookup loads: `stat %U`, `id`, `ls -l` in a check)
_LOADER_CONFIG = ("/etc/ld.so.preload", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/nsswitch.conf")
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
# TZ: the host's zone file (under the host's /usr, laid over the episode's): an /etc/localtime the episode replaced
# moved `date` by weeks in a check comparing with today (sixth independent round); no LLB-OS task sets the time zone.
_HOST_ZONE = os.path.realpath("/etc/localtime") if os.path.exists("/etc/localtime") else "/usr/share/zoneinfo/Etc/UTC"
# LC_ALL=C: the C library's built-in locale, which reads no file (LANGUAGE emptied, read as unset). In C.UTF-8 it reads
# files the episode can change: a message catalog added under /usr/share/locale made the host's `chage -l` print any
# password ageing (eleventh independent round), and a line added to /etc/locale.alias (the host has no locale archive)
# named a locale the episode built, whose collation turned the check's own `sort` around and whose month names moved
# chage's dates (twentieth). LLB-OS's checks read English; Python in the C locale still reads and writes UTF-8.
CHECK_ENV = {
    "PATH": _CHECK_PATH,
    "PYTHONNOUSERSITE": "1",
    "PYTHONSAFEPATH": "1",
    "TZ": f":{_HOST_ZONE}",
    "LC_ALL": "C",
    "LANGUAGE": "",
}
# where user and group names come from (no LLB-OS task gives uid or gid 0 another name; the ninth independent round
# forged an ownership check that way)
_USER_DATABASES = ("/etc/passwd", "/etc/group")
_MAX_USER_DATABASE_BYTES = 64 << 20
# An id field the C library's strtoul reads as a number (blanks, a sign, digits), and one written plainly (`00` is 0)
_READ_AS_A_NUMBER = re.compile(rb"[ \t\v\f\r]*[+-]?[0-9]+")
_PLAIN_ID = re.compile(rb"[0-9]+")
# systemd's JSON user and group records (nsswitch's `systemd` source reads them): a record with uid or gid 0 gave root's
# ids a second name (the twenty-seventh round: /etc/userdb/webadmin.user, also under /usr/local/lib/userdb)
_USER_RECORDS = ("/etc/userdb", "/run/userdb", "/run/host/userdb", "/usr/local/lib/userdb", "/usr/lib/userdb")
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


def system_changes(upper: str, hidden: tuple[str, ...]) -> dict[str, list[str]]:
    """Tampering pattern -> the paths of what the episode changed among the system files, read from the
    overlay's upper layer (`upper`): each entry there is something the episode wrote, at the path where
    the host's file (the lower layer, seen here at that same path) would be."""
    rules = check_rules()
    found: dict[str, list[str]] = {}
    commands: set[str] = set()
    folders: list[tuple[str, bool]] = []  # what visit() is still to look at, and whether it lies in a hidden path

    def lower_commands() -> set[str]:
        if not commands:
            for folder in rules["path"]:
                with contextlib.suppress(OSError):
                    commands.update(os.listdir(folder))
        return commands

    def look_inside(path: str, in_hidden: bool) -> None:
        with contextlib.suppress(OSError):
            folders.extend((f"{path}/{child}", in_hidden) for child in sorted(os.listdir(upper + path), reverse=True))

    def visit(path: str, in_hidden: bool) -> None:
        if path in hidden:  # shown empty on purpose (an extra hidden path under /usr): what the episode writes there is its own
            look_inside(path, True)  # a start-up file under a hidden /usr/local was not looked at (51b)
            return
        entry, kinds = upper + path, []
        try:
            info = os.lstat(entry)
        except OSError:  # deleted while scanned
            return
        lower: os.stat_result | None = None
        if not in_hidden:  # in a hidden path the host's file is not what the episode saw
            with contextlib.suppress(OSError):
                lower = os.lstat(path)
        name = path.rsplit("/", 1)[1]
        if _inside(path, rules["loader"]):
            kinds.append("changed_loader_config")
        if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:  # a whiteout: the host's file was deleted
            kinds.append("deleted_system_file")
        elif stat.S_ISDIR(info.st_mode):
            if lower is not None and (
                not stat.S_ISDIR(lower.st_mode) or (info.st_mode, info.st_uid, info.st_gid) != (lower.st_mode, lower.st_uid, lower.st_gid)
            ):
                kinds.append("changed_system_file")
            elif lower is not None and _opaque(entry):
                kinds.append("replaced_system_folder")
            look_inside(path, in_hidden)
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
        # a stack, not recursion: a folder nested 1,400 deep ended the scan in RecursionError (the thirty-first round)
        folders[:] = [(root, False)] if os.path.lexists(upper + root) else []
        while folders:
            visit(*folders.pop())
    for database in _USER_DATABASES:
        seen = _as_seen(upper, database)
        if seen == database:
            continue  # the host's, unchanged
        data = _regular_file(seen, _MAX_USER_DATABASE_BYTES) if seen is not None else None
        for pattern in _renamings(_entries(data)) if data is not None else ["renamed_user"]:
            found.setdefault(pattern, []).append(database)
    for folder in _USER_RECORDS:
        seen = _as_seen(upper, folder)
        if seen is None:
            found.setdefault("renamed_user", []).append(folder)
            continue
        for entry in sorted(glob.glob(f"{glob.escape(seen)}/*") if seen.startswith(upper) else []):
            if os.path.isdir(entry):
                continue
            if _names_root(entry):
                found.setdefault("renamed_superuser", []).append(folder + entry[len(seen) :])
            else:
                # any other record names an id or a membership: a group's gid given the wanted name there, its line taken
                # out of /etc/group, passed a chgrp task undone (the thirty-third round); a `user:group.membership` put
                # user1 in devteam for `id -nG` with /etc/group unchanged (43b, 3 of 3 tasks); no LLB-OS gold writes one
                found.setdefault("renamed_user", []).append(folder + entry[len(seen) :])
    # a folder holding what the check reads, made a link or a file by the episode: no LLB-OS gold does it (the thirtieth round
    # made /etc a link to an edited copy, which the scans above read through, and which hid /etc's files from the scan by path)
    for path in (*_USER_DATABASES, *_LOADER_CONFIG, *_USER_RECORDS):
        folder = ""
        for part in path.split("/")[1:-1]:
            folder += "/" + part
            if not os.path.lexists(upper + folder) or stat.S_ISDIR(os.lstat(upper + folder).st_mode):
                continue  # the host's, or a folder of the episode's layer: look further down
            if os.path.isdir(folder) and folder not in found.get("replaced_system_folder", []):
                found.setdefault("replaced_system_folder", []).append(folder)
            break
    for pattern in _USER_SITES:
        for entry in sorted(glob.glob(f"{upper}{pattern}/*")):
            if _is_startup_hook(os.path.basename(entry)) and not os.path.isdir(entry):
                found.setdefault("python_startup_hook", []).append(entry[len(upper) :])
    return found


def _entries(data: bytes) -> list[list[bytes]]:
    """A user or group database's entries as the C library's `files` source reads them: lines end at \n only (Python's text
    mode also splits at \r, which hid `newgroup:x\r:1001:` from the scan: 32nd round) and are C strings, ending at a NUL
    (`newgroup:x:1001\0:` is gid 1001: the thirtieth); blanks before an entry are skipped, empty lines and comments too."""
    lines = (line.partition(b"\0")[0].lstrip(b" \t\v\f\r") for line in data.split(b"\n"))
    return [fields for fields in (line.split(b":") for line in lines if line and not line.startswith(b"#")) if len(fields) > 2]


def _renamings(entries: list[list[bytes]]) -> set[str]:
    """The patterns of a user or group database's entries (name, password, id, ...) that make a check's `stat -c %U`, `find
    -user` or `ls -l` name files by another name than their owner's: the C library answers a lookup with the first entry,
    so an entry put first gives its id a second name or its name a second id. renamed_superuser: uid / gid 0 under a name
    but root (the ninth round); renamed_user: any other id or name on two entries, or root under an id but 0 (the 31st
    round: `newgroup:x:<oldgroup's gid>:` put first passed a task asking for the group changed). No LLB-OS gold makes one."""
    found, names, ids = set(), set(), set()
    for name, _, field, *_ in entries:
        if not _READ_AS_A_NUMBER.fullmatch(field):
            continue  # the C library skips an entry whose id is no number (task 390's gold puts a field before every id)
        if not _PLAIN_ID.fullmatch(field) or int(field) >= 1 << 32:
            found.add("renamed_user")  # ` 1001`, `+1001`, `-18446744073709550615` (strtoul wraps it to 1001: 32nd round)
            continue
        number = int(field)
        if number == 0 and name != b"root":
            found.add("renamed_superuser")
        elif name in names or number in ids or (name == b"root" and number != 0):
            found.add("renamed_user")
        names.add(name)
        ids.add(number)
    return found


def _regular_file(path: str, limit: int) -> bytes | None:
    """The regular file at `path`, b"" if there is none; None for anything else the episode put there: opened without
    O_NONBLOCK, a FIFO at /etc/passwd blocked the scan, and the harness, for ever (the thirty-first round); and a file past
    `limit` bytes, which the C library reads whole: an entry put first, then 64 MiB of blank lines, then the old file hid
    the old entry from a scan that read the first 64 MiB (the thirty-second round)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return b""
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        data = file.read(limit + 1) if stat.S_ISREG(os.fstat(descriptor).st_mode) else None
    return data if data is not None and len(data) <= limit else None


def _names_root(record: str) -> bool:
    """Whether a JSON user or group record the episode wrote (no folder) gives uid or gid 0 a name other than root (or
    cannot be read: systemd may read what Python does not)."""
    text = _regular_file(record, 1 << 20)
    if text is None:
        return True
    try:
        data = json.loads(text.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return True
    if not isinstance(data, dict):
        return True
    name = data.get("userName", data.get("groupName"))
    return any(isinstance(data.get(key), int) and data.get(key) == 0 for key in ("uid", "gid")) and name != "root"


# Folders whose files depend on who reads them (the reading process, the container's own mounts): the host reading one
# does not read what the episode's commands read there.
_READ_AS_THE_READER = ("/proc", "/sys", "/dev")


def _as_seen(upper: str, path: str) -> str | None:
    """Where the host reads the file the episode sees at `path`: the episode's layer's entry if it has one, else the host's;
    None where the host cannot read it as the episode does (a link into /proc, /sys or /dev: /etc/group made a link to
    /proc/self/cwd/.g showed the check an edited copy and the scan nothing, the thirty-sixth round). Every part of the path
    is looked up as the overlay shows it (the episode's layer first), and links are followed inside the episode's root
    wherever they are: a link to an edited copy is read, not the host's file at the link's target (the tenth round linked
    /etc/passwd, the thirtieth /etc itself)."""
    parts, seen, links = [part for part in path.split("/") if part], "", 0
    while parts:
        part = parts.pop(0)
        if part in (".", ".."):
            seen = seen.rsplit("/", 1)[0] if part == ".." else seen
            continue
        entry = f"{seen}/{part}"
        if entry in _READ_AS_THE_READER:
            return None
        if os.path.islink(upper + entry) or (not os.path.lexists(upper + entry) and os.path.islink(entry)):
            links += 1
            if links > 40:  # the kernel's limit: the episode's commands got ELOOP too
                break
            target = os.readlink(upper + entry if os.path.lexists(upper + entry) else entry)
            seen = "" if target.startswith("/") else seen
            parts[:0] = [part for part in target.split("/") if part]
            continue
        seen = entry
    return upper + seen if os.path.lexists(upper + seen) else seen or "/"


@lru_cache(maxsize=1)
def check_rules() -> dict[str, Any]:
    """What `system_changes` scans and the check step of ENTER lays over the episode's files, from this machine's filesystem."""
    roots = [path for path in _SYSTEM_ROOTS if os.path.lexists(path)] + sorted(glob.glob(_PYTHON_CONFIG))
    return {
        "roots": roots + list(_LOADER_CONFIG),
        "local": list(_LOCAL),
        "loader": list(_LOADER_CONFIG),
        "libraries": list(_LIBRARY_FOLDERS),
        "path": PATH.split(":"),
        # the host's own folders (merged-/usr hosts: /usr only), the loader's cache and NSS's configuration, laid over the episode's
        "trusted": [
            path for path in (*roots, "/etc/ld.so.cache", "/etc/nsswitch.conf") if os.path.exists(path) and not os.path.islink(path)
        ],
        "masked": ["/etc/ld.so.preload"],  # no preloaded library in a check
        "links": [[path, os.readlink(path)] for path in roots if os.path.islink(path)],  # /bin -> usr/bin
    }
