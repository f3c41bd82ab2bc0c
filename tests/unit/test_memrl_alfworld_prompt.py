"""actor.prompt=memrl_alfworld sends what the official MemRL ALFWorld agent sends, turn by turn.

The official MempAgent (../shared/reference/memrl_official, memrl/agent/memp_agent.py) and
memrl_bench's ReAct actor play the same real ALFWorld game with the same scripted replies
and the same retrieved MemRL memories; every message list sent to the model must be equal.
The official agent formats each memory from its own stored text (script and a Python-list
trajectory); here it is handed memrl_bench's memory texts as they are, so the comparison
covers the assembly (system prompt, few-shot dialogue, memory message, task, turns).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os

import numpy as np
import pytest

from memrl_bench.actors.base import Job
from memrl_bench.actors.llm_actors import ReActActor
from memrl_bench.core.schema import Episode, Task, Turn
from memrl_bench.envs.base import DataMissingError
from memrl_bench.methods.base import Experience, MethodContext, Query
from memrl_bench.methods.memrl import MemRL
from tests.official_memrl import official_modules, require_official
from tests.unit.test_agent import ScriptedChat

GAME = "valid_unseen/pick_heat_then_place_in_recep-Apple-None-Fridge-10/trial_T20190906_182259_116320"
REPLIES = [
    "Thought: apples are often in the fridge.\nAction: go to fridge 1",
    "Thought: open it.\nAction: open fridge 1",
    "Action: take apple 1 from fridge 1",
]


def alfworld_env(tmp_path):
    if importlib.util.find_spec("alfworld") is None:
        pytest.skip("needs pip package alfworld==0.4.2")
    from memrl_bench.envs.alfworld import ENV

    try:
        return ENV({"cache_dir": str(tmp_path / "cache")})
    except DataMissingError as missing:
        pytest.skip(f"ALFWorld games missing: {missing}")


def memrl_retrieval(task: Task):
    """A real MemRL retrieval of one success and one failure, as the method writes and formats them."""
    summaries = ["1. find the apple\n2. heat it", "The apple was never heated."]
    m = MemRL({}, MethodContext(seed=0, llm=ScriptedChat(summaries), run=asyncio.new_event_loop().run_until_complete))
    key = np.ones(8, dtype=np.float32)
    for i, success in enumerate([True, False]):  # one batch each: the second memory joins the first's group
        ep = Episode(
            f"e{i}",
            f"t{i}",
            "train",
            "train",
            1,
            0,
            i,
            success,
            float(success),
            "ok",
            turns=[Turn("go to fridge 1", "You arrive at fridge 1.")],
        )
        m.learn([Experience(ep, Task(f"t{i}", "train", "heat some apple and put it in fridge"), key)])
    retrieval = m.retrieve(Query(task, key, "q", "train"))
    assert [r.source_success for r in retrieval.items] == [True, False]
    return retrieval, [m.store.get(r.item_id).content for r in retrieval.items]


class _OfficialLLM:
    def __init__(self) -> None:
        self.calls: list[list[dict]] = []

    def generate(self, messages: list[dict], **kwargs) -> str:
        self.calls.append(messages)
        return REPLIES[len(self.calls) - 1]


def test_the_actor_sends_what_the_official_agent_sends(tmp_path, monkeypatch):
    official_dir = require_official()
    official_modules()  # the official package on sys.path, MemOS stubbed
    from memrl.agent.memp_agent import MempAgent

    env = alfworld_env(tmp_path)
    task = Task(
        f"alfworld/{GAME}",
        "test_out_of_distribution",
        "heat some apple and put it in fridge",
        data={"source": GAME, "task_type": "pick_heat_then_place_in_recep"},
    )
    raw = "-= Welcome to TextWorld, ALFRED! =-\n\n" + env.reset(task)[0]  # the game's first observation, banner and all
    first = "\n".join(raw.split("\n\n")[1:])  # the official runner's task description
    retrieval, contents = memrl_retrieval(task)
    ours = ScriptedChat(REPLIES)
    outcome = asyncio.run(ReActActor(ours, {"prompt": "memrl_alfworld", "max_steps": 3}).play(Job(task, retrieval, "ep"), env))
    env.close()
    assert len(outcome.turns) == 3

    theirs = _OfficialLLM()
    agent = MempAgent(theirs, json.loads((official_dir / "configs/alfworld/alfworld_examples.json").read_text()))
    monkeypatch.setattr(agent, "_format_retrieved_memory", lambda content: content)  # memrl_bench's texts as they are
    history = agent._construct_messages(
        first, {"successed": [{"content": contents[0]}], "failed": [{"content": contents[1]}]}, task_type=GAME.split("/", 1)[1]
    )
    observation = first
    for step, turn in enumerate(outcome.turns):
        agent.act(observation, history, first_step=step == 0)
        observation = turn.observation
    assert [call["messages"] for call in ours.calls] == theirs.calls
    assert [m["role"] for m in theirs.calls[0]][:2] == ["system", "user"] and theirs.calls[0][1]["content"].startswith("Here is an example")
    assert "Your task is to: heat some apple and put it in fridge" in theirs.calls[0][-1]["content"]


def test_a_missing_official_repository_is_one_clear_line(tmp_path):
    with pytest.raises(DataMissingError) as missing:
        ReActActor(ScriptedChat(REPLIES), {"prompt": "memrl_alfworld", "memrl_official": str(tmp_path)})
    message = str(missing.value)
    assert "\n" not in message and str(tmp_path) in message and "actor.memrl_official" in message
    with pytest.raises(ValueError, match="actor.prompt: Input should be 'harness' or 'memrl_alfworld'"):
        ReActActor(ScriptedChat(REPLIES), {"prompt": "official"})


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda f: f["prompts"].write_bytes(b"\xff\xfe"), "prompts.py: not the official prompts file (UnicodeDecodeError"),
        (lambda f: f["prompts"].write_text("SYSTEM_PROMPT = ("), "prompts.py: not the official prompts file (SyntaxError"),
        (lambda f: f["prompts"].write_text("OTHER = 'x'\n"), "no string constant SYSTEM_PROMPT"),
        (lambda f: f["examples"].write_text('[{"task": "put"'), "alfworld_examples.json: the file is not valid JSON"),
        (lambda f: f["examples"].write_text("[1, 2]"), "alfworld_examples.json: entry 0 must be a JSON object, not a number"),
        (lambda f: f["examples"].write_text('[{"example": []}]'), "alfworld_examples.json: entry 0: task: Field required"),
        (lambda f: f["examples"].unlink() or os.mkfifo(f["examples"]), "alfworld_examples.json is not a regular file"),
    ],
    ids=["not_utf8", "syntax", "no_constant", "cut_json", "list_of_ints", "no_task", "a_fifo"],
)
def test_a_damaged_official_file_is_one_line_naming_it(tmp_path, damage, message):
    """The thirty-sixth round: the two official files actor.memrl_official names were read unchecked, and each damaged copy
    (7 of 7) ended the run in a traceback."""
    from memrl_bench.actors.memrl_alfworld import EXAMPLES_FILE, PROMPTS_FILE
    from memrl_bench.envs.base import DataFileError

    files = {"prompts": tmp_path / PROMPTS_FILE, "examples": tmp_path / EXAMPLES_FILE}
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    files["prompts"].write_text('SYSTEM_PROMPT = "You are an agent."\n')
    files["examples"].write_text(json.dumps([{"task": "put", "example": [{"role": "user", "content": "x"}]}]))
    ReActActor(ScriptedChat(REPLIES), {"prompt": "memrl_alfworld", "memrl_official": str(tmp_path)})  # whole: it loads
    damage(files)
    with pytest.raises(DataFileError) as damaged:
        ReActActor(ScriptedChat(REPLIES), {"prompt": "memrl_alfworld", "memrl_official": str(tmp_path)})
    assert message in str(damaged.value) and "\n" not in str(damaged.value), damaged.value
