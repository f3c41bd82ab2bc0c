"""The LLB OS env on small hand-written tasks (and a few real ones when the shared data is there)."""

from __future__ import annotations

import base64
import json
import os
import shlex
import struct
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from memrl_bench.core.schema import Task
from memrl_bench.envs.base import DataMissingError, hash_fraction
from memrl_bench.envs.checker import check_env
from memrl_bench.envs.gold import gold_failure
from memrl_bench.envs.llb_os import LLBOSEnv, parse_action
from memrl_bench.envs.sandbox import DEFAULT_HIDDEN_PATHS, Limits, Sandbox, unavailable_reason

REASON = unavailable_reason()
needs_sandbox = pytest.mark.skipif(REASON is not None, reason=f"sandbox unavailable here: {REASON}")
SHARED = Path(os.environ.get("MEMRL_BENCH_LLB_DIR") or Path(__file__).resolve().parents[3] / "shared" / "data" / "llb")
USER = f"u{uuid.uuid4().hex[:10]}"  # a user name the host surely lacks


def entry(instruction: str, init: str, gold: str, evaluation: str) -> dict:
    return {
        "instruction": instruction,
        "initialization_command_item": {"command_name": "bash", "script": init},
        "evaluation_info": {
            "evaluation_command_item": {"command_name": "bash", "script": evaluation},
            "ground_truth_command_item": {"command_name": "bash", "script": gold},
        },
        "skill_list": ["chmod"],
        "raw_entry_hash": 0,
    }


TASKS = {
    "1": entry(
        "Make /data/a.txt readable only by its owner.",
        "mkdir -p /data && echo hello > /data/a.txt && chmod 644 /data/a.txt",
        "chmod 600 /data/a.txt",
        "[ $(stat -c %a /data/a.txt) = 600 ]",
    ),
    "2": entry(
        f"Create user {USER} with a home folder holding docs/.",
        "",
        f"useradd -m {USER} && mkdir /home/{USER}/docs && chown {USER} /home/{USER}/docs",
        f"id {USER} && [ -d /home/{USER}/docs ] && [ $(stat -c %U /home/{USER}/docs) = {USER} ]",
    ),
    "3": entry("A task whose check can never pass.", "", "true", "exit 1"),
    "4": entry("Count the lines of /etc/hostname into /root/n.txt.", "", "wc -l < /etc/hostname > /root/n.txt", "[ -s /root/n.txt ]"),
    "5": entry(
        "Write 'done' into /tmp/flag after 1 second, in the background.", "", "(sleep 1; echo done > /tmp/flag) &", "grep -q done /tmp/flag"
    ),
}
VALIDATION_IDS = [str(k) for k in range(10, 40)]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "llb"
    folder.mkdir()
    (folder / "os_interaction_train.json").write_text(json.dumps(TASKS))
    validation = {k: entry(f"Make /v{k} exist.", "", f"touch /v{k}", f"[ -e /v{k} ]") for k in VALIDATION_IDS}
    (folder / "os_interaction_val.json").write_text(json.dumps(validation))
    return folder


@pytest.fixture
def env(data: Path, tmp_path: Path, monkeypatch) -> LLBOSEnv:
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    made = LLBOSEnv({"data_dir": str(data), "tasks_per_split": 3})
    yield made
    made.close()


def test_parse_action():
    assert parse_action("ls -la") == ("ls -la", False, None)
    assert parse_action("```bash\nmkdir /x\ncd /x\n```") == ("mkdir /x\ncd /x", False, None)
    assert parse_action(" Finish ") == ("", True, None)
    assert parse_action("commit") == ("", True, None)
    assert parse_action("answer: 42 files") == ("", True, "42 files")


def test_splits_follow_the_files_and_the_hash(data: Path):
    env = LLBOSEnv({"data_dir": str(data), "exclude_gold_failures": False})
    train = [t.id for t in env.tasks("train")]
    validation = [t.id for t in env.tasks("validation")]
    test = [t.id for t in env.tasks("test")]
    assert train == [f"llb_os/{k}" for k in ["1", "2", "3", "4", "5"]]
    assert set(validation) | set(test) == {f"llb_os/{k}" for k in VALIDATION_IDS}
    assert not set(validation) & set(test) and validation and test
    assert all(hash_fraction(t) < 0.5 for t in validation) and all(hash_fraction(t) >= 0.5 for t in test)
    assert set(env.splits()) == {"train", "validation", "test"}


@needs_sandbox
def test_gold_passes_and_noop_fails(env: LLBOSEnv):
    for task in env.tasks("train"):
        assert gold_failure(env, task) == "", task.id
        env.reset(task)
        _, reward, done, info = env.step("finish")
        assert done and not info["success"] and reward == 0.0, task.id


