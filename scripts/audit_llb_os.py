"""Audit the LLB-OS checker on real episodes: the check script run by hand in a fresh sandbox (issue 27).

For every logged episode of the given run folders, a fresh `memrl_bench.envs.sandbox.Sandbox` (the
env's containment: namespaces, an overlay over the host's /, no network, the same limits; the
data folder hidden) runs, each with a plain `bash -c` as root in /, as LifelongAgentBench's
`docker exec` does:

1. the task's initialization script, read from the data file (it must exit 0);
2. the agent's executed commands in order: each turn the agent sent to the env (no
   format_failure), read by this script's own rule: the text of its fenced blocks if it has any,
   else the text; `finish`, `commit` and `answer: ...` end the episode;
3. the task's evaluation script, read from the data file: success if it exits 0 within the time
   limit, as LifelongAgentBench's `_complete` decides (`exit_code == 0`; a timeout is a failure).

None of `memrl_bench.envs.llb_os` is used. The one difference from the env's check, on purpose:
the env runs the evaluation through `Sandbox.check`, with the host's system folders laid over the
episode's (what the episode did to /usr, /bin, /lib ... cannot change what the check runs) and
scores an episode that changed system files 0 (status "tampered"); here the evaluation runs with
the episode's own tools, as LLB's container would. A "tampered" episode is judged like any other
and so shows up as a disagreement if its check passes with its own tools.

Each replayed command's exit code is compared with the one the logged observation shows ("replay
differs" when not the same: a command whose outcome depends on time or chance). Each judged
episode is "agree" (the logged success equals the audit's), or listed with both verdicts, the
commands and the check's output. Episodes that ended at the step limit are counted apart (the
harness scores them 0); their state is checked too and counted ("would pass"), since
LifelongAgentBench evaluates the container at its round limit as well (`Task.complete` calls
`_complete`, whatever the session's status). With --env-at-limit, those episodes are also played
through the env itself (`LLBOSEnv`, the logged actions, then `finish`) to get the env's checker's
verdict on the same final state, compared with the route's like a logged one: the env is only the
object audited there, never part of the route. With --gold, each task of the episodes is played
with its ground-truth script instead: each must pass.

    python scripts/audit_llb_os.py RUN_FOLDER [RUN_FOLDER ...] [--data ../shared/data/llb] [--env-at-limit] [--gold]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memrl_bench.envs.sandbox import DEFAULT_HIDDEN_PATHS, Limits, Sandbox  # noqa: E402 (containment only)
from scripts.audit_common import episodes_of  # noqa: E402

# The env's defaults (LLBOSSettings, memrl_bench/envs/llb_os.py): 20 s a command, 1 GiB, 256 processes, a 512 MiB disk.
LIMITS = Limits(timeout_s=20.0, output_bytes=4000, memory_bytes=1024 << 20, max_processes=256, disk_bytes=512 << 20)
WORKDIR = "/"
JUDGED = ("ok", "tampered")
_FENCE = re.compile(r"```[^\n`]*\n?(.*?)```", re.DOTALL)
_LOGGED_EXIT = re.compile(r"\(exit code (-?\d+)\)\s*$")


def default_data() -> Path:
    """$MEMRL_BENCH_LLB_DIR (as for the env), else ../shared/data/llb beside the repository."""
    return Path(os.environ.get("MEMRL_BENCH_LLB_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data" / "llb")


def load_tasks(data: Path) -> dict[str, dict[str, Any]]:
    tasks = {}
    for name in ("os_interaction_train.json", "os_interaction_val.json"):
        for key, entry in json.loads((data / name).read_text()).items():
            tasks[f"llb_os/{key}"] = entry
    return tasks


def read_command(action: str) -> tuple[str, bool]:
    """(the bash text to run, whether the action ends the episode) by this script's reading."""
    text = action.strip()
    blocks = _FENCE.findall(text)
    if blocks:
        text = "\n".join(b.strip("\n") for b in blocks).strip()
    word = text.lower().rstrip(".!")
    if word in ("finish", "commit", "act: finish") or word.startswith("answer:"):
        return "", True
    return text, False


def logged_exit(observation: str) -> int | None:
    """The exit code the logged observation shows; None for a command killed at the time limit or not run."""
    found = _LOGGED_EXIT.search(observation)
    return int(found.group(1)) if found else None


def play(task: dict[str, Any], commands: list[str], hidden: tuple[str, ...]) -> dict[str, Any]:
    """Initialise a fresh sandbox, run `commands`, run the evaluation script: its exit code decides."""
    with Sandbox(LIMITS, workdir=WORKDIR, hidden_paths=hidden) as sandbox:
        init = task["initialization_command_item"]["script"]
        if init.strip():
            started = sandbox.run(init)
            if not (started.exit_code == 0 and not started.timed_out):
                raise RuntimeError(f"initialization failed: exit {started.exit_code}: {started.output[-300:]}")
        exits = []
        for command in commands:
            result = sandbox.run(command)
            exits.append(None if result.timed_out else result.exit_code)
        check = sandbox.run(task["evaluation_info"]["evaluation_command_item"]["script"])
    passed = check.exit_code == 0 and not check.timed_out
    return {
        "verdict": passed,
        "exits": exits,
        "check": f"exit {check.exit_code}, timed out {check.timed_out}, output {check.output[-300:].strip()!r}",
    }


