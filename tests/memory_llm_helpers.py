"""Builders for unit tests of the LLM-managed memory methods: a scripted chat model,
a tiny deterministic text embedder, hand-built experiences, and a method context."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memrl_bench import prompts
from memrl_bench.core.schema import RetrievedItem, Task, Usage
from memrl_bench.llm import Completion
from memrl_bench.llm.embedders import Embedder
from memrl_bench.methods.base import Experience, MemoryMethod, MethodContext, Query
from memrl_bench.methods.checker import experience as checked_experience
from memrl_bench.methods.checker import word_vectors
from memrl_bench.runner.loop import run

Reply = str | BaseException


class ScriptedModel:
    """Answers from a list (in call order) or a function of the prompt; records every call.

    An answer that is an exception is raised instead. Usage: one call, tokens counted
    as words, so per-episode sums can be checked exactly.
    """

    def __init__(self, replies: list[Reply] | Callable[[str], Reply]):
        self.replies = replies
        self.calls: list[list[dict[str, str]]] = []
        self.overrides: list[dict] = []

    async def chat(self, messages, **overrides):
        self.calls.append([dict(m) for m in messages])
        self.overrides.append(overrides)
        prompt = messages[0]["content"]
        reply = self.replies(prompt) if callable(self.replies) else self.replies[len(self.calls) - 1]
        if isinstance(reply, BaseException):
            raise reply
        return Completion(reply, usage_of(messages, reply))

    def confirm_up(self) -> None:
        """A script has no server to go down."""


def usage_of(messages: list[dict[str, str]], reply: str) -> Usage:
    return Usage(calls=1, prompt_tokens=sum(len(m["content"].split()) for m in messages), completion_tokens=len(reply.split()))


embed = word_vectors  # bag of words hashed into 64 dimensions, unit norm: the contract check's embedder


def is_prompt(prompt: str, template: str) -> bool:
    """Whether `prompt` was rendered from `template` (its text up to the first placeholder)."""
    return prompt.startswith(prompts.load(template).split("{")[0])


def context(model: ScriptedModel | None, loop: asyncio.AbstractEventLoop, text_embed: bool = True) -> MethodContext:
    return MethodContext(seed=0, embed=embed if text_embed else None, llm=model, run=loop.run_until_complete)


def experience(
    n: int, task: str, success: bool, *, task_id: str | None = None, retrieved: Sequence[RetrievedItem] = (), key: np.ndarray | None = None
) -> Experience:
    """The contract check's training episode n (two turns), with another task id, retrieved items or key if given."""
    exp = checked_experience(n, task, success)
    episode = dataclasses.replace(exp.episode, task_id=task_id or exp.episode.task_id, retrieved=list(retrieved))
    return Experience(episode, Task(episode.task_id, "train", task), exp.key if key is None else key)


def whole_and_resumed(make: Callable[[], MemoryMethod], batches: list[list[Experience]], folder: Path) -> tuple[MemoryMethod, MemoryMethod]:
    """A method that learned every batch, and one that learned the first, was snapshot, restored into a fresh
    method and learned the rest: a resume must end where the uninterrupted run ends."""
    whole = make()
    for batch in batches:
        whole.learn(batch)
    part = make()
    part.learn(batches[0])
    (folder / "snap").mkdir()
    part.snapshot(folder / "snap")
    resumed = make()
    resumed.restore(folder / "snap")
    for batch in batches[1:]:
        resumed.learn(batch)
    return whole, resumed


def query(task: str, episode_id: str = "validation-e01-00000-s0", key: np.ndarray | None = None) -> Query:
    return Query(Task("q-" + episode_id, "validation", task), embed([task])[0] if key is None else key, episode_id, "validation")


def used(method: MemoryMethod, item_id: str) -> RetrievedItem:
    item = next(i for i in method.items() if i.id == item_id)
    return RetrievedItem.of(item, 0.9)


def answer(value: object) -> str:
    return json.dumps(value)


