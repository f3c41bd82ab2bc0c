"""`CodeRunner`: one Python program run with limits, in a fresh Sandbox (root) or a bare subprocess."""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import shlex
import site
import socket
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from memrl_bench.envs.sandbox.container import Sandbox
from memrl_bench.envs.sandbox.processes import collect_output, kill_command
from memrl_bench.envs.sandbox.settings import (
    DEFAULT_HIDDEN_PATHS,
    PATH,
    CommandResult,
    Limits,
    SandboxUnavailable,
    find_tools,
    hidden_for_this_process,
    normal_hidden_paths,
)


def _site_folders() -> tuple[str, ...]:
    """The site-packages folders `site` put on this interpreter's path, in their order (not the user's: a program's HOME
    is its own folder, so it never had them)."""
    folders = set(site.getsitepackages())
    return tuple(p for p in sys.path if p in folders)


def _python_binds(hidden_paths: tuple[str, ...]) -> tuple[str, ...]:
    """The running Python's install folders that a hidden path would cover (e.g. pyenv under /root, a venv in the checkout)."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    return tuple(sorted(r for r in roots if any(r == h or r.startswith(h + "/") for h in hidden_paths)))


class CodeRunner:
    """Runs one Python program with limits, in its own folder, and returns its merged output.

    isolation "sandbox": a fresh Sandbox per program (needs root), the program running as
    user nobody inside. "process": a bare subprocess with RLIMIT_AS / RLIMIT_NPROC / RLIMIT_CPU, a
    killed process group and a parent-death signal, for users without root: it does not isolate the network or the
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
        path = f"{os.path.dirname(self.python)}:{PATH}"
        self.env = {"PATH": path, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
        # A launcher starts with -S and is handed what `site` would have set: the packages' folders, and a venv's prefix
        # (sysconfig names the libraries' folders from it); no .pth, sitecustomize or usercustomize file runs before it (a
        # program in process mode wrote a .pth into site-packages, and every later runner, in both isolations, ran it
        # before its first line and signed what it was told: 43a). exit() and quit() as site makes them.
        self.launcher_prelude = (
            f"import sys; sys.prefix, sys.exec_prefix = {sys.prefix!r}, {sys.exec_prefix!r}; "
            f"sys.path += [p for p in {list(_site_folders())!r} if p not in sys.path]; "
            "import site; site.setquit(); site.setcopyright(); site.sethelper()\n"
        )

    def run(self, source: str, launcher: str | None = None, secret: str = "") -> CommandResult:
        """Run `source` as program.py in a folder of its own.

        With `launcher`, the launcher's source runs in that folder instead of program.py (a trusted runner that imports
        the program), from a file of its own (an argument of `python -c` is capped at 128 KiB, MAX_ARG_STRLEN, and the
        BigCodeBench runner neared it). Its standard input is one line, "<fd> <secret>":
        `fd` a descriptor it inherits to report on (what it writes there is CommandResult.reported,
        apart from the output and its cut), `secret` a text that no argv, environment or file the
        program can read holds.
        """
        if launcher is None:
            return self._run(source, None, None, ())
        if "\n" in secret:
            raise ValueError("a launcher's secret is one line")
        # A socket, not a pipe: a pipe's write end reopened through /proc/self/fd is its read end, where the program would
        # read the launcher's lines (its tag) back; a socket cannot be opened there, and the launcher's end reads nothing.
        ours, theirs = socket.socketpair()
        with ours:
            try:
                ours.shutdown(socket.SHUT_WR)
                theirs.shutdown(socket.SHUT_RD)
                result = self._run(source, self.launcher_prelude + launcher, f"{theirs.fileno()} {secret}\n".encode(), (theirs.fileno(),))
            finally:
                theirs.close()
            ours.setblocking(False)  # what was written is there; a process the run left behind may still hold the socket
            chunks = []
            with contextlib.suppress(BlockingIOError):
                while chunk := ours.recv(1 << 16):
                    chunks.append(chunk)
            result.reported = b"".join(chunks)
        return result

    def _run(self, source: str, launcher: str | None, stdin: bytes | None, pass_fds: tuple[int, ...]) -> CommandResult:
        if self.isolation == "sandbox":
            with Sandbox(
                self.limits,
                workdir="/tmp",
                hidden_paths=self.hidden_paths,
                readonly_binds=_python_binds((*self.hidden_paths, *hidden_for_this_process())),
                env={**self.env, "HOME": "/tmp"},
            ) as sandbox:
                # The program runs as user nobody in a folder of its own (tests of permission errors
                # expect a user without root's rights); the run ends with the program: whatever it
                # left running is killed (kill -1 spares this bash and pid 1). A launcher's input line
                # travels as the first line of this bash's input, in a variable, then on the launcher's; the launcher
                # follows it (its length on a line, then its bytes), into a folder of root's, then the program.
                python = shlex.quote(self.python) + (' -S "$launcher/launcher.py"' if launcher is not None else " program.py")
                command = (
                    "IFS= read -r line\n"
                    + (
                        'IFS= read -r size; launcher=$(mktemp -d /tmp/launcher.XXXXXX) && head -c "$size" > "$launcher/launcher.py" '
                        '&& chmod 755 "$launcher" || exit 125\n'
                        if launcher is not None
                        else ""
                    )
                    + 'folder=$(mktemp -d /tmp/run.XXXXXX) && cat > "$folder/program.py" && chown -R 65534:65534 "$folder" && cd "$folder" '
                    "|| exit 125\n"
                    + ('printf "%s\\n" "$line" | ' if stdin is not None else "")
                    + f"setpriv --reuid=65534 --regid=65534 --clear-groups -- {python}; status=$?\n"
                    "kill -9 -1 2>/dev/null; exit $status"
                )
                sent = b"" if launcher is None else b"%d\n%s" % (len(launcher.encode()), launcher.encode())
                return sandbox.run(command, stdin=(stdin or b"\n") + sent + source.encode(), pass_fds=pass_fds)
        _undumpable()
        with tempfile.TemporaryDirectory(prefix="memrl-code-") as folder, tempfile.TemporaryDirectory(prefix="memrl-launcher-") as own:
            Path(folder, "program.py").write_text(source)
            python = [self.python, "program.py"]
            if launcher is not None:
                Path(own, "launcher.py").write_text(launcher)
                python = [self.python, "-S", str(Path(own, "launcher.py"))]
            argv = [
                find_tools("prlimit")["prlimit"],
                "--core=0",
                f"--as={self.limits.memory_bytes}",
                f"--nproc={self.limits.max_processes}",
                f"--cpu={math.ceil(self.limits.timeout_s) + 1}",  # a program spinning past a killed harness stops by itself
                "--",
                *python,
            ]
            # killed with the harness (a SIGKILLed harness left a spinning program running under init)
            privileges = ["--pdeathsig", "KILL"]
            if os.geteuid() == 0:  # root without capabilities: no reading of other processes (the harness's environ), no DAC override
                privileges += ["--bounding-set=-all", "--no-new-privs"]
            argv = [find_tools("setpriv")["setpriv"], *privileges, "--", *argv]
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
                return collect_output(proc, stdin, self.limits.timeout_s, self.limits.output_bytes)
            finally:
                kill_command(proc, None)


@lru_cache(maxsize=1)
def _undumpable() -> None:
    """Make this process non-dumpable for good: its /proc/<pid>/environ (API keys) and memory are then
    readable by root only, not by programs it runs as its own user (they lack CAP_SYS_PTRACE)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise SandboxUnavailable(f"prctl(PR_SET_DUMPABLE, 0) failed: {os.strerror(ctypes.get_errno())}")
