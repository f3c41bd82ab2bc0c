"""The local llama.cpp server through the harness against the same server driven directly, and
the effect of prompt-prefix reuse on prefill time per turn.

Harness vs direct, at each concurrency C (a server with C slots, C episodes at once):
  harness  the ReAct actor and OpenAIChatModel (prompt rendering, the openai client, its
           semaphore, the parser) play C LLB-DB episodes of T turns; the env is a stub that
           shows a real LLB-DB table and answers every action at once with the same result,
           so the time is the LLM path's alone.
  direct   the requests the harness sent, as recorded (same bodies, a fresh session tag so
           that no prompt is already cached), posted with http.client from C threads, one
           episode per thread, turns in order.
  The two alternate for --rounds rounds, harness first in even rounds and direct first
  (replaying the previous harness pass) in odd ones; tokens/s = completion tokens / wall
  time of the pass; the ratio is harness / direct per round (median over rounds).
Prefix reuse: one recorded pass replayed directly at concurrency 1, with llama.cpp's
`cache_prompt` on and off; prefill time per turn is the server's timings.prompt_ms.
Threads (--compare-threads 1 2): the first recorded request alone, without prefix reuse,
on a server with each thread count in turn (alternating, --rounds times): llama.cpp's
prefill and generation tokens/s.

    PYTHONPATH=. python scripts/bench_local_server.py                         # Qwen, C = 1 and 4
    PYTHONPATH=. python scripts/bench_local_server.py --model smollm2-135m --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from omegaconf import OmegaConf

from memrl_bench import CONF_DIR, prompts
from memrl_bench.actors.base import Job
from memrl_bench.actors.llm_actors import ReActActor
from memrl_bench.core.schema import Retrieval, Task
from memrl_bench.envs.base import Env
from memrl_bench.envs.llb_db import LLBDBEnv
from memrl_bench.envs.settings import EnvSettings
from memrl_bench.llm import catalogue as models
from memrl_bench.llm.client import OpenAIChatModel, RetryPolicy
from memrl_bench.llm.local_server import LocalLlamaServer

RESULT = "columns: ('count',)\n(3,)"


class StubDBSettings(EnvSettings):
    session: str  # put first in the system prompt: no pass reuses another's cache
    first_observations: dict[str, str]


class StubDBEnv(Env):
    """LLB-DB's instructions and first observation (a real table), then the same result for every action."""

    name = "stub_db"
    Settings = StubDBSettings

    def __init__(self, settings: dict[str, Any], seed: int = 0):
        super().__init__(settings, seed)
        self.session = self.settings.session
        self.first = self.settings.first_observations

    def splits(self) -> dict[str, str]:
        return {"train": "the benchmark's episodes"}

    def tasks(self, split: str) -> list[Task]:
        return []

    def instructions(self) -> str:
        return f"Session {self.session}.\n" + prompts.render("llb_db_instructions", max_shown_rows=20)

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        return self.first[task.id], {"multiline_actions": True}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        return RESULT, 0.0, False, {"multiline_actions": True}


class Recorder:
    """A ChatModel passing calls on to `llm` and keeping each request body, per episode."""

    def __init__(self, llm: OpenAIChatModel):
        self.llm, self.identity = llm, llm.identity
        self.bodies: list[dict[str, Any]] = []
        self.completion_tokens = 0

    async def chat(self, messages: list[dict[str, str]], *, sample_index: int = 0, **overrides: Any) -> Any:
        settings = {k: v for k, v in self.llm.settings(overrides).items() if v is not None}
        self.bodies.append({"model": self.llm.model, "messages": messages, **settings})
        completion = await self.llm.chat(messages, sample_index=sample_index, **overrides)
        self.completion_tokens += completion.usage.completion_tokens
        return completion


def llb_tasks(count: int) -> tuple[list[Task], dict[str, str]]:
    cfg = OmegaConf.to_container(OmegaConf.load(Path(CONF_DIR) / "env" / "llb_db.yaml"))
    assert isinstance(cfg, dict)
    cfg = {k: v for k, v in cfg.items() if k not in ("name", "defaults")} | {"tasks_per_split": count}
    env = LLBDBEnv(cfg)
    tasks = env.tasks("train")[:count]
    first = {t.id: env.reset(t)[0] for t in tasks}
    env.close()
    return tasks, first


def harness_pass(
    url: str, model: str, tasks: list[Task], first: dict[str, str], turns: int, max_tokens: int
) -> tuple[float, int, list[list[dict]]]:
    """(wall s, completion tokens, request bodies per episode) of C episodes played at once."""
    llm = OpenAIChatModel(
        url,
        model,
        generation={"temperature": 0.0, "seed": 0, "max_tokens": max_tokens},
        max_concurrency=len(tasks),
        retry=RetryPolicy(timeout_s=900, max_retries=0),
    )
    recorders = [Recorder(llm) for _ in tasks]
    env_cfg = {"session": uuid.uuid4().hex, "first_observations": first}

    async def play() -> None:
        await asyncio.gather(
            *(
                ReActActor(rec, {"max_steps": turns}).play(Job(t, Retrieval(), f"bench-{t.id}"), StubDBEnv(env_cfg))
                for rec, t in zip(recorders, tasks)
            )
        )
        await llm.aclose()

    started = time.perf_counter()
    asyncio.run(play())
    wall = time.perf_counter() - started
    return wall, sum(r.completion_tokens for r in recorders), [r.bodies for r in recorders]