def executed(episode: dict[str, Any]) -> tuple[list[str], list[int | None], bool]:
    """The commands the env ran (by this script's reading), the exit codes the log shows for them, and whether the episode ended itself."""
    commands, exits, ended = [], [], False
    for turn in episode["turns"]:
        if turn.get("format_failure"):
            continue  # the actor ran nothing: the model was told why
        command, ends = read_command(turn["action"] or "")
        if ends:
            ended = True
            break
        if command:
            commands.append(command)
            exits.append(logged_exit(turn["observation"]))
    return commands, exits, ended


def env_verdict(env: Any, episode: dict[str, Any]) -> tuple[bool, str]:
    """The env's own checker on the episode's final state: its logged actions played through `env`, then `finish`."""
    task = next(t for t in env.tasks(episode["split"]) if t.id == episode["task_id"])
    try:
        env.reset(task)
        for turn in episode["turns"]:
            if not turn.get("format_failure"):
                _, _, done, info = env.step(turn["action"])
                if done:
                    return bool(info.get("success")), str(info.get("detail", ""))
        _, _, _, info = env.step("finish")
        return bool(info.get("success")), str(info.get("detail", ""))
    finally:
        env.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--gold", action="store_true", help="play the ground-truth script of the episodes' tasks instead")
    parser.add_argument(
        "--env-at-limit", action="store_true", help="compare with the env's checker on episodes that ended at the step limit"
    )
    args = parser.parse_args()
    env = None
    if args.env_at_limit:
        from memrl_bench.envs.llb_os import LLBOSEnv  # the object audited, for its verdict only

        env = LLBOSEnv({"data_dir": str(args.data)})
    tasks = load_tasks(args.data)
    hidden = DEFAULT_HIDDEN_PATHS + (str(args.data.resolve()),)
    counts: Counter[str] = Counter()
    episodes = episodes_of(args.runs)
    if args.gold:
        for task_id in sorted({e["task_id"] for _, e in episodes}, key=lambda t: int(t.rsplit("/", 1)[1])):
            task = tasks[task_id]
            result = play(task, [task["evaluation_info"]["ground_truth_command_item"]["script"]], hidden)
            counts["gold passes" if result["verdict"] else "gold fails"] += 1
            if not result["verdict"]:
                print(f"GOLD FAILS {task_id}: {result['check']}")
        print(json.dumps(dict(sorted(counts.items()))))
        return 0
    for run_name, episode in episodes:
        counts["episodes"] += 1
        status, logged = episode["status"], bool(episode["success"])
        if status not in JUDGED and status != "step_limit":
            counts[f"status {status} (not judged)"] += 1
            continue
        commands, exits, ended = executed(episode)
        result = play(tasks[episode["task_id"]], commands, hidden)
        differs = [i for i, (a, b) in enumerate(zip(exits, result["exits"])) if a != b]
        if differs:
            counts["replay differs"] += 1
            print(
                f"REPLAY DIFFERS {run_name} {episode['episode_id']} {episode['task_id']}: commands {differs}: logged exits {exits}, "
                f"replayed {result['exits']}"
            )
        if status == "step_limit":
            counts["step limit (not judged)"] += 1
            counts["step limit, would pass"] += result["verdict"]
            if ended:
                print(f"NOTE {run_name} {episode['episode_id']}: status step_limit but the actions end the episode")
            if env is not None:
                verdict, detail = env_verdict(env, episode)
                counts["step limit, env's checker agrees" if verdict == result["verdict"] else "step limit, env's checker disagrees"] += 1
                if verdict != result["verdict"]:
                    print(
                        f"DISAGREE AT THE LIMIT {run_name} {episode['episode_id']} {episode['task_id']}: env's checker {verdict} "
                        f"({detail[-200:]!r}), audit {result['verdict']}"
                    )
                    print(f"    check: {result['check']}")
                    for turn in episode["turns"]:
                        print(f"    {turn['action']!r}" + (f"  [not run: {turn['format_failure']}]" if turn.get("format_failure") else ""))
            if result["verdict"]:
                print(f"WOULD PASS AT THE LIMIT {run_name} {episode['episode_id']} {episode['task_id']}: {result['check']}")
            continue
        counts["judged"] += 1
        if not ended:
            print(f"NOTE {run_name} {episode['episode_id']} {episode['task_id']}: status {status} but no ending action read")
        counts["agree" if result["verdict"] == logged else "disagree"] += 1
        if result["verdict"] != logged:
            print(
                f"DISAGREE {run_name} {episode['episode_id']} {episode['task_id']}: logged {logged} (status {status}), audit "
                f"{result['verdict']}"
            )
            print(f"    check: {result['check']}")
            print(f"    env's last observation: {episode['turns'][-1]['observation'][-300:]!r}")
            for turn in episode["turns"]:
                print(f"    {turn['action']!r}" + (f"  [not run: {turn['format_failure']}]" if turn.get("format_failure") else ""))
    print(json.dumps(dict(sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
