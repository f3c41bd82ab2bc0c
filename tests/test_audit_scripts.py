"""The audit scripts of issue 27 (scripts/audit_*.py) proven on known answers before they judge real episodes:
the benchmarks' own gold solutions pass under each audit's route, obviously wrong ones fail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memrl_bench.sandbox import DEFAULT_HIDDEN_PATHS, unavailable_reason
from scripts import audit_bigcodebench as bcb
from scripts import audit_llb_os as llb_os

REASON = unavailable_reason()
needs_sandbox = pytest.mark.skipif(REASON is not None, reason=f"sandbox unavailable here: {REASON}")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LLB = Path(os.environ.get("MEMRL_BENCH_LLB_DIR") or DATA / "llb")
BIGCODEBENCH = Path(os.environ.get("MEMRL_BENCH_BIGCODEBENCH_DIR") or DATA / "bigcodebench")


def test_bigcodebench_audit_reads_the_code_a_person_reads():
    body = "    return 1\n"
    assert bcb.read_code("Here:\n```python\nimport os\ndef task_func(x):\n    return x\n```\nDone.", "task_func") == "import os\ndef task_func(x):\n    return x"
    # the block that defines the entry point, not a first block of example usage
    assert bcb.read_code("```python\nprint(task_func(2))\n```\n```python\ndef task_func(x):\n    return x\n```", "task_func") == "def task_func(x):\n    return x"
    assert bcb.read_code("```\nx = 1\n```", "task_func") == "x = 1"  # no block defines it: the first block
    assert bcb.read_code("def task_func():\n    pass", "task_func") == "def task_func():\n    pass"  # no block: the whole text
    task = {"entry_point": "task_func", "code_prompt": "import os\ndef task_func():\n"}
    assert bcb.solution(body, task) == "import os\ndef task_func():\n" + body  # a body gets the code prompt in front
    assert bcb.solution("async def task_func():\n    pass", task) == "async def task_func():\n    pass"


def test_llb_os_audit_reads_the_commands_the_env_ran():
    assert llb_os.read_command("```bash\nls /\n```") == ("ls /", False)
    assert llb_os.read_command("chmod 600 /a &&\n  echo ok") == ("chmod 600 /a &&\n  echo ok", False)
    assert llb_os.read_command("finish") == ("", True) and llb_os.read_command("Finish.") == ("", True)
    assert llb_os.read_command("answer: 42") == ("", True) and llb_os.read_command("COMMIT") == ("", True)
    assert llb_os.logged_exit("hello\n(exit code 2)") == 2
    assert llb_os.logged_exit("The command was killed after 20 s (time limit).\n") is None
    episode = {
        "turns": [
            {"action": "ls", "observation": "a\n(exit code 0)"},
            {"action": "Think: ...", "observation": "...", "format_failure": "no_action"},
            {"action": "```bash\nfalse\n```", "observation": "(no output)\n(exit code 1)"},
            {"action": "finish", "observation": "The task is solved."},
        ]
    }
    assert llb_os.executed(episode) == (["ls", "false"], [0, 1], True)


@needs_sandbox
@pytest.mark.skipif(not (BIGCODEBENCH / "BigCodeBench.jsonl.gz").exists(), reason=f"shared BigCodeBench data not at {BIGCODEBENCH}")
def test_bigcodebench_audit_passes_the_canonical_solutions_and_fails_wrong_ones():
    """The first validation tasks of the stdlib subset (the real episodes' tasks): canonical solutions
    pass by `python -m unittest`; a body returning None and a solution that exits before its tests fail."""
    tasks = bcb.load_tasks(BIGCODEBENCH)
    hidden = DEFAULT_HIDDEN_PATHS + (str(BIGCODEBENCH.resolve()),)
    for task_id in ("BigCodeBench/1110", "BigCodeBench/14", "BigCodeBench/569", "BigCodeBench/322", "BigCodeBench/911"):
        task = tasks[task_id]
        passed, detail = bcb.run_tests(task["code_prompt"] + task["canonical_solution"] + "\n\n" + task["test"], hidden)
        assert passed, (task_id, detail)
        assert not bcb.run_tests(bcb.solution("    return None\n", task) + "\n\n" + task["test"], hidden)[0], task_id
    task = tasks["BigCodeBench/1110"]
    assert not bcb.run_tests(task["code_prompt"] + task["canonical_solution"] + "\nimport sys\nsys.exit(0)\n\n" + task["test"], hidden)[0]


@needs_sandbox
@pytest.mark.skipif(not (LLB / "os_interaction_val.json").exists(), reason=f"shared LLB data not at {LLB}")
def test_llb_os_audit_passes_the_ground_truth_scripts_and_fails_doing_nothing():
    """Real tasks of the val file: the ground-truth script passes the check run by hand; no command fails it."""
    tasks = llb_os.load_tasks(LLB)
    hidden = DEFAULT_HIDDEN_PATHS + (str(LLB.resolve()),)
    for task_id in ("llb_os/46", "llb_os/260", "llb_os/70", "llb_os/386", "llb_os/204"):
        task = tasks[task_id]
        assert llb_os.play(task, [task["evaluation_info"]["ground_truth_command_item"]["script"]], hidden)["verdict"], task_id
        assert not llb_os.play(task, [], hidden)["verdict"], task_id


@needs_sandbox
@pytest.mark.skipif(not (LLB / "os_interaction_val.json").exists(), reason=f"shared LLB data not at {LLB}")
def test_llb_os_state_left_at_the_step_limit_passes_both_the_route_and_the_env():
    """Real episode validation-e01-00008 of the issue-27 audit run (Qwen2.5-Coder-1.5B, task llb_os/49): the model
    changed the shell, then wandered until the step limit without `finish`. The harness logged 0 (status
    step_limit); LifelongAgentBench evaluates the container at its round limit, and both the route and the env's
    checker pass this state."""
    from memrl_bench.envs.llb_os import LLBOSEnv

    actions = [
        "chsh -s /bin/bash testuser",
        'printf "Original shell: /bin/bash\\nNew shell: /bin/bash\\n" > /changelog.txt; chmod 644 /changelog.txt; exit 0',
        "Add the original shell path to the log file using `printf` and `echo`.",
    ]
    episode = {"task_id": "llb_os/49", "split": "validation", "turns": [{"action": a, "observation": ""} for a in actions]}
    tasks = llb_os.load_tasks(LLB)
    assert llb_os.play(tasks["llb_os/49"], actions, DEFAULT_HIDDEN_PATHS + (str(LLB.resolve()),))["verdict"]
    env = LLBOSEnv({"data_dir": str(LLB), "exclude_gold_failures": False})
    assert llb_os.env_verdict(env, episode)[0]
