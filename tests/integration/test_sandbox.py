"""Containment of memrl_bench.envs.sandbox: network, host filesystem, kernel keyring, system calls, time, processes, memory."""

from __future__ import annotations

import ctypes
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Task
from memrl_bench.envs.gold import GoldFilter
from memrl_bench.envs.sandbox import (
    DEFAULT_HIDDEN_PATHS,
    CodeRunner,
    CommandResult,
    Limits,
    Sandbox,
    SandboxSettingError,
    SandboxUnavailable,
    unavailable_reason,
)

REASON = unavailable_reason()
needs_sandbox = pytest.mark.skipif(REASON is not None, reason=f"sandbox unavailable here: {REASON}")
REPO = Path(__file__).resolve().parents[2]


def processes_mentioning(marker: str) -> list[int]:
    """Host pids whose command line contains `marker` (this test process excluded)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" "):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def syscall_numbers(*names: str) -> dict[str, int]:
    import pyseccomp  # the sandbox's own dependency: present whenever a sandbox can be built

    return {name: pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name) for name in names}


def run_python(sandbox: Sandbox, program: str) -> CommandResult:
    return sandbox.run(f"python3 -u -c {shlex.quote(program)}")  # unbuffered: a killed program's output is kept


# Inside: prints "<attempt> ok" or "<attempt> <errno name>" for each system call tried.
TRY_CALLS = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, number, *args):
    result = libc.syscall(number, *args)
    print(name, "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()])
"""


@needs_sandbox
def test_no_network_host_loopback_or_outside():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    port = server.getsockname()[1]
    with Sandbox(Limits(timeout_s=10)) as sandbox:
        local = sandbox.run(f"timeout 5 bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'")
        outside = sandbox.run("timeout 5 bash -c 'echo hi > /dev/tcp/1.1.1.1/53'; timeout 5 bash -c 'echo hi > /dev/tcp/8.8.8.8/443'")
        interfaces = sandbox.run("ip -o link show | awk -F': ' '{print $2}'")
    assert local.exit_code != 0 and "refused" in local.output  # the sandbox's own empty loopback, not the host's
    assert "unreachable" in outside.output.lower() and outside.exit_code != 0
    assert not local.timed_out and not outside.timed_out
    assert interfaces.output.split() == ["lo"]
    with pytest.raises(BlockingIOError):
        server.accept()  # nothing ever reached the host's listener
    server.close()


@needs_sandbox
def test_writes_stay_inside_and_vanish():
    name = f"memrl-test-{uuid.uuid4().hex}"
    targets = [f"/etc/{name}", f"/root/{name}", f"/tmp/{name}", f"/usr/{name}", f"/var/lib/{name}"]
    with Sandbox() as sandbox:
        written = sandbox.run(" && ".join(f"echo inside > {t}" for t in targets) + f" && useradd {name[:30]} && cat {targets[0]}")
        later = sandbox.run(f"cat {targets[1]}; id -u {name[:30]}")
        mount_point = sandbox._state["mount_point"]
        assert written.ok and written.output.strip() == "inside"
        assert later.ok  # files and users persist between commands of one episode
        assert not any(Path(t).exists() for t in targets)  # ... but never on the host, even while running
    assert not any(Path(t).exists() for t in targets)
    assert subprocess.run(["id", name[:30]], capture_output=True).returncode != 0
    assert not Path(mount_point).exists()


@needs_sandbox
def test_host_folders_hidden_and_kernel_knobs_read_only():
    harness = [REPO, *(p for p in [REPO.parent / "shared"] if p.is_dir())]  # wherever the checkout lives (CI clones elsewhere)
    with Sandbox() as sandbox:
        listing = sandbox.run(
            "find /root /work /home " + " ".join(str(p) for p in harness) + " -mindepth 1 2>/dev/null | wc -l"
        )  # empty or absent
        knob = sandbox.run("echo 1 > /proc/sys/vm/drop_caches")
        mounting = sandbox.run("mount -t tmpfs x /mnt")
    assert listing.output.split() == ["0"]
    assert REPO.exists() and any(REPO.iterdir())  # ... while the host still sees them
    assert knob.exit_code != 0 and "Read-only" in knob.output
    assert mounting.exit_code != 0  # no CAP_SYS_ADMIN inside


@needs_sandbox
def test_host_keyring_is_unreachable_inside():
    calls = syscall_numbers("add_key", "keyctl", "request_key")
    libc = ctypes.CDLL(None, use_errno=True)
    description, secret = f"memrl-test-{uuid.uuid4().hex}".encode(), f"secret-{uuid.uuid4().hex}".encode()
    serial = libc.syscall(calls["add_key"], b"user", description, secret, len(secret), -4)  # -4: the host user's keyring (@u)
    assert serial > 0, os.strerror(ctypes.get_errno())
    try:
        buffer = ctypes.create_string_buffer(256)
        assert (
            libc.syscall(calls["keyctl"], 11, serial, buffer, 256) == len(secret) and buffer.raw[: len(secret)] == secret
        )  # KEYCTL_READ works on the host
        program = (
            TRY_CALLS
            + f"""
buffer = ctypes.create_string_buffer(256)
attempt("read", {calls["keyctl"]}, 11, {serial}, buffer, 256)
attempt("search", {calls["keyctl"]}, 10, -4, b"user", {description!r}, 0)
attempt("link", {calls["keyctl"]}, 8, -4, -3)
attempt("request_key", {calls["request_key"]}, b"user", {description!r}, None, 0)
attempt("add_key", {calls["add_key"]}, b"user", b"planted", b"x", 1, -4)
print("leaked" if {secret!r} in buffer.raw else "nothing read")
"""
        )
        with Sandbox(Limits(timeout_s=20)) as sandbox:
            tried = run_python(sandbox, program)
            listed = sandbox.run("cat /proc/keys /proc/key-users")
            x32 = run_python(
                sandbox, f"import ctypes; print('x32', ctypes.CDLL(None).syscall(0x40000000 | {calls['keyctl']}, 11, {serial}, None, 0))"
            )
    finally:
        libc.syscall(calls["keyctl"], 21, serial)  # KEYCTL_INVALIDATE: the host keyring as it was
    assert tried.ok, tried.output
    assert tried.output.splitlines() == ["read EPERM", "search EPERM", "link EPERM", "request_key EPERM", "add_key EPERM", "nothing read"]
    assert listed.ok and listed.output == ""  # not even the key's name
    if platform.machine() == "x86_64":  # the same call through the x32 ABI: the filter kills the caller (SIGSYS)
        assert x32.exit_code == 128 + 31 and "x32" not in x32.output


