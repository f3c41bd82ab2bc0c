"""Reflexion-style retry within a task (protocol.retries >= 1): extra attempts at the same task, not memory.

Why a protocol option and not an actor wrapper: the retries change what the schedule's episodes are (how many
records a batch logs, which of them learn() sees, what SR means), which is the protocol's business, and the
verdict and the reflection need the run's writer model and its cost accounting, which the runner holds; an
actor wrapper would hide the attempts inside one episode record. So the keys are the held-out skeleton's
(`ProtocolSettings`: retries, reflection, verdict, retry_phases, unlisted so that a run without them composes
the config it always did) and any protocol can retry; the runner plays the attempts (runner/loop.py, `_retry`).

What a run with retries does (every phase of `retry_phases`): after a batch is played, each episode whose
verdict is a failure is played again, with `reflection`'s text added to its memory block, up to `retries`
more times, all within its batch and before learn(). Each attempt is its own episode record (`Episode.attempt`:
0 the scheduled one, n its n-th retry; id `<scheduled id>-a<n>`), its acting, its verdict and reflection calls
(charged to the attempt they judged or reflected on) and its latency counted. metrics.json keeps SR@1 as the
run's success_rate (first attempts only) and SR@k apart (`retries` block: metrics.retry_rates); the findings call
the run's kind `<kind>+retry<k>`, so its SR is never compared with another arm's. learn() sees each task's
final attempt only: one experience per scheduled episode, as without retries, and the outcome the retrying
reached (the memory of the attempts is the retry note's, within the task, and ends with it).

Sources. MemRL (/work/shared/reference/memrl_official: memrl/configs/config.py baseline_mode passk | reflection,
baseline_k 10; memrl/run/alfworld_rl_runner.py): a replayed task carries a note on its previous attempt only
(its observations and actions, CORRECT/INCORRECT) and an instruction to reflect and retry; no extra call;
success from the environment. That is `reflection: note`. Reflexion (noahshinn/reflexion @ 218cf0e,
alfworld_runs/{main,alfworld_trial,generate_reflections,env_history}.py): after each failed trial one
reflection call (the failed trial and the plans of up to the last 3 trials; max 256 tokens, temperature 0)
writes a new plan; the last 3 are shown to the next trial. That is `reflection: reflexion`, the call made by
the writer model (memory_llm, else the acting model). Deviations: both codes replay in rounds over all the
unsolved tasks (a round after the other); here a task's retries follow it within its batch, before the next
batch, so memory (if any) is the same for all its attempts. Reflexion's two few-shot examples are not given
(our prompt, in our own words). MemRL's note sits in a system message before the last message; here it
follows the memory block in the system prompt. Both codes take the verdict from the environment: at
evaluation that is a scoring leak (the retry tells the agent it failed), kept as `verdict: ground_truth` and
labelled; `verdict: llm_judge` asks the writer model (methods/llm_ops.judge_episode), which never reads the
env's grading (trajectory_text(verdict=False) where Env.grades_in_observation); an unreadable judgement
counts as a failure (the judge's own rule: unsure is a failure).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memrl_bench import prompts
from memrl_bench.core.config import ConfigError
from memrl_bench.core.schema import Episode, Outcome, Task
from memrl_bench.methods.base import MethodContext, trajectory_text
from memrl_bench.methods.llm_ops import MemoryCalls, OpError, judge_episode, plain_text
from memrl_bench.protocols.base import ProtocolSettings

REFLECTIONS_KEPT = 3  # Reflexion: the plans of the last 3 failed trials, in the reflection call and the next trial's prompt
REFLECTION_GENERATION = {"max_tokens": 256, "temperature": 0.0}  # Reflexion's reflection call
TRAJECTORY_CHARS = 3000  # an attempt shown to the note, the judge and the reflection call (its end kept)
_PLAN_LABEL = re.compile(r"^[^\w\n]*(new\s+plan|plan|reflection)[^\w\n:]*:[^\w\n]*", re.IGNORECASE | re.MULTILINE)


def labels(settings: ProtocolSettings) -> list[str]:
    """A retry run's labels (manifest, metrics, report): the variant, and the scoring leak of a ground-truth verdict at evaluation."""
    if settings.retries == 0:
        return []
    out = [f"retry_{settings.reflection}"]
    if settings.verdict == "ground_truth" and {"validation", "test"} & set(settings.retry_phases):
        out.append("retry_ground_truth_verdict_at_evaluation")
    return out


def kind_suffix(settings: dict[str, Any]) -> str:
    """What retries add to a run's kind (findings: runs of one kind are compared): +retry<k>."""
    retries = int(settings.get("retries", 0) or 0)
    return f"+retry{retries}" if retries else ""


REPORTED = ("sr_at_1", "sr_at_k", "attempts_mean", "retry_tokens_mean")  # the report's retry table, of one phase's last epoch