@needs_sandbox
def test_broken_task_is_excluded_with_its_reason(env: LLBOSEnv):
    listed = [t.id for t in env.tasks("train")]
    assert listed == ["llb_os/1", "llb_os/2", "llb_os/4"]  # the first 3 whose gold passes
    reasons = env.excluded()
    assert list(reasons) == ["llb_os/3"] and "evaluation script" in reasons["llb_os/3"]


@needs_sandbox
def test_episode_changes_stay_in_the_sandbox(env: LLBOSEnv):
    task = next(t for t in env.tasks("train") if t.id == "llb_os/2")
    observation, info = env.reset(task)
    assert info["multiline_actions"] and "root" in observation
    created = env.step(f"useradd -m {USER}\nid -u {USER}")[0]
    assert "(exit code 0)" in created
    assert env.step("look")[2] is False  # an unknown command is just a failing command
    _, reward, done, info = env.step("answer: created")
    assert done and info["success"] is False and reward == 0.0 and info["answer"] == "created"  # docs/ was never made
    assert subprocess.run(["id", USER], capture_output=True).returncode != 0


@needs_sandbox
def test_background_work_finishes_before_the_next_action(env: LLBOSEnv):
    task = next(t for t in env._all["train"] if t.id == "llb_os/5")
    env.reset(task)
    observation, _, done, _ = env.step(task.data["gold"][0])
    assert not done and "exit code 0" in observation
    assert env.step("finish")[3]["success"]


@needs_sandbox
def test_check_env(env: LLBOSEnv):
    check_env(env)


def test_missing_data_names_path_and_fetch_command(tmp_path: Path):
    with pytest.raises(DataMissingError, match="fetch_data.py llb") as missing_folder:
        LLBOSEnv({"data_dir": str(tmp_path / "nowhere")})
    assert str(tmp_path / "nowhere") in str(missing_folder.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataMissingError, match="os_interaction_train.json is missing"):
        LLBOSEnv({"data_dir": str(tmp_path / "empty")})


@needs_sandbox
@pytest.mark.skipif(not SHARED.exists(), reason=f"shared LLB data not at {SHARED}")
def test_real_tasks_gold_passes(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path))
    env = LLBOSEnv({"data_dir": str(SHARED), "tasks_per_split": 1})
    tasks = env.tasks("train") + env.tasks("test")
    assert len(tasks) == 2
    for task in tasks:
        assert gold_failure(env, task) == ""
        env.reset(task)
        assert env.step("finish")[3]["success"] is False


# ---- checks the episode cannot forge ---------------------------------------------------------


def play(env: LLBOSEnv, task: Task, *actions: str) -> dict:
    """The info of `finish` after `actions`."""
    env.reset(task)
    for action in actions:
        env.step(action)
    _, reward, done, info = env.step("finish")
    assert done and reward == float(info["success"])
    return info


def own_task(evaluation: str) -> Task:
    return Task(
        id="llb_os/own",
        split="train",
        description="",
        data={"initialization": "", "evaluation": evaluation, "gold": ["true", "finish"], "skills": []},
    )


@needs_sandbox
def test_llb_os_check_runs_with_host_tools_after_bash_is_replaced(env: LLBOSEnv):
    task = next(t for t in env._all["train"] if t.id == "llb_os/1")  # check: [ $(stat -c %a /data/a.txt) = 600 ]; the file is 644
    info = play(env, task, "rm -f /usr/bin/bash && cp /usr/bin/true /usr/bin/bash")  # every bash started now exits 0
    assert info["success"] is False and info["status"] == "tampered" and info["tampering"] == ["changed_system_file"], info
    assert "exit 1" in info["detail"] and "/usr/bin/bash" in info["detail"]  # the host's bash ran the check, and it failed
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        sandbox.run(
            "rm -f /usr/bin/bash; cp /usr/bin/true /usr/bin/bash; printf '#!/bin/sh\\necho made by the episode\\n' > /usr/bin/user_check; "
            "chmod +x /usr/bin/user_check; echo /nonexistent.so > /etc/ld.so.preload"
        )
        episode = sandbox.run('echo "bash $BASH_VERSION"')
        check = sandbox.check('echo "bash $BASH_VERSION"; /usr/bin/user_check; wc -c < /etc/ld.so.preload')
    assert episode.ok and "bash" not in episode.output  # the episode's bash is `true` (the preload only warns)
    assert check.result.ok and check.result.output.splitlines() == [f"bash {bash_version()}", "made by the episode", "0"], (
        check.result.output
    )
    assert check.trusted_view == "overlay" and set(check.system_changes) == {"changed_system_file", "changed_loader_config"}