@needs_sandbox
def test_namespaces_mounts_and_ptrace_are_refused_inside():
    calls = syscall_numbers("unshare", "clone", "clone3", "setns", "mount", "fsopen", "ptrace", "process_vm_readv", "bpf", "init_module")
    program = (
        TRY_CALLS
        + f"""
import subprocess, threading
attempt("unshare(CLONE_NEWUSER)", {calls["unshare"]}, 0x10000000)
attempt("unshare(CLONE_NEWNS)", {calls["unshare"]}, 0x00020000)
attempt("clone(CLONE_NEWUSER)", {calls["clone"]}, 0x10000000 | 17, 0, 0, 0, 0)
attempt("clone3", {calls["clone3"]}, 0, 0)
attempt("setns", {calls["setns"]}, os.open("/proc/self/ns/net", os.O_RDONLY), 0)
attempt("mount", {calls["mount"]}, b"none", b"/mnt", b"tmpfs", 0, None)
attempt("fsopen", {calls["fsopen"]}, b"tmpfs", 0)
child = subprocess.Popen(["sleep", "60"])
attempt("ptrace(PTRACE_ATTACH)", {calls["ptrace"]}, 16, child.pid, 0, 0)
local, remote = (ctypes.c_uint64 * 2)(), (ctypes.c_uint64 * 2)()
attempt("process_vm_readv", {calls["process_vm_readv"]}, child.pid, local, 1, remote, 1, 0)
child.kill()
attempt("bpf", {calls["bpf"]}, 0, None, 0)
attempt("init_module", {calls["init_module"]}, None, 0, b"")
thread = threading.Thread(target=print, args=("thread ok",))  # clone3 refused, libc falls back to clone
thread.start()
thread.join()
print(*(line.split()[1] for line in open("/proc/self/status") if line.startswith(("NoNewPrivs", "Seccomp:"))))
"""
    )
    with Sandbox(Limits(timeout_s=30)) as sandbox:
        tried = run_python(sandbox, program)
        tool = sandbox.run("unshare --user --map-current-user true")
        tracer = sandbox.run("strace -o /dev/null true")
    assert tried.ok, tried.output
    assert tried.output.splitlines() == [
        "unshare(CLONE_NEWUSER) EPERM",
        "unshare(CLONE_NEWNS) EPERM",
        "clone(CLONE_NEWUSER) EPERM",
        "clone3 ENOSYS",
        "setns EPERM",
        "mount EPERM",
        "fsopen EPERM",
        "ptrace(PTRACE_ATTACH) EPERM",
        "process_vm_readv EPERM",
        "bpf EPERM",
        "init_module EPERM",
        "thread ok",
        "1 2",  # no_new_privs, seccomp mode 2 (filter)
    ]
    assert tool.exit_code != 0 and "Operation not permitted" in tool.output
    if shutil.which("strace"):  # the host's tools are the container's
        assert tracer.exit_code != 0 and "Operation not permitted" in tracer.output


@needs_sandbox
def test_dev_shm_shares_the_disk_cap():
    with Sandbox(Limits(timeout_s=30, disk_bytes=64 << 20)) as sandbox:
        result = sandbox.run(
            "head -c 40M /dev/zero > /root/a && echo wrote a; head -c 40M /dev/zero > /dev/shm/b && echo wrote b; df -B1M --output=size / "
            "/dev/shm"
        )
    assert result.output.split("\n")[:2] == ["wrote a", "head: error writing 'standard output': No space left on device"], result.output
    assert result.output.split()[-2:] == ["64", "64"]  # df: / and /dev/shm are one tmpfs of disk_bytes


@needs_sandbox
def test_dev_shm_and_disk_writes_stay_within_the_memory_cap():
    with Sandbox(Limits(timeout_s=30, memory_bytes=192 << 20, disk_bytes=512 << 20)) as sandbox:
        if not any(feature.startswith(("cgroup1 memory", "cgroup2 memory")) for feature in sandbox.features):
            pytest.skip(f"no memory cgroup here (features: {sandbox.features})")
        filled = sandbox.run("head -c 100M /dev/zero > /root/a && echo wrote a; head -c 100M /dev/zero > /dev/shm/b && echo wrote b")
        after = sandbox.run("echo alive")
    # one tmpfs of 3/4 of the memory cap holds both: it fills before the cgroup's OOM killer reaches the container
    assert filled.output.splitlines() == ["wrote a", "head: error writing 'standard output': No space left on device"], filled.output
    assert after.ok and after.output == "alive\n"