def report_numbers(block: dict[str, Any] | None, roles: dict[str, Any] | None) -> dict[str, float | None]:
    """metrics.json's `retries` block (metrics.retry_rates) as the report shows it: the last epoch of the first test split
    retried, else of validation, else of training (the first of them the run retried)."""
    block = block or {}
    test = (roles or {}).get("test")
    phases = [*([test] if isinstance(test, str) else list(test or [])), "validation", "train"]
    phase = next((p for p in phases if block.get(p)), None)
    if phase is None:
        return dict.fromkeys(REPORTED)
    last = block[phase][max(block[phase], key=int)]
    return {key: last.get(key) for key in REPORTED}


def reflection_text(text: str) -> str:
    """A reflection as models write it: what follows its last plan label ("New plan:", "**Plan:**"; else a "Reflection:"
    label, else the whole answer), without a code fence; an empty plan is an OpError."""
    text = plain_text(text).strip("`").strip()
    labels = list(_PLAN_LABEL.finditer(text))
    plans = [m for m in labels if "plan" in m.group(1).lower()] or labels
    if plans:
        text = text[plans[-1].end() :].strip("`").strip()
    if not text:
        raise OpError('the plan was empty: write the new plan after "New plan:"')
    return text


@dataclass
class Chain:
    """One scheduled episode's attempts, their verdicts, the notes shown to its retries and (reflexion) the plans written."""

    attempts: list[Episode] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)  # the actor's, per attempt (their transcripts)
    verdicts: list[bool | None] = field(default_factory=list)  # per attempt: judged a success; None: not judged (the last)
    notes: list[str] = field(default_factory=list)  # per attempt: what its prompt was shown on top of the memory block
    reflections: list[str] = field(default_factory=list)


class Retrier:
    """Decides which attempts are retried and what the retry is shown; its calls go to the writer model."""

    def __init__(self, settings: ProtocolSettings, writer: Any, graded_ending: bool, run: Any):
        if settings.retries and writer is None and (settings.reflection == "reflexion" or settings.verdict == "llm_judge"):
            key = "reflection=reflexion" if settings.reflection == "reflexion" else "verdict=llm_judge"
            raise ConfigError(f"protocol.{key} asks a model: set llm=local or llm=openai (or memory_llm=...)")
        self.settings = settings
        self.graded_ending = graded_ending  # the env's last observation is its grading: a judge must not read it
        self.ctx = MethodContext(seed=0, llm=writer, run=run)

    def applies(self, phase: str) -> bool:
        return self.settings.retries > 0 and phase in self.settings.retry_phases

    @property
    def most(self) -> int:
        return self.settings.retries + 1

    def calls(self) -> MemoryCalls:
        return MemoryCalls(self.ctx)

    async def succeeded(self, calls: MemoryCalls, episode: Episode, task: Task) -> bool:
        """The verdict on an attempt: the env's success, or the writer model's judgement (an unreadable one: failure)."""
        if self.settings.verdict == "ground_truth":
            return episode.success
        trajectory = trajectory_text(episode, TRAJECTORY_CHARS, verdict=not self.graded_ending)
        judged = await judge_episode(calls, episode.episode_id, task.description, trajectory)
        return judged is not None and judged[0]

    async def note(self, calls: MemoryCalls, chain: Chain, task: Task) -> str:
        """What the next attempt of `chain` is shown (its last attempt just failed its verdict)."""
        attempt, failed = len(chain.attempts) + 1, chain.attempts[-1]
        # after a judge's verdict the grading the env wrote stays hidden, as it was from the judge
        hide = self.settings.verdict == "llm_judge" and self.graded_ending
        trajectory = trajectory_text(failed, TRAJECTORY_CHARS, verdict=not hide)
        if self.settings.reflection == "note":
            verdict = "judged a failure by a reviewer" if self.settings.verdict == "llm_judge" else "incorrect"
            return prompts.render("retry_note", verdict=verdict, attempt=attempt, most=self.most, trajectory=trajectory).strip()
        earlier = chain.reflections[-REFLECTIONS_KEPT:]
        earlier_text = "Plans written after its earlier attempts:\n" + "\n".join(f"- {r}" for r in earlier) + "\n" if earlier else ""
        prompt = prompts.render("retry_reflexion", task=task.description, trajectory=trajectory, earlier=earlier_text)
        plan = await calls.ask(failed.episode_id, "retry_reflexion", prompt, reflection_text, as_json=False, **REFLECTION_GENERATION)
        if plan is not None:
            chain.reflections.append(plan)
        kept = chain.reflections[-REFLECTIONS_KEPT:]
        if not kept:  # no plan could be read: the retry is a plain new attempt
            return ""
        lines = "\n".join(f"- {r}" for r in kept)
        return prompts.render("retry_reflexion_block", reflections=lines, attempt=attempt, most=self.most).strip()
