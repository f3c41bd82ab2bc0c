"""The audit scripts of issue 27 (scripts/audit_*.py) proven on known answers before they judge real episodes:
the benchmarks' own gold solutions pass under each audit's route, obviously wrong ones fail."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from memrl_bench.envs.sandbox import DEFAULT_HIDDEN_PATHS, unavailable_reason
from scripts import audit_bigcodebench as bcb
from scripts import audit_llb_os as llb_os

REASON = unavailable_reason()
needs_sandbox = pytest.mark.skipif(REASON is not None, reason=f"sandbox unavailable here: {REASON}")
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
LLB = Path(os.environ.get("MEMRL_BENCH_LLB_DIR") or DATA / "llb")
BIGCODEBENCH = Path(os.environ.get("MEMRL_BENCH_BIGCODEBENCH_DIR") or DATA / "bigcodebench")


def test_bigcodebench_audit_reads_the_code_a_person_reads():
    body = "    return 1\n"
    assert (
        bcb.read_code("Here:\n```python\nimport os\ndef task_func(x):\n    return x\n```\nDone.", "task_func")
        == "import os\ndef task_func(x):\n    return x"
    )
    # the block that defines the entry point, not a first block of example usage
    assert (
        bcb.read_code("```python\nprint(task_func(2))\n```\n```python\ndef task_func(x):\n    return x\n```", "task_func")
        == "def task_func(x):\n    return x"
    )
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
    checker pass this state (the env now judges an episode cut at the step limit so: Env.judge_at_step_limit)."""
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


# ---- TextWorldExpress (scripts/audit_twx.py) ------------------------------------------------

AUDIT_TWX_CONFIG = {
    "game": "coin",
    "game_params": {"numLocations": 3, "includeDoors": 0, "numDistractorItems": 0},
}  # as run_all.sh's twx runs


def _turns(actions: list[str], observations: list[str]) -> list[dict]:
    return [{"action": a, "observation": o} for a, o in zip(actions, observations)]


@pytest.fixture(scope="module")
def twx_simulator():
    if importlib.util.find_spec("textworld_express") is None:
        pytest.skip("needs pip package textworld-express==1.1.0 (and Java 17)")
    from scripts.audit_twx import Simulator

    simulator = Simulator()
    yield simulator
    simulator.close()


def test_twx_route_reads_the_task_id_against_the_run_config():
    from scripts.audit_twx import Game, game_of

    task_id = "twx/coin[includeDoors=0,numDistractorItems=0,numLocations=3]/validation/10007"
    assert game_of(task_id, AUDIT_TWX_CONFIG) == Game("coin", "numLocations=3,includeDoors=0,numDistractorItems=0", "dev", 10007)
    assert game_of("twx/twc/test/20001", {"game": "twc", "game_params": {}}) == Game("twc", "", "test", 20001)
    with pytest.raises(ValueError, match="does not match"):
        game_of(task_id, {"game": "coin", "game_params": {"numLocations": 4, "includeDoors": 0, "numDistractorItems": 0}})


@pytest.mark.parametrize(
    ("config", "split", "seeds"),
    [(AUDIT_TWX_CONFIG, "validation", range(10000, 10008)), ({"game": "twc", "game_params": {}}, "train", range(0, 3))],
)
def test_twx_route_passes_gold_and_fails_wrong_actions(twx_simulator, config, split, seeds):
    from scripts.audit_twx import audit_episode, game_of, params_text

    tag = f"{config['game']}[{params_text(config['game_params'])}]" if config["game_params"] else config["game"]
    for seed in seeds:
        game = game_of(f"twx/{tag}/{split}/{seed}", config)
        gold = twx_simulator.gold(game)
        won = twx_simulator.replay(game, gold)
        assert won.success and won.score >= 1.0 and won.success_at is not None, f"gold of {game} did not win: {gold}"
        gold = gold[: won.success_at + 1]  # twc's gold can go on after the win (a last move); the env stops at the win
        assert not twx_simulator.replay(game, gold[:-1]).success
        assert not twx_simulator.replay(game, ["look around", "inventory", "look around"]).success
        # A whole episode record: a format failure (nothing executed) is skipped, observations match.
        turns = _turns(gold, won.observations)
        turns.insert(0, {"action": "I think", "observation": "(format notice)", "format_failure": "no_action"})
        episode = {"task_id": f"twx/{tag}/{split}/{seed}", "turns": turns}
        assert audit_episode(twx_simulator, episode, config) == (True, [])
        cut = {**episode, "turns": turns[:-1]}
        verdict, notes = audit_episode(twx_simulator, cut, config)
        assert verdict is False and notes == []
        if len(gold) > 1:  # a logged observation that the replay does not give is reported
            wrong = {**episode, "turns": [*turns[:-1], {**turns[-1], "observation": "something else"}]}
            assert "differs" in audit_episode(twx_simulator, wrong, config)[1][0]


def test_twx_route_and_env_agree_on_gold_played_through_the_env(twx_simulator):
    """The env's own episodes of gold (won) and of gold without its last action (not won):
    the route rebuilds the same game (every observation) and gives the env's verdict."""
    from memrl_bench.envs.textworld_express import ENV
    from scripts.audit_twx import audit_episode

    env = ENV({**AUDIT_TWX_CONFIG, "tasks_per_split": 30})  # the 30 tasks audited
    try:
        for task in env.tasks("validation"):
            gold = env.gold_actions(task)
            for actions in (gold, gold[:-1]):
                env.reset(task)
                turns, success = [], False
                for action in actions:
                    observation, _, done, info = env.step(action)
                    turns.append({"action": action, "observation": observation})
                    success = info["success"]
                    if done:
                        break
                assert audit_episode(twx_simulator, {"task_id": task.id, "turns": turns}, AUDIT_TWX_CONFIG) == (success, [])
                assert success == (actions is gold)
    finally:
        env.close()