@needs_sandbox
def test_time_limit_kills_loops_and_background_children():
    marker = str(900000 + uuid.uuid4().int % 99999)
    with Sandbox(Limits(timeout_s=2)) as sandbox:
        loop = sandbox.run("while true; do :; done")
        children = sandbox.run(f"sleep {marker} & sleep {marker} & setsid sleep {marker} & echo started")
        assert loop.timed_out and loop.exit_code is None and loop.seconds < 10
        assert children.timed_out and "started" in children.output
        assert processes_mentioning(f"sleep {marker}") == []  # killed at the limit, not only at close
        after = sandbox.run("echo still usable")
    assert after.ok


@needs_sandbox
def test_waits_for_output_holders_and_close_kills_detached_daemons():
    marker = str(800000 + uuid.uuid4().int % 99999)
    with Sandbox(Limits(timeout_s=10)) as sandbox:
        waited = sandbox.run("(sleep 1; echo late) & echo early")
        detached = sandbox.run(f"nohup sleep {marker} > /dev/null 2>&1 & echo $! > /tmp/pid")
        alive = sandbox.run("kill -0 $(cat /tmp/pid) && echo alive")
        assert waited.ok and waited.output.split() == ["early", "late"]  # like docker exec: output closes last
        assert detached.ok and detached.seconds < 5 and alive.output.strip() == "alive"
        assert processes_mentioning(f"sleep {marker}") != []
    assert processes_mentioning(f"sleep {marker}") == []


# A harness that starts a sandbox with a detached daemon in it, says the container's first process, and is killed outright.
KILLED_HARNESS = """
import os, signal
from memrl_bench.envs.sandbox import Limits, Sandbox
sandbox = Sandbox(Limits(timeout_s=10))
sandbox.start()
sandbox.run("nohup sleep {marker} > /dev/null 2>&1 &")
reach = sandbox.run("exec 5>/proc/1/fd/0 && echo held")  # a command holding the pipe's end would keep the container
print(sandbox._init_pid, reach.output.replace(chr(10), " "), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def remove_what_a_killed_harness_left(pid: int) -> None:
    """The empty cgroups a SIGKILLed harness leaves (RELIABILITY, "Still not defended"): the test's own, taken away. Its
    mount-point folders are in the test's TMPDIR."""
    for cgroup in Path("/sys/fs/cgroup").glob(f"**/memrl-sandbox-{pid}-*"):
        cgroup.rmdir()