@needs_sandbox
def test_processes_the_episode_left_running_are_frozen_while_the_check_runs():
    """A process the episode left running cannot act during the check (the independent rounds of 2026-12-04: one stopped
    the check's $(...) child and wrote the expected answer into its pipe through /proc/<pid>/fd/1; stopped with SIGSTOP,
    one woke itself with timers sending it SIGCONT): it is frozen, SIGCONT wakes it not, the check still finds it (two
    LLB-OS checks pgrep a process the task started), and it runs again after."""
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        sandbox.run(
            "(while :; do echo x >> /tmp/ticks; sleep 0.01; done) >/dev/null 2>&1 < /dev/null & echo $! > /tmp/pids; "
            "setsid sleep 1000 >/dev/null 2>&1 < /dev/null & echo $! >> /tmp/pids; sleep 0.2"
        )
        check = sandbox.check(
            "a=$(wc -l < /tmp/ticks); kill -CONT $(cat /tmp/pids) $(pgrep -x sleep); sleep 0.3; b=$(wc -l < /tmp/ticks); echo $a $b; "
            "pgrep -x sleep >/dev/null"
        )
        after = sandbox.run("a=$(wc -l < /tmp/ticks); sleep 0.3; b=$(wc -l < /tmp/ticks); echo $a $b")
    during = check.result.output.split()
    assert check.result.ok and len(during) == 2 and during[0] == during[1] != "0", check.result.output  # no tick while frozen
    ticks = after.output.split()
    assert int(ticks[1]) > int(ticks[0]), after.output  # running again


@needs_sandbox
def test_the_check_looks_users_up_with_the_hosts_nsswitch_conf():
    """The fifth independent round: nsswitch.conf naming a library the episode built (`passwd: /../x files` loads
    libnss_/../x.so.2) ran its code as root in the check at the first user lookup (`stat -c %U`): a forged pass on a real
    task. The check reads the host's nsswitch.conf, and the change is flagged."""
    host = Path("/etc/nsswitch.conf").read_text()
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        sandbox.run("printf 'passwd: /../x files\\ngroup: /../x files\\n' > /etc/nsswitch.conf")
        check = sandbox.check("cat /etc/nsswitch.conf")
    assert check.result.ok and check.result.output == host, check.result.output
    assert check.system_changes.get("changed_loader_config") == ["/etc/nsswitch.conf"], check.system_changes


@needs_sandbox
def test_the_check_tells_the_time_in_the_hosts_zone():
    """The sixth independent round: /etc/localtime replaced by a zone file weeks off moved the check's `date`, and a file
    holding the wrong date passed a check comparing with today."""
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        sandbox.run("rm -f /etc/localtime && cp /usr/share/zoneinfo/Pacific/Kiritimati /etc/localtime")
        check = sandbox.check("date +%z")
    assert check.result.ok and check.result.output.strip() == time.strftime("%z"), check.result.output


@needs_sandbox
def test_the_episode_cannot_change_dev_which_the_check_uses():
    """The ninth independent round: /dev/fd replaced by a folder of the episode's files made every `<(...)` of a check read
    them (real tasks 46 and 205 passed undone). /dev is read only; its devices and /dev/shm stay usable."""
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        changed = sandbox.run("rm -f /dev/fd; mkdir -p /dev/fd; touch /dev/forged; ln -sf /tmp /dev/stdin")
        usable = sandbox.run("echo x > /dev/null && head -c 4 /dev/zero | wc -c && touch /dev/shm/ok && ls /dev/shm")
        check = sandbox.check("cat <(echo from-the-check); readlink /dev/fd; ls /dev/forged 2>&1 | wc -l")
    assert "Read-only file system" in changed.output, changed.output
    assert usable.ok and usable.output.split() == ["4", "ok"], usable.output
    assert check.result.ok and check.result.output.split()[:2] == ["from-the-check", "/proc/self/fd"], check.result.output


@needs_sandbox
def test_what_the_episode_left_running_is_stopped_before_the_system_files_are_listed(monkeypatch):
    """The thirty-sixth round: the system files were listed before the episode's processes were frozen, so a process it
    left running saw the list read /run/userdb (its atime), put a forged /etc/group in place for the check and the honest
    one back after the thaw, before the second list reached it (14 of 20 real tasks, none flagged). Both lists and the
    check now run with it frozen: a process appending to a file all the while adds nothing during either list."""
    from memrl_bench.envs.sandbox import container

    grew = []
    listing = container.system_changes

    def watched(upper, hidden):
        ticks = Path(upper) / "root" / "ticks"
        before = ticks.stat().st_size
        time.sleep(0.3)
        grew.append(ticks.stat().st_size > before)
        return listing(upper, hidden)

    monkeypatch.setattr(container, "system_changes", watched)
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        sandbox.run("(while :; do echo x >> /root/ticks; sleep 0.01; done) </dev/null >/dev/null 2>&1 & sleep 0.2")
        check = sandbox.check("true")
        after = sandbox.run("a=$(wc -c < /root/ticks); sleep 0.3; echo $a $(wc -c < /root/ticks)").output.split()
    assert check.result.ok and grew == [False, False], grew
    assert int(after[1]) > int(after[0])  # it runs again after the check