def generic_reply(prompt: str) -> str:
    """A deterministic, well-formed answer to every memory prompt of Mem0, MemP, ExpeL, MemRL, SimpleMem, ReasoningBank,
    Dynamic Cheatsheet, AWM, SkillBank and Self-RAG."""
    if is_prompt(prompt, "selfrag_retrieve"):
        return " Yes."
    if is_prompt(prompt, "selfrag_relevance"):  # past successes relevant, failures not: both paths taken
        return "Yes, it shows how the task was done." if "(outcome: success)" in prompt else "NO"
    if is_prompt(prompt, "memrl_script") or is_prompt(prompt, "memrl_reflection"):
        return f"Look first, then act ({len(prompt)} characters read)."
    if is_prompt(prompt, "mem0_update"):
        fact = json.loads(prompt.split("New facts:\n")[1].split("\n\nReturn JSON")[0])[0]
        if "(memory is empty)" in prompt:
            return answer({"memory": [{"event": "ADD", "text": fact}]})
        return answer({"memory": [{"event": "ADD", "text": fact}, {"event": "UPDATE", "id": "0", "text": fact + " Again."}]})
    task = prompt.split("Task: ")[1].split("\n")[0]
    if is_prompt(prompt, "awm_induce"):
        solved = prompt.split("Solved tasks:\n")[1].split("Task: ")[1].split("\n")[0]
        return f"Workflow 1: {solved}\nReasoning: look first.\nAction: look\nReasoning: then act.\nAction: take {{object}}"
    if is_prompt(prompt, "llm_ops_judge"):  # "Taken." is what the contract check's solved episodes end with
        return f"Thoughts: the attempt at {task} was checked.\nStatus: {'success' if 'Taken.' in prompt else 'failure'}"
    if is_prompt(prompt, "reasoningbank_success") or is_prompt(prompt, "reasoningbank_failure"):
        items = [{"title": f"Lesson {n}", "description": f"When doing {task}.", "content": f"Look before acting ({n})."} for n in (1, 2)]
        return answer({"analysis": "Checked.", "memory_items": items})
    if is_prompt(prompt, "dynamic_cheatsheet_curate") or is_prompt(prompt, "dynamic_cheatsheet_synthesis"):
        entry = f"<memory_item><description>For {task}: look first.</description></memory_item> ** Count: 1"
        return f"<cheatsheet>\n## Solution patterns\n{entry}\n</cheatsheet>"
    if is_prompt(prompt, "skillbank_skills") or is_prompt(prompt, "skillbank_evolve"):
        skill = {"title": f"Plan: {task}", "principle": f"To {task}, look around first, then act.", "when_to_apply": "A task like it."}
        return answer(
            {"new_skills": [skill]}
            if is_prompt(prompt, "skillbank_evolve")
            else {"general_skills": [skill], "task_specific_skills": [skill]}
        )
    if is_prompt(prompt, "skillbank_mistakes"):
        return answer(
            {"common_mistakes": [{"description": f"Acting at once in: {task}.", "why_it_happens": "Haste.", "how_to_avoid": "Look first."}]}
        )
    if is_prompt(prompt, "mem0_extract"):
        return answer({"facts": [f"A lesson from {task}."]})
    if is_prompt(prompt, "memp_script"):
        return f"For {task}: look around, then act."
    if is_prompt(prompt, "simplemem_compress"):
        return f"To {task}, look around first, then act."
    if is_prompt(prompt, "memp_keywords"):
        return answer({"keywords": task.split()[:4]})
    if is_prompt(prompt, "memp_adjust"):
        return answer({"analysis": "It failed.", "workflow": f"For {task}: look around twice, then act."})
    entries = [{"op": "ADD", "rule": f"A rule from {task}."}]
    if "\n1. " in prompt:
        entries.append({"op": "AGREE", "id": 1})
    return answer({"operations": entries})


class WordBagEmbedder(Embedder):
    """`embed` as an Embedder: a text embedder for runs, with no model to load."""

    dim = 64
    identity = {"name": "hashed-bag-of-words"}

    def embed(self, texts: list[str]) -> np.ndarray:
        return embed(texts)


def run_synthetic(tmp_path, name: str, method: dict, text_embedder: bool = False) -> tuple[dict, list[dict], ScriptedModel]:
    """A whole run on the small synthetic world with `method`, its memory managed by a
    ScriptedModel answering `generic_reply` (given to the runner in place of the LLM the
    config names); with `text_embedder`, task keys are `embed` of the task descriptions."""
    from tests.helpers import config

    model = ScriptedModel(generic_reply)
    llm = {"name": "openai", "model": "scripted", "base_url": "http://127.0.0.1:9/v1"}  # what the manifest records; the model is given
    embedder = {"name": "openai", "model": "hashed-bag-of-words"} if text_embedder else {"name": "env_intent"}
    cfg = config(method=method, llm=llm, embedder=embedder, protocol={"epochs": 2, "batch_size": 8, "checkpoint_interval_s": 0})
    folder = tmp_path / name
    metrics = run(cfg, folder, llm=model, embedder=WordBagEmbedder() if text_embedder else None)
    records = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    return metrics, records, model
