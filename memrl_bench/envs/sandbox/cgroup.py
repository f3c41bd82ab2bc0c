"""The cgroup that caps a sandbox's memory and live processes (and freezes what an episode left running while its check
runs), and joining it before exec."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path


class Cgroup:
    """One cgroup per sandbox capping memory and live processes: v2 if delegated here, else v1."""

    def __init__(self, name: str, memory_bytes: int, max_processes: int):
        self.name = name
        self.dirs: list[Path] = []
        self._freezer: tuple[Path, str, str, str] | None = None  # folder, state file, frozen value, thawed value
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
            v1_limits = (
                {"memory.limit_in_bytes": memory_bytes, "memory.memsw.limit_in_bytes": memory_bytes} if controller == "memory" else limits
            )
            if v1_dir and self._write(v1_dir, v1_limits):
                self.features.append(f"cgroup1 {next(iter(v1_limits))}")
                self.limited.add(controller)
        self._freezer = self._make_freezer()
        if self._freezer is not None:
            self.features.append(f"{self._freezer[1]} (what the episode leaves running, frozen while its check runs)")

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

    def refusals(self) -> dict[str, int]:
        """How often the kernel has refused this sandbox a resource so far, its children included: "memory", processes
        killed for lack of it (`oom_kill` of memory.events; v1 memory.oom_control, kernel 4.13 and later); "processes",
        forks refused at its process limit (`max` of pids.events). A count that cannot be read is left out."""
        counts: dict[str, int] = {}
        for directory in self.dirs:
            for resource, name, wanted in (
                ("memory", "memory.events", "oom_kill"),
                ("memory", "memory.oom_control", "oom_kill"),
                ("processes", "pids.events", "max"),
            ):
                with contextlib.suppress(OSError, ValueError):
                    for line in (directory / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == wanted and resource not in counts:
                            counts[resource] = int(value)
        return counts

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def _make_freezer(self) -> tuple[Path, str, str, str] | None:
        """A cgroup of this sandbox that freezes what is put in it (v2: a child with cgroup.freeze; v1: the freezer hierarchy)."""
        v2 = next((d for d in self.dirs if (d / "cgroup.freeze").exists()), None)
        if v2 is not None:
            folder, state = v2 / "frozen", ("cgroup.freeze", "1", "0")
        else:
            mount = next((point for fstype, point, opts in self._mounts() if fstype == "cgroup" and "freezer" in opts), None)
            own = self._own_paths().get("freezer")
            if mount is None or own is None:
                return None
            folder, state = Path(mount) / own.lstrip("/") / self.name, ("freezer.state", "FROZEN", "THAWED")
        try:
            folder.mkdir(exist_ok=True)
        except OSError:
            return None
        return (folder, *state) if (folder / state[0]).exists() else None

    def episode_procs_files(self) -> list[str]:
        """The cgroups an episode's command joins: this sandbox's and its freezer, so that whatever it starts, and whatever
        that forks, is in the freezer from its first instruction (a check's commands do not join it)."""
        return self.procs_files() + ([str(self._freezer[0] / "cgroup.procs")] if self._freezer else [])

    def freeze(self) -> bool:
        """Freeze every process of the episode's commands at once (False where no freezer is writable): a frozen process does
        not run, whatever signal it gets (SIGCONT wakes a stopped one, from its own timers too), and cannot fork its way out."""
        if self._freezer is None:
            return False
        folder, state, frozen_value, _ = self._freezer
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            # Written again every 50 ms: a v1 freezer that a process forking at the wrong moment left FREEZING stays so
            # until its state is written again (the kernel's cgroup-v1 freezer documentation says as much).
            (folder / state).write_text(frozen_value)
            settled = time.monotonic() + 0.05
            while time.monotonic() < settled:
                if _is_frozen(folder, state):
                    return True
                time.sleep(0.002)
        raise OSError(f"{folder}: the episode's processes did not freeze within 5 s")

    def thaw(self) -> None:
        if self._freezer is not None:
            folder, state, _, thawed_value = self._freezer
            with contextlib.suppress(OSError):
                (folder / state).write_text(thawed_value)

    def remove(self) -> None:
        self.thaw()
        for directory in [*([self._freezer[0]] if self._freezer else []), *reversed(self.dirs)]:
            for _ in range(100):  # a killed tree leaves the cgroup a few milliseconds later
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
        self.dirs = []


def _is_frozen(folder: Path, state: str) -> bool:
    if state == "cgroup.freeze":  # v2 says so in cgroup.events
        return "frozen 1" in (folder / "cgroup.events").read_text()
    return (folder / state).read_text().strip() == "FROZEN"


def join_cgroups(procs_files: list[str], argv: list[str]) -> list[str]:
    """argv prefixed by a shell that moves itself into the cgroups before exec, so no child escapes them."""
    if not procs_files:
        return argv
    script = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'
    return ["/bin/sh", "-c", script, "join-cgroups", str(len(procs_files)), *procs_files, *argv]