@needs_sandbox
def test_a_harness_killed_outright_takes_its_sandboxes_with_it(tmp_path):
    """A harness SIGKILLed (no close, no finalizer) left each sandbox's first process waiting, holding its tmpfs, and what
    the episode left running, until killed by hand (RELIABILITY, "Still not defended", before 2026-12-06). The first
    process now waits on a pipe from the harness, ends with it, and takes its pid namespace with it; no command inside
    can open that pipe (and so keep it open)."""
    marker = str(800000 + uuid.uuid4().int % 99999)
    harness = subprocess.Popen(
        [sys.executable, "-c", KILLED_HARNESS.format(marker=marker)],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = harness.communicate()
    init, reach = stdout.split(" ", 1)
    assert harness.returncode == -9 and init.isdigit() and "Permission denied" in reach and "held" not in reach, (stdout, stderr)
    init = int(init)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and (Path(f"/proc/{init}").exists() or processes_mentioning(f"sleep {marker}")):
        time.sleep(0.05)
    left = [init] * Path(f"/proc/{init}").exists() + processes_mentioning(f"sleep {marker}")
    for pid in left:  # the test's own leftovers, if it fails
        os.kill(pid, 9)
    assert left == []
    remove_what_a_killed_harness_left(harness.pid)


# A library whose constructor notes the rights of every process that loads it: its seccomp mode and capabilities.
RIGHTS_NOTED = r"""
#include <stdio.h>
#include <string.h>
__attribute__((constructor)) static void note(void) {
    FILE *status = fopen("/proc/self/status", "r"), *out = fopen("/var/rights", "a");
    char line[256];
    while (status && out && fgets(line, sizeof line, status))
        if (!strncmp(line, "Seccomp:", 8) || !strncmp(line, "CapEff:", 7)) fputs(line, out);
    if (status) fclose(status);
    if (out) fclose(out);
}
"""


@needs_sandbox
@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc on this machine: the test builds a shared library")
def test_the_first_process_starts_nothing_an_episode_could_load_code_into():
    """The thirty-fifth round: pid 1 (a bash loop starting `sleep 3600` again each time it ended) keeps every capability and
    no seccomp filter; an episode wrote /etc/ld.so.preload naming its own library and killed the `sleep`, and the next one
    ran the library with pid 1's rights: it forged every LLB-OS check (20 of 20 tasks) and reached the host's root. Pid 1
    now starts nothing (orphans are still reaped): only the episode's own commands, filtered, load the library."""
    with Sandbox(Limits(timeout_s=30)) as sandbox:
        built = sandbox.run(f"printf %s {shlex.quote(RIGHTS_NOTED)} > /opt/r.c && gcc -shared -fPIC -o /opt/r.so /opt/r.c && echo built")
        assert built.output.strip().endswith("built"), built.output
        # pid 1's children killed (its `sleep` was started again, loading the library), then a daemon left to end on its own
        sandbox.run("echo /opt/r.so > /etc/ld.so.preload; kill -9 -1; kill -9 1; sleep 1; setsid sleep 0.2 </dev/null >/dev/null 2>&1 &")
        init = sandbox._init_pid
        children = Path(f"/proc/{init}/task/{init}/children")
        noted = sandbox.run("sleep 0.5; rm /etc/ld.so.preload; cat /var/rights")
        rights = noted.output.splitlines()
        assert noted.ok and rights and all(line.split() != ["Seccomp:", "0"] for line in rights if line.startswith("Seccomp"))
        assert children.read_text().split() == [] and sandbox.running  # the daemon above ended and was reaped


@needs_sandbox
def test_the_hosts_device_nodes_are_usable_inside_and_unchanged_by_it():
    """The thirty-sixth round: /dev's devices and the masks over /proc/keys etc. were the host's nodes bound writable: `chmod
    600 /proc/keys` in an episode made the host's /dev/null unusable to every other user (every later LLB-DB episode an
    env_error, every BigCodeBench answer a silent failure). They are bound read only: usable, their metadata not the
    episode's to change. `chmod 666` changes no mode, only the node's ctime, so this test damages nothing even if it fails."""
    devices = ("null", "zero", "full", "random", "urandom", "tty")
    masked = [f"/proc/{entry}" for entry in ("keys", "key-users", "timer_list", "sched_debug") if Path(f"/proc/{entry}").exists()]
    inside = [f"/dev/{d}" for d in devices] + masked
    before = {d: os.stat(f"/dev/{d}").st_ctime_ns for d in devices}
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        changed = sandbox.run("; ".join(f"chmod 666 {path} 2>/dev/null && echo {path}" for path in inside) + "; true")
        used = sandbox.run("echo x > /dev/null && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c")
    assert changed.output.split() == [] and {d: os.stat(f"/dev/{d}").st_ctime_ns for d in devices} == before, changed.output
    assert used.ok and used.output.split() == ["4", "4"], used.output


@needs_sandbox
def test_fork_bomb_dies_and_leaves_nothing():
    marker = f"bomb{uuid.uuid4().hex[:8]}"
    with Sandbox(Limits(timeout_s=3, max_processes=64)) as sandbox:
        result = sandbox.run(f"{marker}(){{ {marker} | {marker} & }}; {marker}; sleep 100")
        assert result.timed_out
        after = sandbox.run("echo alive")
        assert after.ok and after.output.strip() == "alive"
    assert processes_mentioning(marker) == []


@needs_sandbox
def test_memory_cap_kills_a_10_gb_allocation():
    with Sandbox(Limits(timeout_s=30, memory_bytes=256 << 20)) as sandbox:
        result = sandbox.run("python3 -c 'b = bytearray(10 * 2**30); print(len(b))'")
        after = sandbox.run("echo alive")
    assert not result.ok and "10737418240" not in result.output
    assert result.exit_code == 137 or "MemoryError" in result.output
    assert after.ok


@needs_sandbox
def test_output_keeps_head_and_tail():
    with Sandbox(Limits(output_bytes=200)) as sandbox:
        result = sandbox.run("seq 1 10000; echo VERDICT")
    assert result.output.startswith("1\n2\n") and result.output.rstrip().endswith("VERDICT")
    assert result.dropped_bytes > 40000 and "bytes of output not shown" in result.output


@needs_sandbox
def test_failing_setup_names_the_call():
    missing = f"/nonexistent-{uuid.uuid4().hex}"
    with pytest.raises(SandboxUnavailable, match=f"failing call: mount --bind {missing}"):
        Sandbox(readonly_binds=(missing,)).start()


def test_non_root_gets_a_clear_reason():
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None or shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root, setpriv and a system /usr/bin/python3 to run the probe as user nobody")
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); from memrl_bench.envs.sandbox import unavailable_reason; "
        "print(unavailable_reason())"
    )
    probe = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", code], capture_output=True, text=True, cwd="/"
    )
    assert probe.returncode == 0, probe.stderr
    assert "needs root" in probe.stdout and "geteuid() returned 65534" in probe.stdout


@needs_sandbox
def test_code_runner_sandbox_contains_a_program():
    name = f"memrl-test-{uuid.uuid4().hex}"
    program = f"""
import os, socket
for path in ('/etc/{name}', '/tmp/{name}', '{name}'):
    try:
        open(path, 'w').write('x')
        print('wrote', path)
    except OSError as err:
        print('refused', path, type(err).__name__)
try:
    socket.create_connection(('1.1.1.1', 53), timeout=3)
    print('NETWORK')
except OSError as err:
    print('no network:', err)
print('uid', os.getuid())
print([line.split()[1] for line in open('/proc/self/status') if line.startswith('Seccomp:')])
import sys
print('prefix', sys.prefix)
"""
    result = CodeRunner(Limits(timeout_s=30)).run(program)
    assert result.ok, result.output
    assert f"refused /etc/{name} PermissionError" in result.output  # runs as nobody inside
    assert f"wrote /tmp/{name}" in result.output and f"wrote {name}\n" in result.output
    assert "no network" in result.output and "NETWORK\n" not in result.output and "uid 65534" in result.output
    assert "['2']" in result.output  # the seccomp filter holds for programs too
    assert f"prefix {sys.prefix}\n" in result.output  # the harness's interpreter and packages (its virtualenv, if any)
    assert not Path(f"/etc/{name}").exists() and not Path(f"/tmp/{name}").exists()


@needs_sandbox
def test_code_runner_hides_the_folders_it_is_given():
    data = Path("/var/lib") / f"memrl-test-{uuid.uuid4().hex}"  # outside every default hidden path
    data.mkdir()
    try:
        (data / "gold.txt").write_text("the answer")
        program = f"import os\nprint(sorted(os.listdir({str(data)!r})))"
        seen = CodeRunner(Limits(timeout_s=30)).run(program)
        hidden = CodeRunner(Limits(timeout_s=30), hidden_paths=DEFAULT_HIDDEN_PATHS + (str(data),)).run(program)
    finally:
        shutil.rmtree(data)
    assert seen.output.strip() == "['gold.txt']", seen.output
    assert hidden.output.strip() == "[]", hidden.output