# ---- ALFWorld (scripts/audit_alfworld.py) -----------------------------------------------------

# One game per task type (tests/integration/test_env_alfworld.py's fixtures). For pick_two_obj_and_place the
# handcoded expert does not win in this route's game within 60 steps (its ties go another way
# than in the env's), so its gold is what the expert plays in memrl_bench's env (expert=true).
ALFWORLD_EXPERT_GAMES = (
    "alfworld/valid_unseen/pick_and_place_simple-Mug-None-Desk-308/trial_T20190909_203041_433487",
    "alfworld/valid_seen/look_at_obj_in_light-CD-None-DeskLamp-302/trial_T20190907_154618_526741",
    "alfworld/valid_unseen/pick_clean_then_place_in_recep-Bowl-None-Cabinet-10/trial_T20190909_061232_368489",
    "alfworld/valid_unseen/pick_heat_then_place_in_recep-Apple-None-Fridge-10/trial_T20190906_182259_116320",
    "alfworld/valid_seen/pick_cool_then_place_in_recep-Apple-None-CounterTop-14/trial_T20190909_044933_815840",
)
ALFWORLD_PICK_TWO = "alfworld/valid_unseen/pick_two_obj_and_place-CD-None-Safe-308/trial_T20190907_051013_060265"


def _env_expert_episode(data, task_id: str, tmp_path) -> tuple[list[dict], bool]:
    """The turns (action, observation) and success of the handcoded expert played in memrl_bench's env."""
    from memrl_bench.core.schema import Task
    from memrl_bench.envs.alfworld import ENV

    _, folder, game = task_id.split("/", 2)
    env = ENV({"data_dir": str(data), "cache_dir": str(tmp_path), "expert": True})
    try:
        _, info = env.reset(Task(task_id, "test", "", data={"source": f"{folder}/{game}", "game": game, "task_type": game.split("-")[0]}))
        turns, success = [], False
        for _ in range(60):
            action = info["expert_plan"][0]
            observation, _, done, info = env.step(action)
            turns.append({"action": action, "observation": observation})
            success = info["success"]
            if done:
                break
    finally:
        env.close()
    return turns, success


@pytest.fixture(scope="module")
def alfworld_data():
    if importlib.util.find_spec("alfworld") is None:  # find_spec: importing alfworld would set $ALFWORLD_DATA
        pytest.skip("needs pip package alfworld==0.4.2")
    from scripts.audit_alfworld import default_data

    data = default_data()
    if not (data / "json_2.1.1").is_dir():
        pytest.skip(f"needs the ALFWorld games in ../shared/data/alfworld (or $ALFWORLD_DATA); not at {data}")
    return data


@pytest.mark.slow
def test_alfworld_route_passes_expert_plans_and_fails_wrong_ones(alfworld_data, tmp_path):
    from scripts.audit_alfworld import audit_episode, expert_plan, game_folder, replay

    plans = {task_id: expert_plan(game_folder(alfworld_data, task_id), seed=f"0/{task_id}") for task_id in ALFWORLD_EXPERT_GAMES}
    # The env's own episode: the route rebuilds its game (every observation) and its verdict.
    turns, success = _env_expert_episode(alfworld_data, ALFWORLD_PICK_TWO, tmp_path)
    assert success and audit_episode({"task_id": ALFWORLD_PICK_TWO, "turns": turns}, alfworld_data) == (True, [])
    plans[ALFWORLD_PICK_TWO] = [turn["action"] for turn in turns]
    for task_id, plan in plans.items():
        source = game_folder(alfworld_data, task_id)
        won = replay(source, plan)
        assert won.won and won.won_at == len(plan) - 1, f"the expert's plan of {task_id} did not win in the audit's game: {plan}"
        assert not replay(source, plan[:-1]).won
        if task_id == ALFWORLD_PICK_TWO:  # one of the two CDs only, then invalid moves
            assert not replay(source, [*plan[:25], "go to drawer 6", "move cd 1 to safe 1", "take safe 1"]).won
            continue
        turns = _turns(plan, won.observations)
        turns.insert(1, {"action": "Thought only", "observation": "(format notice)", "format_failure": "no_action"})
        assert audit_episode({"task_id": task_id, "turns": turns}, alfworld_data) == (True, [])
        verdict, notes = audit_episode(
            {"task_id": task_id, "turns": [*turns, {"action": "look", "observation": won.observations[-1]}]}, alfworld_data
        )
        assert verdict is True and "won after action" in notes[-1]  # won, and the episode went on


def test_alfworld_route_fails_actions_that_do_not_win(alfworld_data):
    from scripts.audit_alfworld import game_folder, replay

    result = replay(
        game_folder(alfworld_data, ALFWORLD_EXPERT_GAMES[0]), ["look", "inventory", "go to desk 1", "take desk 1", "move mug 1 to desk 1"]
    )
    assert not result.won and result.won_at is None and result.observations[3] == "Nothing happens."