@needs_sandbox
def test_another_name_for_root_in_the_user_database_is_flagged():
    """The ninth independent round: `appuser:x:0:0` put first in /etc/passwd made the check's `stat -c %U` name root's files
    appuser (real task 449 passed with no user made)."""
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        sandbox.run("touch /tmp/f && sed -i '1i appuser:x:0:0::/root:/bin/bash' /etc/passwd")
        check = sandbox.check("stat -c %U /tmp/f")
    assert check.result.output.strip() == "appuser" and check.system_changes.get("renamed_superuser") == ["/etc/passwd"], check
    for forged in (  # the tenth round: uid 00, and /etc/passwd a link to an edited copy
        "sed -i '1i appuser:x:00:0::/root:/bin/bash' /etc/passwd",
        "cp /etc/passwd /etc/pw2 && sed -i '1i appuser:x:0:0::/root:/bin/bash' /etc/pw2 && ln -sf pw2 /etc/passwd",
    ):
        with Sandbox(Limits(timeout_s=20)) as sandbox:
            sandbox.run(f"touch /tmp/f && {forged}")
            check = sandbox.check("stat -c %U /tmp/f")
        assert check.result.output.strip() == "appuser" and check.system_changes.get("renamed_superuser") == ["/etc/passwd"], check
    for folder in ("/etc/userdb", "/usr/local/lib/userdb"):  # the 27th round: systemd's JSON user records (nsswitch: systemd)
        record = '{"userName": "webadmin", "uid": 0, "gid": 0, "homeDirectory": "/root", "shell": "/bin/bash"}'
        with Sandbox(Limits(timeout_s=20)) as sandbox:
            sandbox.run(f"mkdir -p {folder} && echo '{record}' > {folder}/webadmin.user && touch /tmp/f")
            check = sandbox.check("stat -c %U /tmp/f")
        assert check.system_changes.get("renamed_superuser") == [f"{folder}/webadmin.user"], check
    for forged, name in (  # the 31st round: a non-zero id given a second name, root given another id (tasks 312, 437, 46)
        ('groupadd old && chgrp old /tmp/f && sed -i "1i new:x:$(getent group old | cut -d: -f3):" /etc/group', "new"),
        ("chown 65534 /tmp/f && sed -i '1i root:x:65534:65534::/root:/bin/bash' /etc/passwd", "root"),
        # the 32nd round: a \r that Python's text mode splits at (the C library does not), and an id strtoul wraps
        ('groupadd old && chgrp old /tmp/f && sed -i "1i new:x\\r:$(getent group old | cut -d: -f3):" /etc/group', "new"),
        ("sed -i '1i appuser:x\\r:0:0::/root:/bin/bash' /etc/passwd", "appuser"),
        ("groupadd -g 1001 old && chgrp old /tmp/f && sed -i '1i new:x:-18446744073709550615:' /etc/group", "new"),
        # the thirtieth round: an entry ending at a NUL (the C library reads lines as C strings), and /etc a link to an edited copy
        ("groupadd -g 1001 old && chgrp old /tmp/f && sed -i '1i new:x:1001\\x00:' /etc/group", "new"),
        ("cp -a /etc /etc2 && sed -i '1i appuser:x:0:0::/root:/bin/bash' /etc2/passwd && mv /etc /etc.old && ln -s /etc2 /etc", "appuser"),
        ("cp -a /etc /etc2 && sed -i '1i appuser:x:0:0::/root:/bin/bash' /etc2/passwd && mv /etc /etc.old && ln -s etc2 /etc", "appuser"),
        # the 33rd round: the old group's line taken out of /etc/group, systemd's records give its gid the wanted name
        (
            "groupadd old && chgrp old /tmp/f && g=$(getent group old | cut -d: -f3) && sed -i '/^old:/d' /etc/group && mkdir -p "
            '/etc/userdb && for r in new $g; do echo "{\\"groupName\\": \\"new\\", \\"gid\\": $g}" > /etc/userdb/$r.group; done',
            "new",
        ),
        # the 36th round: /etc/group a link into /proc, which the check reads as itself (its cwd: /root) and the scan as the host
        (
            'groupadd old && chgrp old /tmp/f && { echo "new:x:$(getent group old | cut -d: -f3):"; cat /etc/group; } > /root/.g && '
            "ln -fs /proc/self/cwd/.g /etc/group",
            "new",
        ),
    ):
        with Sandbox(Limits(timeout_s=20)) as sandbox:
            sandbox.run(f"touch /tmp/f && {forged}")
            check = sandbox.check("stat -c %U:%G /tmp/f")
        assert name in check.result.output and {"renamed_user", "renamed_superuser"} & set(check.system_changes), (forged, check)
        assert ("ln -s" in forged) == (check.system_changes.get("replaced_system_folder") == ["/etc"]), (forged, check)
    # 43b: systemd's membership record, which /etc/group does not hold: `id -nG` lists the group (3 of 3 tasks solved so)
    membership = '{"userName": "user1", "groupName": "devteam"}'
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        sandbox.run(
            f"useradd -m user1 && groupadd devteam && mkdir -p /etc/userdb && echo '{membership}' > /etc/userdb/user1:devteam.membership"
        )
        check = sandbox.check("id -nG user1")
    assert "devteam" in check.result.output, check  # the record is read: the route is real here
    assert check.system_changes.get("renamed_user") == ["/etc/userdb/user1:devteam.membership"], check
    for made in (  # users and groups made and changed as tasks do it are no change of the kind; nor entries the C library skips
        "useradd -m appuser && groupadd team && usermod -u 1500 -aG team appuser && touch /tmp/f && chown appuser /tmp/f",
        "useradd -m appuser && touch /tmp/f && chown appuser /tmp/f && sed -i 's/:/:bin\\/zsh:/' /etc/passwd",  # task 390's gold
    ):
        with Sandbox(Limits(timeout_s=20)) as sandbox:
            sandbox.run(made)
            check = sandbox.check("stat -c %u /tmp/f")
        assert check.result.ok and not {"renamed_superuser", "renamed_user"} & set(check.system_changes), (made, check)