@needs_sandbox
def test_hidden_files_are_shown_empty_like_hidden_folders():
    # A hidden path may be a file (an SSH host key) as well as a folder: the file is there, empty, with its mode.
    data = Path("/var/lib") / f"memrl-test-{uuid.uuid4().hex}"  # outside every default hidden path
    (data / "folder").mkdir(parents=True)
    try:
        (data / "folder" / "gold.txt").write_text("the answer")
        (data / "host_key").write_text("PRIVATE KEY")
        (data / "host_key").chmod(0o600)
        hidden = (str(data / "folder"), str(data / "host_key"), "/etc/shadow")
        with Sandbox(Limits(timeout_s=20), hidden_paths=DEFAULT_HIDDEN_PATHS + hidden) as sandbox:
            result = sandbox.run(f"cd {data} && ls folder; stat -c '%a %s' host_key; cat host_key; wc -c < /etc/shadow")
    finally:
        shutil.rmtree(data)
    assert result.ok and result.output.splitlines() == ["600 0", "0"], result.output


@needs_sandbox
def test_hidden_paths_in_any_spelling_hide_their_folder():
    # A trailing `/` or `/.`, doubled slashes, a link to it: one folder, hidden the same (red team, round 2: `/opt/` hid
    # nothing; round 28b: `/var/run`, a link to /run, hid only the link).
    data = Path("/var/lib") / f"memrl-test-{uuid.uuid4().hex}"  # outside every default hidden path
    data.mkdir()
    seen = {}
    try:
        (data / "gold.txt").write_text("the answer")
        link = Path("/var/lib") / f"{data.name}-link"  # round 28b: a link's spelling hid the link, not the folder it names
        link.symlink_to(data)
        for spelling in (f"{data}/", f"{data}/.", f"/{data}//", f"{data}/../{data.name}", str(link)):
            with Sandbox(Limits(timeout_s=20), hidden_paths=(*DEFAULT_HIDDEN_PATHS, spelling)) as sandbox:
                seen[spelling] = sandbox.run(f"ls -A {data}").output.strip()
    finally:
        link.unlink(missing_ok=True)
        shutil.rmtree(data)
    assert seen == dict.fromkeys(seen, ""), seen
    assert CodeRunner(Limits(timeout_s=5), hidden_paths=(*DEFAULT_HIDDEN_PATHS, f"/{data}/.")).hidden_paths[-1] == str(
        data
    )  # its Python's binds compare the same form


def test_code_runner_process_mode_limits_time_and_memory():
    marker = str(700000 + uuid.uuid4().int % 99999)
    runner = CodeRunner(Limits(timeout_s=2, memory_bytes=512 << 20), isolation="process")
    slow = runner.run(f"import subprocess, time\nsubprocess.Popen(['sleep', '{marker}'], start_new_session=True)\ntime.sleep(100)")
    hungry = runner.run("b = bytearray(10 * 2**30)")
    assert slow.timed_out and processes_mentioning(f"sleep {marker}") == []
    assert hungry.exit_code != 0 and "MemoryError" in hungry.output


def test_a_process_mode_program_dies_with_a_killed_harness(tmp_path):
    """Before (the eighth independent round): a SIGKILLed harness left `while True: pass` spinning under init (48 s of CPU
    in 49 s, still running)."""
    import signal
    import time

    token = uuid.uuid4().hex[:8]
    marker = f"spin{token}"  # in the program's command line only: the harness's holds it in two pieces
    program = f"import os, sys\\nos.execv(sys.executable, [sys.executable, '-c', 'spin' + '{token} = 1\\\\nwhile True: pass'])"
    harness = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from memrl_bench.envs.sandbox import CodeRunner, Limits\n"
            f"CodeRunner(Limits(timeout_s=600), isolation='process').run(\"{program}\")",
        ],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # the program's folder, which the killed harness cannot remove
    )
    for _ in range(100):
        if processes_mentioning(marker):
            break
        time.sleep(0.1)
    assert processes_mentioning(marker), "the program never started"
    harness.send_signal(signal.SIGKILL)
    harness.wait()
    for _ in range(50):
        if not processes_mentioning(marker):
            break
        time.sleep(0.1)
    assert processes_mentioning(marker) == []


def test_a_process_mode_program_leaves_nothing_spinning_past_its_cpu_limit():
    """What a program starts in a session of its own escapes the kill of its process group (process mode has no
    sandbox to end it): spinning, it stops at the CPU limit the program had (its time limit + 1 s)."""
    import time

    marker = f"spin{uuid.uuid4().hex[:8]}"
    program = (
        f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', '{marker} = 1\\nwhile True: pass'], start_new_session=True, "
        "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    )
    CodeRunner(Limits(timeout_s=1), isolation="process").run(program)
    assert processes_mentioning(marker), "the spinning process was not left running"
    for _ in range(100):
        if not processes_mentioning(marker):
            break
        time.sleep(0.1)
    assert processes_mentioning(marker) == []


def test_code_runner_rejects_unknown_isolation():
    with pytest.raises(ValueError, match="unknown isolation 'docker'"):
        CodeRunner(Limits(), isolation="docker")


def test_gold_filter_checks_each_task_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path))
    tasks = {"train": [Task(id=f"t{i}", split="train", description="") for i in range(6)]}
    calls: list[str] = []

    def run_gold(task: Task) -> str:
        calls.append(task.id)
        return "broken" if task.id in ("t0", "t3") else ""

    first = GoldFilter("demo", ["v1"], tasks, run_gold, limit=2, needs_sandbox=False)
    assert [t.id for t in first.tasks("train")] == ["t1", "t2"]
    assert sorted(calls) == ["t0", "t1", "t2"] and first.excluded() == {"t0": "broken"}  # only as many as needed
    again = GoldFilter("demo", ["v1"], tasks, run_gold, needs_sandbox=False)
    assert [t.id for t in again.tasks("train")] == ["t1", "t2", "t4", "t5"]
    assert sorted(calls) == ["t0", "t1", "t2", "t3", "t4", "t5"]  # results on disk were not re-run
    assert again.excluded() == {"t0": "broken", "t3": "broken"}
    assert (
        list(tmp_path.glob("demo/gold_*.json")) and GoldFilter("demo", ["v2"], tasks, run_gold).results == {}
    )  # another key, another file
    assert GoldFilter("demo", ["v1"], tasks, run_gold).path != first.path  # checked in a sandbox: its CONTAINMENT is part of the key
    off = GoldFilter("demo", ["v1"], tasks, run_gold, enabled=False)
    assert len(off.tasks("train")) == 6 and off.excluded() == {}
    with pytest.raises(KeyError, match="unknown split 'dev' of demo; valid: train"):
        off.tasks("dev")


