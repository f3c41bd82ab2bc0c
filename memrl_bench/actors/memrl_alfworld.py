"""The official MemRL ALFWorld agent's prompt, for the ReAct actor's option actor.prompt=memrl_alfworld.

Assembled as memrl/agent/memp_agent.py assembles it (MempAgent._construct_messages and
act, MemTensor/MemRL at 7c3beba): the system prompt of memrl/agent/prompts.py; the
few-shot dialogue of the task's type from configs/alfworld/alfworld_examples.json, its
first message introduced as an example; the retrieved memories as a second system
message; "Now, it's your turn to solve a new task." with the first observation; then,
turn by turn, the model's whole reply and "Observation: ...". Both files are read at run
time from the official repository (actor.memrl_official, else $MEMRL_OFFICIAL_DIR, else
../shared/reference/memrl_official), never copied into this project. A task without an
ALFWorld task type gets no example. The memories come as the method formats them
(memrl: successes, then failures, under the official agent's headers).
"""

from __future__ import annotations

import ast
import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrl_bench import prompts
from memrl_bench.core.schema import Task
from memrl_bench.envs.base import DataFileError, DataMissingError, DataRecord, data_bytes, read_data_file

EXAMPLES_FILE = "configs/alfworld/alfworld_examples.json"
PROMPTS_FILE = "memrl/agent/prompts.py"
# ALFWorld task type prefix -> the examples file's "task" (MempAgent.prefixes).
EXAMPLE_OF_TYPE = {
    "pick_and_place": "put",
    "pick_clean_then_place": "clean",
    "pick_heat_then_place": "heat",
    "pick_cool_then_place": "cool",
    "look_at_obj": "examine",
    "pick_two_obj": "puttwo",
}


def official_folder(configured: str | None) -> Path:
    """The official MemRL repository: `configured`, else $MEMRL_OFFICIAL_DIR, else ../shared/reference/memrl_official."""
    if configured or os.environ.get("MEMRL_OFFICIAL_DIR"):
        folder = Path(configured or os.environ["MEMRL_OFFICIAL_DIR"]).expanduser()
    else:
        candidates = [
            Path.cwd() / "../shared/reference/memrl_official",
            Path(__file__).resolve().parents[3] / "shared/reference/memrl_official",
        ]
        folder = next((p for p in candidates if p.exists()), candidates[-1])
    missing = [name for name in (EXAMPLES_FILE, PROMPTS_FILE) if not (folder / name).exists()]  # what is there is read as data
    if missing:
        raise DataMissingError(
            f"actor.prompt=memrl_alfworld reads the official MemRL repository (MIT, github.com/MemTensor/MemRL): {missing[0]} not found in "
            f"{folder.resolve()}; set actor.memrl_official or $MEMRL_OFFICIAL_DIR"
        )
    return folder.resolve()


def _string_constant(source: str, name: str) -> str:
    """The value of a module-level `name = "..."` in Python source, read without running it."""
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            and isinstance(node.value, ast.Constant)
        ):
            return node.value.value
    raise ValueError(f"no string constant {name} in the official {PROMPTS_FILE}")


@dataclass
class Conversation:
    """One episode's messages, grown turn by turn as the official agent grows them: the
    opening messages, then one (reply, observation) pair per turn."""

    opening: list[dict[str, str]] = field(default_factory=list)
    turns: list[tuple[dict[str, str], dict[str, str]]] = field(default_factory=list)

    def messages_with(self, shown: int) -> list[dict[str, str]]:
        """What is sent with only the last `shown` turns (all of them unless trimmed to fit
        the context): every message but empty ones (MempAgent.act drops them)."""
        recent = self.turns[len(self.turns) - shown :] if shown > 0 else []
        return [m for m in [*self.opening, *(m for pair in recent for m in pair)] if m["content"].strip()]

    def add(self, reply: str, observation: str) -> None:
        self.turns.append(({"role": "assistant", "content": reply}, {"role": "user", "content": f"Observation: {observation.strip()}"}))


class OfficialExample(DataRecord):
    """One entry of the official examples file: the task type's name and its few-shot dialogue."""

    task: str
    example: list[dict[str, str]]


@dataclass(frozen=True)
class MemRLAlfworldPrompt:
    system: str
    examples: list[dict[str, Any]]  # the official file's entries: {"task": ..., "example": [messages]}

    @classmethod
    def load(cls, configured: str | None = None) -> MemRLAlfworldPrompt:
        """Both official files, checked: a damaged copy is DataFileError naming it (7 of 7 were tracebacks: the thirty-sixth round)."""
        folder = official_folder(configured)
        source = folder / PROMPTS_FILE
        try:
            system = _string_constant(data_bytes(source).decode(), "SYSTEM_PROMPT")
        except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError) as err:
            raise DataFileError(f"{source}: not the official prompts file ({type(err).__name__}: {err})") from None
        return cls(system, read_data_file(folder / EXAMPLES_FILE, OfficialExample, listed=True))

    def example(self, task: Task) -> list[dict[str, str]]:
        """The few-shot dialogue of the task's ALFWorld type (a copy), or none."""
        task_type = str(task.data.get("task_type", ""))
        for prefix, name in EXAMPLE_OF_TYPE.items():
            if task_type.startswith(prefix):
                return next((copy.deepcopy(e["example"]) for e in self.examples if e["task"] == name), [])
        return []

    def start(self, task: Task, first_observation: str, memory_block: str) -> Conversation:
        messages = [{"role": "system", "content": self.system}]
        example = self.example(task)
        if example:
            example[0]["content"] = prompts.render("memrl_alfworld_example", example=example[0]["content"])
            messages += example
        if memory_block.strip():
            messages.append({"role": "system", "content": prompts.render("memrl_alfworld_memories", memories=memory_block.strip())})
        # The official task text is the first observation without its welcome banner, paragraphs joined by single newlines.
        messages.append(
            {"role": "user", "content": prompts.render("memrl_alfworld_task", task="\n".join(first_observation.strip().split("\n\n")))}
        )
        return Conversation(messages)
