"""Progress when stderr is not a terminal (nohup, SLURM, CI): log lines with episodes, pace,
LLM calls, retries and ETA."""

import io
import subprocess
import sys

from memrl_bench.runner.progress import Progress, ProgressLog, make_progress


def record(calls: int, retries: int = 0, memory_calls: int = 0, failures: int = 0) -> dict:
    return {
        "act_usage": {"calls": calls, "retries": retries, "failures": failures},
        "memory_usage": {"calls": memory_calls, "retries": 0, "failures": 0},
    }


def test_log_lines_count_episodes_calls_and_retries():
    stream = io.StringIO()
    progress = ProgressLog(total=10, initial=2, name="run-a", stream=stream, interval_s=0.0)
    progress.update([record(3, retries=1), record(2, memory_calls=1)])
    progress.update([record(1, failures=1)])
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3  # the first line, then one per batch at interval 0; close adds none for an unchanged count
    assert "run-a: 2/10 episodes (2 from an earlier invocation), 0 episodes/s, 0 LLM calls, 0 retries, ETA -" in lines[0]
    assert "4/10 episodes" in lines[1] and "6 LLM calls, 1 retries" in lines[1] and "ETA " in lines[1] and "ETA -" not in lines[1]
    assert "5/10 episodes" in lines[2] and "7 LLM calls, 1 retries, 1 failed" in lines[2]


def test_lines_are_spaced_by_the_interval_and_the_last_one_is_always_written():
    stream = io.StringIO()
    progress = ProgressLog(total=4, initial=0, name="run-b", stream=stream, interval_s=3600.0)
    for _ in range(4):
        progress.update([record(1)])
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "0/4 episodes" in lines[0] and "4/4 episodes" in lines[1] and "4 LLM calls" in lines[1]


def test_disabled_progress_writes_nothing(capsys):
    progress = make_progress(5, 0, "quiet", enabled=False)
    assert type(progress) is Progress
    progress.update([record(1)])
    progress.close()
    assert capsys.readouterr().err == ""


def test_a_run_without_a_terminal_logs_its_progress(tmp_path):
    small = [
        "env.tasks.train=16",
        "env.tasks.validation=8",
        "env.tasks.test_in_distribution=8",
        "env.tasks.test_out_of_distribution=8",
        "protocol.epochs=1",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "memrl_bench", f"results_dir={tmp_path}", *small],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    lines = [line for line in result.stderr.splitlines() if "episodes/s" in line]
    assert lines and "0/40 episodes" in lines[0] and "40/40 episodes" in lines[-1]  # 16 + 8 + 8 + 8, result.stderr