def test_a_user_database_that_is_no_regular_file_or_too_long_or_a_deep_folder_is_flagged_not_a_hang_or_an_error():
    """The thirty-first round: a FIFO at /etc/passwd (or a userdb record) blocked the scan's open, and the harness, for ever;
    a folder nested 1,400 deep under /usr ended the scan in RecursionError, so the episode was an env error and the bash it
    had replaced went unflagged."""
    import threading

    cases = [
        ("rm -f /etc/passwd && mkfifo /etc/passwd", "renamed_user"),
        ("rm -f /etc/group && mkfifo /etc/group", "renamed_user"),
        ("mkdir -p /etc/userdb && mkfifo /etc/userdb/x.user", "renamed_superuser"),
        # the thirty-second round: gid 1 named again first, then 64 MiB of blank lines (the scan read 64 MiB), then the file
        (
            "{ echo 'daemon2:x:1:'; head -c 67108865 /dev/zero | tr '\\0' '\\n'; cat /etc/group; } > /g && cat /g > /etc/group",
            "renamed_user",
        ),
        (
            "mkdir -p /usr/local/deep/" + "/".join(["d"] * 1400) + " && rm -f /usr/bin/bash && cp /usr/bin/true /usr/bin/bash",
            "changed_system_file",
        ),
    ]
    for forged, pattern in cases:
        with Sandbox(Limits(timeout_s=20)) as sandbox:
            sandbox.run(forged)
            checks: list = []
            looking = threading.Thread(target=lambda found=checks, box=sandbox: found.append(box.check("true")), daemon=True)
            looking.start()
            looking.join(60)  # a hang fails here, not the whole suite (the thread is a daemon)
            assert checks, f"the check hung: {forged[:60]}"
        assert pattern in checks[0].system_changes, (forged[:60], checks[0])


def _message_catalog(translations: dict[bytes, bytes]) -> bytes:
    """A gettext .mo file (GNU's layout: a header, two tables of length and offset, the strings; msgids sorted)."""
    ids = sorted({b"": b"Content-Type: text/plain; charset=UTF-8\n", **translations}.items())
    tables, strings, offset = [], b"", 28 + 16 * len(ids)
    for text in [msgid for msgid, _ in ids] + [msgstr for _, msgstr in ids]:
        tables.append(struct.pack("<2I", len(text), offset + len(strings)))
        strings += text + b"\0"
    return struct.pack("<7I", 0x950412DE, 0, len(ids), 28, 28 + 8 * len(ids), 0, 0) + b"".join(tables) + strings


@needs_sandbox
def test_the_check_prints_no_message_translated_by_the_episode():
    """The eleventh independent round: a catalog for `chage` under /usr/share/locale/C.UTF-8 made the check's host `chage
    -l` print the password ageing the task asked for, with /etc/shadow untouched (real tasks 457 and 356 passed undone)."""
    label = b"Maximum number of days between password change\t\t: %ld\n"
    catalog = base64.b64encode(_message_catalog({label: label.replace(b"%ld", b"4242")})).decode()
    folder = "/usr/share/locale/C.UTF-8/LC_MESSAGES"
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        made = sandbox.run(f"mkdir -p {folder} && echo {catalog} | base64 -d > {folder}/shadow.mo && chage -l root | grep Maximum")
        check = sandbox.check("chage -l root | grep Maximum")
    assert made.ok and "4242" in made.output, made.output  # the catalog works in the episode's own locale
    assert check.result.ok and "4242" not in check.result.output and "Maximum number of days" in check.result.output, check


