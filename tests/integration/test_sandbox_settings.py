"""Sandbox settings that would switch the sandbox off or keep it from starting are refused at the
start of a run: one line naming the key and the value (and the minimum), exit code 2, no traceback,
no folder left. They need neither root nor the benchmark data: the refusal comes first."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrl_bench.cli.main import _outcome
from memrl_bench.runner.loop import run
from tests.helpers import composed

MISSING = "/nonexistent/memrl-bench-data"  # were the setting accepted, the missing data would be the error
QUICK = ("protocol.epochs=1", "progress=false", f"env.data_dir={MISSING}")


def refusal(tmp_path: Path, *overrides: str) -> str:
    """The command's line for a run of these overrides; asserts exit code 2 and that no folder was left."""
    folder = tmp_path / "results" / "run"
    try:
        run(composed(*QUICK, *overrides), folder)
    except BaseException as err:  # noqa: BLE001 - what the command would catch
        outcome = _outcome(err, folder)
        assert outcome is not None, f"no known error for {overrides}: {type(err).__name__}: {err}"
        line, code = outcome
        assert code == 2 and "\n" not in line, line
        assert not (tmp_path / "results").exists() or not list((tmp_path / "results").iterdir())
        return line
    raise AssertionError(f"{overrides} ran")


@pytest.mark.parametrize(
    "hidden, message",
    [
        ("[/]", "env.extra_hidden_paths: hidden path '/' is the whole filesystem: nothing would be hidden"),
        ("['//']", "env.extra_hidden_paths: hidden path '//' is the whole filesystem"),
        ("[/usr/..]", "env.extra_hidden_paths: hidden path '/usr/..' is the whole filesystem"),
        ("[/usr]", "env.extra_hidden_paths: hidden path '/usr' would hide /usr/bin, which the sandbox runs from"),
        ("[/etc]", "env.extra_hidden_paths: hidden path '/etc' would hide /etc, which the sandbox runs from"),
        ("[/var/lib,tmp]", "env.extra_hidden_paths: hidden path 'tmp' is not an absolute path"),
        # 49b: a file the sandbox runs, shown empty, did nothing and exited 0: every command and check "passed"
        ("[/usr/bin/prlimit]", "env.extra_hidden_paths: hidden path '/usr/bin/prlimit' lies inside /usr/bin, which the sandbox runs from"),
        ("[/bin/bash]", "env.extra_hidden_paths: hidden path '/bin/bash' lies inside /usr/bin, which the sandbox runs from"),
        ("[/dev/null]", "env.extra_hidden_paths: hidden path '/dev/null' lies inside /dev, which the sandbox runs from"),
    ],
)
def test_hidden_root_is_refused(tmp_path, hidden, message):
    assert message in refusal(tmp_path, "env=llb_os", f"env.extra_hidden_paths={hidden}")


@pytest.mark.parametrize(
    "workdir, message",
    [
        ("relative/dir", "env.workdir: working directory 'relative/dir' is not an absolute path"),
        ("/nonexistent/memrl-workdir", "env.workdir: working directory '/nonexistent/memrl-workdir' does not exist on this machine"),
        ("null", "env.workdir: Input should be a valid string"),
    ],
)
def test_relative_or_missing_workdir_is_refused(tmp_path, workdir, message):
    assert message in refusal(tmp_path, "env=llb_os", f"env.workdir={workdir}")


@pytest.mark.parametrize(
    "env, setting, message",
    [
        ("llb_os", "env.memory_mb=1", "env.memory_mb: Input should be greater than or equal to 64 (got 1)"),
        ("llb_os", "env.max_processes=2", "env.max_processes: Input should be greater than or equal to 8 (got 2)"),
        ("llb_os", "env.disk_mb=1", "env.disk_mb: Input should be greater than or equal to 16 (got 1)"),
        ("llb_os", "env.command_timeout_s=0", "env.command_timeout_s: Input should be greater than 0 (got 0)"),
        ("bigcodebench", "env.memory_mb=1", "env.memory_mb: Input should be greater than or equal to 64 (got 1)"),
        ("bigcodebench", "env.max_processes=0", "env.max_processes: Input should be greater than or equal to 8 (got 0)"),
        ("bigcodebench", "env.timeout_s=-1", "env.timeout_s: Input should be greater than 0 (got -1)"),
        # time limits past a day: every episode ended in an OverflowError and the run completed at 0 (second independent round)
        ("llb_os", "env.command_timeout_s=1e10", "env.command_timeout_s: Input should be less than or equal to 86400 (got 10000000000.0)"),
        ("bigcodebench", "env.timeout_s=1e10", "env.timeout_s: Input should be less than or equal to 86400 (got 10000000000.0)"),
        # an output cap of 10^12 kept 500 MB outputs whole, and the run refused its own log (43b)
        ("llb_os", "env.max_output_chars=1000000000000", "env.max_output_chars: Input should be less than or equal to 65536"),
        ("llb_db", "env.max_output_chars=1000000000000", "env.max_output_chars: Input should be less than or equal to 65536"),
        ("bigcodebench", "env.max_output_chars=65537", "env.max_output_chars: Input should be less than or equal to 65536"),
    ],
)
def test_absurd_sandbox_limits_are_refused(tmp_path, env, setting, message):
    assert message in refusal(tmp_path, f"env={env}", setting)
