"""Re-collect the parser corpus: real completions of the local models on each environment.

Plays the first --tasks training tasks of each environment for up to --steps turns with
each local model (temperature 0, and no stop sequences, so that completions show all a
model writes after its action, as a server that ignores `stop` would return it), and
writes one JSON line per completion: id, model, env, context (task and turn),
prompt_sha256, kind (react, or the single-turn answer format), multiline, completion,
finish_reason and `expected`, the action (or answer) a careful reader takes from the
completion, "(no action)" when it holds none.

Labels are written by hand. A re-collection keeps the label of every completion whose
prompt and text did not change and writes `"expected": null` for the others, which the
corpus test (tests/unit/test_parser.py) refuses until someone labels them.

    PYTHONPATH=. python scripts/collect_completions.py                      # both models, every env
    PYTHONPATH=. python scripts/collect_completions.py --models qwen2.5-coder-0.5b --envs llb_db --tasks 2
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from memrl_bench.actors.base import Job
from memrl_bench.core import registry
from memrl_bench.core.schema import Retrieval
from memrl_bench.llm import catalogue as models
from memrl_bench.llm.client import OpenAIChatModel, RetryPolicy
from memrl_bench.llm.local_server import LocalLlamaServer

ENVS = ("llb_db", "llb_os", "textworld_express", "alfworld", "mmlu", "bigcodebench")
SINGLE_TURN = {"mmlu": "letter", "bigcodebench": "code"}  # env -> the answer format its actor extracts
MULTILINE = ("llb_db", "llb_os")  # ReAct envs whose actions may span lines (SQL, bash)
MODELS = ("qwen2.5-coder-0.5b", "smollm2-135m")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "completions_local.jsonl"
# Small enough to run here; the same settings every run so that re-collection reproduces.
ENV_SETTINGS: dict[str, dict[str, Any]] = {
    "textworld_express": {"game": "coin", "game_params": {"numLocations": 3, "includeDoors": 1}},
    "bigcodebench": {"timeout_s": 20},
}


class RecordingModel:
    """A ChatModel that keeps every (messages, completion) it passes on."""

    def __init__(self, llm: OpenAIChatModel):
        self.llm = llm
        self.identity = llm.identity
        self.calls: list[tuple[list[dict[str, str]], Any]] = []

    async def chat(self, messages: list[dict[str, str]], *, sample_index: int = 0, **overrides: Any) -> Any:
        completion = await self.llm.chat(messages, sample_index=sample_index, **overrides)
        self.calls.append((messages, completion))
        return completion


def make_env(name: str, tasks: int) -> Any:
    """The env at its settings' defaults (conf/env/<name>.yaml holds what differs: nothing), with ENV_SETTINGS and
    `tasks` tasks per split."""
    cls = registry.get("env", name)
    cfg = dict(ENV_SETTINGS.get(name, {}))
    if "tasks_per_split" in cls.Settings.model_fields:
        cfg["tasks_per_split"] = tasks
    return cls(cfg)


async def play(model_name: str, llm: OpenAIChatModel, env_name: str, tasks: int, steps: int, max_tokens: int) -> list[dict[str, Any]]:
    single_turn = env_name in SINGLE_TURN
    if single_turn:
        tasks *= steps  # as many completions as a multi-turn env gives
    env = make_env(env_name, tasks)
    chosen = env.tasks(env.default_roles["train"])[:tasks]
    rows: list[dict[str, Any]] = []

    async def one(task: Any) -> None:
        instance = env.spawn()
        recorder = RecordingModel(llm)
        actor = registry.get("actor", env.default_actor)(
            recorder, {"max_steps": steps, "generation": {"max_tokens": max_tokens, "stop": None}}
        )
        try:
            outcome = await actor.play(Job(task, Retrieval(), f"collect-{task.id}"), instance)
        finally:
            instance.close()
        if outcome.status in ("llm_error", "env_error"):
            print(f"{model_name} {env_name} {task.id}: {outcome.status}: {outcome.error}", file=sys.stderr)
        how = {"kind": SINGLE_TURN[env_name], "multiline": False} if single_turn else {"kind": "react", "multiline": env_name in MULTILINE}
        for turn, (messages, completion) in enumerate(recorder.calls):
            prompt_sha256 = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
            rows.append(
                {
                    "id": f"{model_name}/{env_name}/{task.id}/turn{turn}",
                    "model": model_name,
                    "env": env_name,
                    "context": f"{env_name}:{task.id}:turn{turn}",
                    "prompt_sha256": prompt_sha256,
                    **how,
                    "completion": completion.text,
                    "finish_reason": completion.finish_reason,
                    "expected": None,
                }
            )

    await asyncio.gather(*(one(task) for task in chosen))
    env.close()
    return sorted(rows, key=lambda r: r["id"])


def merge(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`new`, keeping each old label whose prompt and completion are unchanged; old rows of
    (model, env) pairs not re-collected stay as they were."""
    labels = {(r["id"], r["prompt_sha256"], r["completion"]): r["expected"] for r in old}
    collected = {(r["model"], r["env"]) for r in new}
    kept = [r for r in old if (r["model"], r["env"]) not in collected]
    for row in new:
        row["expected"] = labels.get((row["id"], row["prompt_sha256"], row["completion"]))
    return sorted(kept + new, key=lambda r: r["id"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=ENVS)
    parser.add_argument("--tasks", type=int, default=2, help="training tasks played per env")
    parser.add_argument("--steps", type=int, default=3, help="turns per episode at most")
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the usable cores but one)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    old = [json.loads(line) for line in args.out.read_text().splitlines()] if args.out.exists() else []
    new: list[dict[str, Any]] = []
    for model_name in args.models:
        with LocalLlamaServer(
            models.ensure(model_name), alias=model_name, threads=args.threads, ctx_size=4096, parallel=args.tasks
        ) as server:
            llm = OpenAIChatModel(
                server.base_url,
                model_name,
                generation={"temperature": 0.0, "seed": 0},
                max_concurrency=args.tasks,
                retry=RetryPolicy(timeout_s=900),
            )
            for env_name in args.envs:
                rows = asyncio.run(play(model_name, llm, env_name, args.tasks, args.steps, args.max_tokens))
                print(f"{model_name} {env_name}: {len(rows)} completions", file=sys.stderr)
                new += rows
            llm.close()
    merged = merge(old, new)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(row) + "\n" for row in merged))
    unlabelled = sum(row["expected"] is None for row in merged)
    print(f"{len(merged)} completions in {args.out}; {unlabelled} need an `expected` label")
    return 0


if __name__ == "__main__":
    sys.exit(main())