@needs_sandbox
def test_the_check_reads_no_locale_the_episode_named():
    """The twentieth independent round: a line added to /etc/locale.alias (the host has no locale archive) named a locale the
    episode built with the host's localedef; the check's C.UTF-8 was that locale, its month names moved `chage -l`'s dates
    and its collation turned the check's own `sort` around (real tasks 356, 166 and 359 passed undone). The check's locale
    is the C library's built-in C."""
    build = (
        'sed \'s/"Jan";/"Xyz";/\' /usr/share/i18n/locales/C > /root/t.src && localedef -c -i /root/t.src -f UTF-8 /root/t; '
        "sed -i '1i C.UTF-8 ../../../root/t' /etc/locale.alias && LANG=C.UTF-8 date -d 2024-01-31 +%b"
    )
    with Sandbox(Limits(timeout_s=60)) as sandbox:
        made = sandbox.run(build)
        check = sandbox.check("date -d 2024-01-31 +%b; locale | grep LC_TIME")
    assert made.ok and made.output.strip().endswith("Xyz"), made.output  # the locale works for what the episode runs
    assert check.result.ok and check.result.output.split()[0] == "Jan" and 'LC_TIME="C"' in check.result.output, check


@needs_sandbox
def test_a_process_that_keeps_changing_its_pid_is_frozen_too():
    """The fourth independent round: a daemon that forks and exits on every pass outran a freezer that moved processes
    into it one pid at a time. Every command of the episode starts in the freezer, so all it forks is there already."""
    hopper = (
        "import os, time\nwhile True:\n    if os.fork():\n        os._exit(0)\n    open('/tmp/ticks', 'a').write('x\\n')\n"
        "    time.sleep(0.002)\n"
    )
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        sandbox.run(f"printf %s {shlex.quote(hopper)} > /tmp/hop.py; python3 /tmp/hop.py >/dev/null 2>&1 < /dev/null & sleep 0.2")
        check = sandbox.check("a=$(wc -l < /tmp/ticks); sleep 0.3; b=$(wc -l < /tmp/ticks); echo $a $b")
    during = check.result.output.split()
    assert check.result.ok and len(during) == 2 and during[0] == during[1] != "0", check.result.output


@needs_sandbox
def test_check_python_starts_no_user_site_and_no_module_of_the_working_folder():
    # Each writes Python code that exits 0 at start-up; the check's one-liner must still run and exit 1.
    setups = {
        "usercustomize": (
            "d=$(python3 -c 'import site;print(site.getusersitepackages())'); mkdir -p $d; printf 'import os\\nos._exit(0)\\n' > "
            "$d/usercustomize.py"
        ),
        "pth": (
            "d=$(python3 -c 'import site;print(site.getusersitepackages())'); mkdir -p $d; printf 'import os; os._exit(0)\\n' > $d/zz.pth"
        ),
        "json.py in the working folder": "printf 'import os\\nos._exit(0)\\n' > json.py",
    }
    for name, setup in setups.items():
        with Sandbox(Limits(timeout_s=20)) as sandbox:
            assert sandbox.run(setup).ok
            check = sandbox.check("python3 -c 'import json, sys; sys.exit(1)'")
        assert check.result.exit_code == 1, (name, check.result.output)
        hooks = check.system_changes.get("python_startup_hook", [])
        assert ("json" in name) == (hooks == []), (name, check.system_changes)  # a user site's start-up file is flagged too
        assert all(hook.startswith("/root/.local/lib/python3") for hook in hooks), hooks


@needs_sandbox
def test_what_the_episode_writes_inside_a_hidden_system_folder_is_scanned():
    """51b: the scan skipped a hidden path and all below it: with /usr/local hidden, a start-up file or a command written
    there was not flagged. What lies in a hidden folder is the episode's own (the host's files there are not seen)."""
    writes = (
        "mkdir -p /usr/local/lib/python3/dist-packages /usr/local/bin /usr/local/share/x && echo 'import os' > "
        "/usr/local/lib/python3/dist-packages/memrl.pth && printf '#!/bin/sh\\necho 600\\n' > /usr/local/bin/stat && "
        "chmod +x /usr/local/bin/stat && echo x > /usr/local/share/x/notes"
    )
    with Sandbox(Limits(timeout_s=20), hidden_paths=(*DEFAULT_HIDDEN_PATHS, "/usr/local")) as sandbox:
        assert sandbox.run(writes).ok
        check = sandbox.check("true")
    assert check.system_changes == {
        "python_startup_hook": ["/usr/local/lib/python3/dist-packages/memrl.pth"],
        "shadowed_system_command": ["/usr/local/bin/stat"],
    }, check.system_changes


def bash_version() -> str:
    return subprocess.run(["bash", "-c", "echo $BASH_VERSION"], capture_output=True, text=True).stdout.strip()


def some_folder_of(parent: str) -> str:
    return next(str(p) for p in sorted(Path(parent).iterdir()) if p.is_dir() and not p.is_symlink() and any(p.iterdir()))