@needs_sandbox
def test_sandbox_shadow_file_is_its_own(tmp_path):
    # The host's shadow file as this test's own mount namespace shows it: a user with a real hash.
    hashed = "$6$canarysalt$" + uuid.uuid4().hex
    fake = tmp_path / "shadow"
    fake.write_text(Path("/etc/shadow").read_text() + f"memrlcanary:{hashed}:20000:0:99999:7:::\nmemrllocked:!{hashed}:20000::::::\n")
    host = os.stat("/etc/shadow")
    os.chown(fake, host.st_uid, host.st_gid)
    os.chmod(fake, host.st_mode & 0o7777)
    program = f"""
import subprocess, sys
sys.path.insert(0, {str(REPO)!r})
for target in ("/etc/shadow", "/etc/shadow-"):  # the file and the backup the shadow tools keep
    subprocess.run(["mount", "--bind", {str(fake)!r}, target], check=True)
from memrl_bench.envs.sandbox import Limits, Sandbox
with Sandbox(Limits(timeout_s=20)) as sandbox:
    print(sandbox.run("grep -h ^memrl /etc/shadow /etc/shadow-; stat -c '%U:%G %a' /etc/shadow /etc/gshadow").output)
    print(sandbox.run("useradd memrlnew && echo memrlnew:secret | chpasswd && grep -c '^memrlnew:[$]' /etc/shadow && passwd -S memrlnew").output)
"""  # noqa: E501 (a program's or page's text, kept as written)
    inside = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    assert inside.returncode == 0, inside.stderr
    lines = inside.stdout.splitlines()
    assert lines[:4] == ["memrlcanary:*:20000:0:99999:7:::", "memrllocked:!*:20000::::::"] * 2, inside.stdout  # no hash is readable inside
    host_owner = subprocess.run(
        ["stat", "-c", "%U:%G %a", "/etc/shadow", "/etc/gshadow"], capture_output=True, text=True
    ).stdout.splitlines()
    assert lines[4:6] == host_owner  # the copy keeps the host file's owner and mode
    assert hashed not in inside.stdout and lines[7] == "1" and lines[8].startswith("memrlnew P")  # useradd and chpasswd work on the copy
    assert "memrlnew" not in Path("/etc/shadow").read_text()


PEEK = """
import glob, os
print("ran as", os.getuid())
found = []
for path in [f"/proc/{os.getppid()}/environ", *glob.glob("/proc/[0-9]*/environ")]:
    try:
        if CANARY.encode() in open(path, "rb").read():
            found.append(path)
    except OSError:
        pass
found += [f"environ:{k}" for k, v in os.environ.items() if CANARY in v]
print("found", sorted(set(found)))
"""


@pytest.mark.parametrize(
    "isolation, user", [pytest.param("sandbox", "root", marks=needs_sandbox), ("process", "root"), ("process", "nobody")]
)
def test_process_mode_program_sees_no_harness_secret(isolation, user):
    canary = f"sk-canary-{uuid.uuid4().hex}"
    python = sys.executable if user == "root" else shutil.which("python3", path="/usr/bin:/bin")  # a harness run by a user without root
    if user == "nobody" and (python is None or shutil.which("setpriv") is None or os.geteuid() != 0):
        pytest.skip("needs root, setpriv and a system /usr/bin/python3 to run a harness as user nobody")
    harness = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from memrl_bench.envs.sandbox import CodeRunner, Limits
print(CodeRunner(Limits(timeout_s=30), isolation={isolation!r}).run({PEEK!r}.replace("CANARY", {repr(repr(canary))})).output)
"""
    command = (
        [python, "-c", harness]
        if user == "root"
        else ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", harness]
    )
    out = subprocess.run(command, capture_output=True, text=True, cwd="/", timeout=120, env={**os.environ, "OPENAI_API_KEY": canary})
    assert out.returncode == 0, out.stderr
    assert "ran as" in out.stdout and "found []" in out.stdout, out.stdout


@pytest.fixture
def a_fresh_venv():
    """A venv's python and its site-packages, which a test may write (this interpreter's are not the test's to touch)."""
    folder = Path(tempfile.mkdtemp(prefix="memrl-venv-test-"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True, timeout=120)
    python = str(folder / "venv" / "bin" / "python")
    packages = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True)
    yield python, Path(packages.stdout.strip())
    shutil.rmtree(folder)