def _retagged(body: dict[str, Any], session: str) -> dict[str, Any]:
    system = body["messages"][0]["content"]
    old = system.split(".", 1)[0].removeprefix("Session ")
    return {**body, "messages": [{**m, "content": m["content"].replace(old, session)} for m in body["messages"]]}


def direct_pass(url: str, episodes: list[list[dict]], cache_prompt: bool = True) -> tuple[float, int, list[list[dict]]]:
    """(wall s, completion tokens, llama.cpp timings per turn per episode) of the recorded
    requests posted with http.client, one thread per episode."""
    parsed = urlparse(url)
    session = uuid.uuid4().hex
    timings: list[list[dict]] = [[] for _ in episodes]
    tokens = [0] * len(episodes)

    def run(index: int) -> None:
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=900)
        for body in episodes[index]:
            payload = json.dumps({**_retagged(body, session), "cache_prompt": cache_prompt})
            connection.request("POST", f"{parsed.path}/chat/completions", payload, {"Content-Type": "application/json"})
            answer = json.loads(connection.getresponse().read())
            tokens[index] += int(answer["usage"]["completion_tokens"])
            timings[index].append(answer.get("timings", {}))
        connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(episodes))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, sum(tokens), timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--turns", type=int, default=6, help="turns per episode")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the server's, the usable cores but one)")
    parser.add_argument("--compare-threads", type=int, nargs="*", default=[], help="thread counts to compare on one request")
    args = parser.parse_args()

    tasks, first = llb_tasks(max(args.concurrency))
    path = models.ensure(args.model)
    report: dict[str, Any] = {
        "model": args.model,
        "turns": args.turns,
        "max_tokens": args.max_tokens,
        "rounds": args.rounds,
        "load_average_at_start": os.getloadavg(),
        "concurrency": {},
    }
    recorded: list[list[dict]] = []
    for concurrency in args.concurrency:
        with LocalLlamaServer(path, alias=args.model, threads=args.threads, ctx_size=4096, parallel=concurrency) as server:
            rows = []
            bodies: list[list[dict]] = []
            for round_index in range(args.rounds):
                # Odd rounds replay the last harness pass first, so that neither side always goes first.
                if round_index % 2:
                    d_wall, d_tokens, _ = direct_pass(server.base_url, bodies)
                h_wall, h_tokens, bodies = harness_pass(
                    server.base_url, args.model, tasks[:concurrency], first, args.turns, args.max_tokens
                )
                if not round_index % 2:
                    d_wall, d_tokens, _ = direct_pass(server.base_url, bodies)
                rows.append(
                    {
                        "harness_tok_s": h_tokens / h_wall,
                        "direct_tok_s": d_tokens / d_wall,
                        "harness_s": h_wall,
                        "direct_s": d_wall,
                        "harness_tokens": h_tokens,
                        "direct_tokens": d_tokens,
                    }
                )
                rows[-1]["ratio"] = rows[-1]["harness_tok_s"] / rows[-1]["direct_tok_s"]
                print(
                    f"C={concurrency}: harness {rows[-1]['harness_tok_s']:.2f} tok/s ({h_tokens} in {h_wall:.1f} s), direct "
                    f"{rows[-1]['direct_tok_s']:.2f} tok/s ({d_tokens} in {d_wall:.1f} s), ratio {rows[-1]['ratio']:.3f}",
                    flush=True,
                )
            report["concurrency"][concurrency] = {
                "rounds": rows,
                "median_ratio": statistics.median(r["ratio"] for r in rows),
                "threads": server.threads,
            }
            if concurrency == 1:
                recorded = bodies
    if recorded:
        with LocalLlamaServer(path, alias=args.model, threads=args.threads, ctx_size=4096, parallel=1) as server:
            prefill: dict[str, list[float]] = {}
            for cache_prompt in (True, False):
                _, _, timings = direct_pass(server.base_url, recorded, cache_prompt=cache_prompt)
                turns = timings[0]
                prefill["reuse" if cache_prompt else "no_reuse"] = [t.get("prompt_ms", 0.0) for t in turns]
                prefill[("reuse" if cache_prompt else "no_reuse") + "_tokens"] = [t.get("prompt_n", 0) for t in turns]
            report["prefill_ms_per_turn"] = prefill
            later = slice(1, None)  # turn 0 has nothing to reuse
            print(
                f"prefill per turn after the first: {statistics.median(prefill['reuse'][later]):.0f} ms with reuse "
                f"({statistics.median(prefill['reuse_tokens'][later]):.0f} tokens) vs {statistics.median(prefill['no_reuse'][later]):.0f} "
                "ms without "
                f"({statistics.median(prefill['no_reuse_tokens'][later]):.0f} tokens)",
                flush=True,
            )
    if args.compare_threads and recorded:
        speeds: dict[int, list[dict[str, float]]] = {n: [] for n in args.compare_threads}
        for _ in range(args.rounds):
            for threads in args.compare_threads:
                with LocalLlamaServer(path, alias=args.model, threads=threads, ctx_size=4096, parallel=1) as server:
                    _, _, timings = direct_pass(server.base_url, [recorded[0][:1]], cache_prompt=False)
                t = timings[0][0]
                speeds[threads].append(
                    {"prefill_tok_s": t.get("prompt_per_second", 0.0), "generate_tok_s": t.get("predicted_per_second", 0.0)}
                )
                print(
                    f"threads={threads}: prefill {speeds[threads][-1]['prefill_tok_s']:.1f} tok/s, generation "
                    f"{speeds[threads][-1]['generate_tok_s']:.2f} tok/s",
                    flush=True,
                )
        report["threads"] = speeds
    report["load_average_at_end"] = os.getloadavg()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