TAMPERING = [
    ("rm /usr/bin/grep", "deleted_system_file"),
    ("cp /usr/bin/true /usr/bin/stat", "changed_system_file"),
    ("chmod 777 /usr/bin", "changed_system_file"),
    (
        "printf '#!/bin/sh\\necho 600\\n' > /usr/sbin/stat && chmod +x /usr/sbin/stat",
        "shadowed_system_command",
    ),  # /usr/sbin comes before /usr/bin on PATH
    ("printf '#!/bin/sh\\necho 600\\n' > /usr/local/bin/stat && chmod +x /usr/local/bin/stat", "shadowed_system_command"),
    ("echo x > /usr/lib/libmemrl-evil.so.1", "added_system_library"),
    ("echo /usr/lib/libmemrl-evil.so.1 > /etc/ld.so.preload", "changed_loader_config"),
    (
        "mkdir -p /usr/local/lib/python3/dist-packages && echo 'import os' > /usr/local/lib/python3/dist-packages/memrl.pth",
        "python_startup_hook",
    ),
    # Debian's /usr/lib/python3.X/sitecustomize.py links to /etc/python3.X/sitecustomize.py: a file there runs in every check's Python
    (
        "d=/etc/python3.$(python3 -c 'import sys; print(sys.version_info[1])') && mkdir -p $d && echo 'import os; os._exit(0)' > "
        "$d/sitecustomize.py",
        "python_startup_hook",
    ),
    ("FOLDER", "replaced_system_folder"),
]


@needs_sandbox
@pytest.mark.parametrize(
    "tampering, pattern", TAMPERING, ids=[p for _, p in TAMPERING][:-2] + ["etc_python_sitecustomize", "replaced_system_folder"]
)
def test_llb_os_replaced_system_binary_is_flagged(env: LLBOSEnv, tampering: str, pattern: str):
    if tampering == "FOLDER":
        folder = some_folder_of("/usr/share")
        tampering = f"rm -rf {folder} && mkdir {folder}"
    task = next(t for t in env._all["train"] if t.id == "llb_os/1")
    info = play(env, task, task.data["gold"][0], tampering)  # the task is solved, and a system file changed
    assert info["success"] is False and info["status"] == "tampered" and pattern in info["tampering"], info


@needs_sandbox
def test_llb_os_tools_a_task_adds_are_no_tampering(env: LLBOSEnv):
    made = "printf '#!/bin/sh\\nexit 0\\n' > {0} && chmod +x {0}"
    actions = [
        made.format("/usr/bin/user_check"),
        made.format("/usr/local/bin/sleeper.sh"),
        "mkdir -p /usr/local/scripts && touch /usr/local/scripts/run.sh",
        "useradd -m checked && echo 'checked:pw' | chpasswd",
    ]
    info = play(env, own_task("/usr/bin/user_check && /usr/local/bin/sleeper.sh && grep -q '^checked:\\$' /etc/shadow"), *actions)
    assert info["success"] is True and "status" not in info, info


@needs_sandbox
def test_llb_os_a_process_waiting_for_the_check_cannot_shadow_a_command(env: LLBOSEnv):
    # A process the episode left running waits for the check, then would put a fake `stat` before the real one on PATH:
    # frozen while the check runs, it never gets to (before the freezer it did, and the change was flagged).
    daemon = (
        'nohup sh -c \'while ! pgrep -f memrl-check-mark[e]r >/dev/null; do sleep 0.02; done; printf "#!/bin/sh\\necho 600\\n" > '
        "/usr/sbin/stat; chmod +x /usr/sbin/stat' >/dev/null 2>&1 &"
    )
    info = play(env, own_task(": memrl-check-marker; sleep 1; [ $(stat -c %a /etc) = 600 ]"), daemon)
    assert info["success"] is False and "tampering" not in info, info


# Forks until the sandbox's process limit refuses one, each child asleep in a session of its own; then frees one slot.
_EVERY_PROCESS_SLOT = """python3 - <<'PY'
import os, signal
children = []
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.setsid()
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):  # the command ends as its output closes
            os.dup2(null, fd)
        signal.pause()
        os._exit(0)
    children.append(pid)
os.kill(children[0], signal.SIGKILL)
os.waitpid(children[0], 0)
PY"""


@needs_sandbox
def test_a_check_refused_a_process_by_what_the_episode_left_is_flagged(data: Path, tmp_path: Path, monkeypatch):
    """58b: the processes an episode leaves are frozen while its check runs, but they hold their process slots: with all
    but one taken, `find -exec stat` could not start `stat`, and `find ... | awk` (awk's status: no output, no complaint)
    passed a wrong answer (real task 83, 5 of 5). A check refused a process has no verdict."""
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    env = LLBOSEnv({"data_dir": str(data), "tasks_per_split": 3, "max_processes": 32})
    task = own_task("find /root/d -type f -exec stat -c %a {} \\; | awk '$1 != 600 {exit 1}'")
    files = "mkdir /root/d && touch /root/d/a /root/d/b"  # 644: a wrong answer
    try:
        info = play(env, task, files, _EVERY_PROCESS_SLOT)
        assert info["success"] is False and info["status"] == "tampered" and info["tampering"] == ["starves_the_check"], info
        assert "could not start" in info["detail"]
        assert play(env, task, files)["success"] is False
        assert play(env, task, files, "chmod 600 /root/d/*")["success"] is True
    finally:
        env.close()