def output_under_a_harness_of(python: str, isolation: str, program: str, launcher: str | None = None) -> str:
    """The output of `program` run by a CodeRunner of a harness on `python` (this interpreter's packages on its path)."""
    harness = f"""
import sys
sys.path[:0] = {[str(REPO), *(p for p in sys.path if p.endswith("-packages"))]!r}
from memrl_bench.envs.sandbox import CodeRunner, Limits
output = CodeRunner(Limits(timeout_s=30), isolation={isolation!r}).run({program!r}, launcher={launcher!r}).output
print("<<" + output + ">>")
"""
    out = subprocess.run([python, "-c", harness], capture_output=True, text=True, cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.partition("<<")[2].rpartition(">>")[0]


@pytest.mark.parametrize("isolation", [pytest.param("sandbox", marks=needs_sandbox), "process"])
def test_a_launcher_longer_than_one_argument_may_be_runs(isolation):
    """A launcher travelled as one argument of `python -c`, which Linux caps at 128 KiB (MAX_ARG_STRLEN): the BigCodeBench
    runner, its comments taken out to fit, had grown to 117 KB of it. It travels as a file of its own now."""
    launcher = ("#" + "x" * 99 + "\n") * 2000 + "import sys; print('launcher ran with', sys.stdin.readline().split()[1])\n"
    result = CodeRunner(Limits(timeout_s=30), isolation=isolation).run("", launcher=launcher, secret="the-secret")
    assert "launcher ran with the-secret" in result.output, result.output


@pytest.mark.parametrize("isolation", [pytest.param("sandbox", marks=needs_sandbox), "process"])
def test_no_start_up_file_of_the_interpreter_runs_before_a_launcher(a_fresh_venv, isolation):
    """43a: a process-mode program wrote a .pth into the interpreter's site-packages (by a child python, which the
    runner's hook does not watch); every later runner, in both isolations, ran it before its own first line and signed
    every wrong answer as passed. A launcher starts with -S now and is handed the packages' folders."""
    python, packages = a_fresh_venv
    (packages / "planted.pth").write_text("import os; os.write(1, b'PTH RAN\\n')\n")
    (packages / "sitecustomize.py").write_text("import os; os.write(1, b'SITECUSTOMIZE RAN\\n')\n")
    assert b"PTH RAN" in subprocess.run([python, "-c", ""], capture_output=True).stdout  # what a plain start runs
    launcher = (
        "import sys, sysconfig; print('launcher', sys.flags.no_site, [p for p in sys.path if p.endswith('-packages')], "
        "sysconfig.get_paths()['purelib']); exit()"
    )
    output = output_under_a_harness_of(python, isolation, "x = 1", launcher)
    assert "PTH RAN" not in output and "SITECUSTOMIZE RAN" not in output, output
    # its packages, where sysconfig says a venv's are (the runner's libraries' folders: the venv's prefix, as site sets
    # it, or every package's module passed for no library's); site's exit()
    assert f"launcher 1 [{str(packages)!r}] {packages}" in output and "Error" not in output, output


@needs_sandbox
@needs_sandbox
def test_thousands_of_hidden_folders_start_a_sandbox_that_hides_them_all():
    """48b: the hidden paths went to the sandbox's setup as arguments: a few thousand results folders (runs that shared a
    cache list theirs) passed the kernel's 128 KiB for one argument, and no sandbox started (a traceback blaming root and
    namespaces), every LLB-OS run with that cache stopped. They go through a file now."""
    base = Path(tempfile.mkdtemp(prefix="memrl-results-test-", dir="/var/lib"))
    try:
        folders = [base / f"run-{n:05d}-{'x' * 60}" for n in range(3000)]  # 3,000 x ~100 bytes: past 128 KiB
        for folder in folders:
            folder.mkdir()
        (folders[-1] / "episodes.jsonl").write_text("another run's answers\n")
        with Sandbox(Limits(timeout_s=20), hidden_paths=(*DEFAULT_HIDDEN_PATHS, *map(str, folders))) as sandbox:
            shown = sandbox.run(f"ls {base} | wc -l; ls -A {folders[0]} {folders[-1]}").output
    finally:
        shutil.rmtree(base)
    assert shown.split() == ["3000", f"{folders[0]}:", f"{folders[-1]}:"], shown  # each there, each empty


def test_a_results_folder_outside_the_default_hidden_ones_is_hidden_once_a_run_names_it(monkeypatch, tmp_path):
    """43b: a results_dir or cache outside the default hidden folders (here under /var/lib) was readable inside the sandbox,
    other runs' logs and transcripts with it; 44b: after that fix, another run's results folder (listed by the runs that
    share a cache) still was, and a workdir inside the run's own results folder made every episode an env error."""
    from memrl_bench.envs.llb_os import LLBOSEnv
    from memrl_bench.envs.sandbox import settings
    from memrl_bench.runner.loop import hide_what_the_run_writes

    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    first, second = (Path(tempfile.mkdtemp(prefix="memrl-results-test-", dir="/var/lib")) for _ in range(2))
    try:
        (first / "episodes.jsonl").write_text("another run's answers\n")
        with Sandbox(Limits(timeout_s=10)) as sandbox:
            assert "another run's answers" in sandbox.run(f"cat {first}/episodes.jsonl").output  # the route is real
        for results in (first, second):  # two runs, each in a process of its own
            monkeypatch.setattr(settings, "_HIDDEN_FOR_THIS_PROCESS", {})
            hide_what_the_run_writes({"results_dir": str(results), "llm": {"cache_path": str(results / "c" / "llm.sqlite")}}, results)
        assert {str(first), str(second)} <= set(settings.hidden_for_this_process())
        with Sandbox(Limits(timeout_s=10)) as sandbox:
            shown = sandbox.run(f"ls -A {first} {second}; cat {first}/episodes.jsonl").output
        assert "another run's answers" not in shown and "No such file" in shown, shown
        (second / "wd").mkdir()
        with pytest.raises(ConfigError, match="env.workdir: .* lies inside the hidden folder"):
            LLBOSEnv({"workdir": str(second / "wd"), "exclude_gold_failures": False})
    finally:
        shutil.rmtree(first)
        shutil.rmtree(second)
    with pytest.raises(ConfigError, match="hidden path '/usr' would hide /usr/bin"):
        hide_what_the_run_writes({"results_dir": "/usr"}, first)


def test_a_run_folder_outside_its_results_folder_is_hidden_and_listed_for_later_runs(monkeypatch, tmp_path):
    """57b: `hydra.run.dir` outside results_dir: the run's own episodes and transcripts (a sweep's, its other jobs' too)
    were readable by the run's sandboxes."""
    from memrl_bench.envs.sandbox import settings
    from memrl_bench.runner.loop import RESULTS_DIRS, hide_what_the_run_writes

    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    base = Path(tempfile.mkdtemp(prefix="memrl-results-test-", dir="/var/lib"))
    try:
        results, run = base / "results", base / "elsewhere" / "0"
        results.mkdir()
        run.mkdir(parents=True)
        monkeypatch.setattr(settings, "_HIDDEN_FOR_THIS_PROCESS", {})
        hide_what_the_run_writes({"results_dir": str(results)}, run)
        assert {str(results), str(run)} <= set(settings.hidden_for_this_process())
        assert (tmp_path / "cache" / RESULTS_DIRS).read_text().splitlines() == [str(results), str(run)]
        monkeypatch.setattr(settings, "_HIDDEN_FOR_THIS_PROCESS", {})
        hide_what_the_run_writes({"results_dir": str(results)}, results / "x" / "run")  # inside: the results folder's line only
        assert (
            settings.hidden_for_this_process()[0] == str(results) and str(results / "x" / "run") not in settings.hidden_for_this_process()
        )
    finally:
        shutil.rmtree(base)


def test_the_list_of_results_folders_takes_any_name_and_writes_through_no_link(monkeypatch, tmp_path, capsys):
    """45b: a results folder whose name is not UTF-8 (outside the default hidden folders) ended the run in a traceback; the
    list, a link to a user's file, had the run's line appended to that file."""
    from memrl_bench.envs.sandbox import settings
    from memrl_bench.runner.loop import RESULTS_DIRS, hide_what_the_run_writes

    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    base = Path(tempfile.mkdtemp(prefix="memrl-results-test-", dir="/var/lib"))
    try:
        results = os.fsdecode(bytes(base) + b"/run-\xff")
        os.mkdir(results)
        monkeypatch.setattr(settings, "_HIDDEN_FOR_THIS_PROCESS", {})
        hide_what_the_run_writes({"results_dir": results}, Path(results))
        listed = tmp_path / "cache" / RESULTS_DIRS
        assert listed.read_bytes() == bytes(base) + b"/run-\xff\n"
        hide_what_the_run_writes({"results_dir": results}, Path(results))  # read back, not listed twice
        assert listed.read_bytes() == bytes(base) + b"/run-\xff\n"
        users = tmp_path / "users_file"
        users.write_text("mine\n")
        listed.unlink()
        listed.symlink_to(users)
        monkeypatch.setattr(settings, "_HIDDEN_FOR_THIS_PROCESS", {})
        hide_what_the_run_writes({"results_dir": str(base)}, base)
        assert users.read_text() == "mine\n" and listed.is_symlink()
        assert "results_dirs.txt: a symbolic link, which no run writes" in capsys.readouterr().err
    finally:
        shutil.rmtree(base)


def test_a_hidden_path_holding_the_libraries_the_sandbox_loads_is_refused():
    """47b: hiding /usr/lib/x86_64-linux-gnu (libc, the loader) was accepted, from env.extra_hidden_paths or a line of
    results_dirs.txt, and every sandbox failed to start with a traceback blaming root and namespaces."""
    from memrl_bench.envs.sandbox.settings import _library_folders

    folders = _library_folders()
    assert folders, "no system folder of a loaded shared library found in /proc/self/maps"
    for folder in folders:
        with pytest.raises(SandboxSettingError, match=f"would hide {folder}, which the sandbox runs from"):
            Sandbox(hidden_paths=(*DEFAULT_HIDDEN_PATHS, folder))
    Sandbox(hidden_paths=(*DEFAULT_HIDDEN_PATHS, "/usr/share"))  # a system folder it does not load from: accepted


def test_hidden_root_is_refused_by_the_sandbox():
    for hidden, refusal in [
        ("/", "the whole filesystem"),
        ("//", "the whole filesystem"),
        ("/usr/..", "the whole filesystem"),
        ("/usr", "would hide /usr/bin"),
        ("/etc", "would hide /etc"),
        ("/lib", "would hide /(usr/)?lib"),
        ("tmp", "not an absolute path"),
    ]:
        with pytest.raises(SandboxSettingError, match=refusal):
            Sandbox(hidden_paths=(*DEFAULT_HIDDEN_PATHS, hidden))
    with pytest.raises(SandboxSettingError, match="not an absolute path"):
        Sandbox(workdir="root")
    with pytest.raises(SandboxSettingError, match="lies inside the hidden folder /root"):
        Sandbox(workdir=str(next(p for p in Path("/root").iterdir() if p.is_dir()))) if any(
            p.is_dir() for p in Path("/root").iterdir()
        ) else Sandbox(workdir="/root/x")