@needs_sandbox
def test_no_process_of_the_episode_holds_a_lease_on_what_the_check_reads(data: Path, tmp_path: Path, monkeypatch):
    """59b: a process the episode left held a write lease on each file the check reads, and stayed frozen through the
    check: `grep -r` opens what it finds without blocking, failed on those files, and `! grep -rq X dir` read that as
    "not found" (6 real tasks). No lease can be taken in the sandbox."""
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    env = LLBOSEnv({"data_dir": str(data), "tasks_per_split": 3})
    task = own_task("! grep -rq wrong /root/d")
    answer = "mkdir -p /root/d && echo wrong > /root/d/a"
    lease = (
        'nohup python3 -c \'import fcntl, os, time; fd = os.open("/root/d/a", os.O_RDONLY); '
        'fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK); print("held", flush=True); time.sleep(600)\' > /root/lease 2>&1 &'
        " sleep 1; cat /root/lease"
    )
    try:
        env.reset(task)
        env.step(answer)
        said = env.step(lease)[0]
        assert "Operation not permitted" in said and "held" not in said, said
        info = env.step("finish")[3]
        assert info["success"] is False, info
        assert play(env, task, "mkdir -p /root/d && echo right > /root/d/a")["success"] is True
    finally:
        env.close()


@needs_sandbox
def test_a_check_freezes_what_the_episode_left_forking(tmp_path: Path):
    # Four loops that fork without pause: one write of FROZEN to a v1 freezer left several of 100 freezes FREEZING for good
    # (a process forked at the wrong moment), and the check ended in "did not freeze within 5 s" (in CI, on the test above).
    loops = "\n".join(["nohup sh -c 'while :; do /bin/true; done' >/dev/null 2>&1 &"] * 4)
    with Sandbox(Limits(timeout_s=20)) as sandbox:
        sandbox.run(loops)
        for _ in range(80):
            assert sandbox.check("true").result.exit_code == 0


@needs_sandbox
@pytest.mark.parametrize(
    "commands, solved", [(["chmod 600 /data/a.txt", "ls -l /data"], True), (["ls -l /data"], False)], ids=["state_right", "state_wrong"]
)
def test_llb_os_episode_cut_at_the_step_limit_is_judged_by_its_final_state(env: LLBOSEnv, commands: list[str], solved: bool):
    # LifelongAgentBench's OS task checks the machine whatever ended the session, and MemRL's
    # LLB runner scores that check: the 1.5B model left 3 of 30 real episodes solved but unfinished
    # (BENCHMARKS.md, "Checkers audited on real episodes"), which the harness scored 0 before.
    import asyncio

    from memrl_bench.actors.base import Job
    from memrl_bench.actors.llm_actors import ReActActor
    from memrl_bench.core.schema import Retrieval
    from tests.unit.test_agent import ScriptedChat

    task = next(t for t in env.tasks("train") if t.id == "llb_os/1")
    replies = [f"Think: step.\nAction: {c}" for c in commands]
    actor = ReActActor(ScriptedChat(replies), {"max_steps": 3})
    outcome = asyncio.run(actor.play(Job(task=task, retrieval=Retrieval(), episode_id="ep-1"), env))
    assert [t.action for t in outcome.turns][-1] == commands[-1] and len(outcome.turns) == 3  # never `finish`
    assert (outcome.status, outcome.success) == ("step_limit", solved)
    assert outcome.info["judged_at_step_limit"] is True


@needs_sandbox
def test_a_check_starved_of_memory_by_the_episodes_files_is_flagged(data: Path, tmp_path: Path, monkeypatch):
    """57b: the episode's files share the sandbox's memory with its check; one long line before a wrong answer got
    `! grep -q X file`'s grep killed for lack of memory, which the negation read as "not found": the check passed (4 of 4
    real tasks). A check with a process killed so has no verdict."""
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    env = LLBOSEnv({"data_dir": str(data), "tasks_per_split": 3, "memory_mb": 256})  # its files may take 192 MiB
    task = own_task("! grep -q wrong /root/answer")
    try:
        long_line = "head -c 150M /dev/zero | tr '\\0' a > /root/answer && echo wrong >> /root/answer"
        info = play(env, task, long_line)
        assert info["success"] is False and info["status"] == "tampered" and info["tampering"] == ["starves_the_check"], info
        assert play(env, task, "echo right > /root/answer")["success"] is True
        assert play(env, task, "echo wrong > /root/answer")["success"] is False
    finally:
        env.close()
