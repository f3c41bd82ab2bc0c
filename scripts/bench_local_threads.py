"""The local llama.cpp server's CPU settings, measured: which thread count, polling and batch
settings give the most tokens/s on this machine, quiet and shared, and what the harness's own
rule (memrl_bench.llm.local_server.cpu_settings) gets beside the best setting of the same run.

Workload: what an LLB-DB study sends, 2 requests at once (2 slots), each a fresh prompt of
--prompt-tokens tokens (a memory method's prompt: instructions, memories, the task) followed
by --max-tokens generated tokens; no prompt is cached (a fresh session tag per request).
Each setting is one server start; per request llama.cpp reports prefill and generation
tokens/s; the pass's throughput is all tokens processed (prompt + generated) over its wall time.

Conditions:
  quiet   nothing else runs (check the load average printed at the start)
  shared  one other process keeps a core busy (a Python busy loop), as another job would

Settings (the grid): threads (generation and prefill alike; --full-grid: every pair) x polling
(0: idle threads sleep; 50: llama.cpp's default, they spin a while), n_ubatch 512 (llama.cpp's
default). The rule is a server started as the harness starts one, with no CPU setting given
(it samples the cores' load at start), measured in the same rounds; ratio = rule / best
(target >= 0.9).

    PYTHONPATH=. python scripts/bench_local_threads.py                      # Qwen2.5-Coder-1.5B, 2 rounds
    PYTHONPATH=. python scripts/bench_local_threads.py --model qwen2.5-coder-0.5b --rounds 1
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from typing import Any
from urllib.parse import urlparse

from memrl_bench.llm import catalogue as models
from memrl_bench.llm.local_server import LocalLlamaServer, available_cores

FILLER = (
    "Memory: a task like this one was solved before. Table employees(id INT, name TEXT, salary INT, dept TEXT). "
    "The steps that worked: SQL: SELECT dept, AVG(salary) FROM employees GROUP BY dept; then COMMIT. "
)


def prompt(tokens: int) -> list[dict[str, str]]:
    """A chat prompt of about `tokens` tokens (4 characters a token), unique so nothing is cached."""
    body = (FILLER * (tokens * 4 // len(FILLER) + 1))[: tokens * 4]
    return [
        {"role": "system", "content": f"Session {uuid.uuid4().hex}.\n{body}"},
        {"role": "user", "content": "Write the SQL for: the average salary per department."},
    ]


def one_pass(url: str, requests: int, prompt_tokens: int, max_tokens: int) -> dict[str, float]:
    """`requests` requests at once; llama.cpp's timings and the pass's throughput."""
    parsed = urlparse(url)
    timings: list[dict[str, Any]] = [{} for _ in range(requests)]

    def post(index: int) -> None:
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=1800)
        body = {"messages": prompt(prompt_tokens), "max_tokens": max_tokens, "temperature": 0, "cache_prompt": False, "ignore_eos": True}
        connection.request("POST", f"{parsed.path}/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        timings[index] = json.loads(connection.getresponse().read()).get("timings", {})
        connection.close()

    threads = [threading.Thread(target=post, args=(i,)) for i in range(requests)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    processed = sum(t.get("prompt_n", 0) + t.get("predicted_n", 0) for t in timings)
    return {
        "wall_s": wall,
        "tokens_per_s": processed / wall,
        "prefill_tok_s": statistics.median(t.get("prompt_per_second", 0.0) for t in timings),
        "generate_tok_s": statistics.median(t.get("predicted_per_second", 0.0) for t in timings),
    }


def busy_core() -> subprocess.Popen:
    """Another job: a process keeping one core busy."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--requests", type=int, default=2, help="requests at once (server slots)")
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--conditions", nargs="+", default=["quiet", "shared"])
    parser.add_argument("--full-grid", action="store_true", help="prefill threads apart from generation threads")
    args = parser.parse_args()

    path = models.ensure(args.model)
    cores = available_cores()
    counts = sorted({1, cores})
    pairs = itertools.product(counts, counts) if args.full_grid else ((n, n) for n in counts)
    grid = [{"threads": t, "batch_threads": b, "poll": p} for (t, b), p in itertools.product(pairs, (0, 50))]
    report: dict[str, Any] = {
        "model": args.model,
        "cores": cores,
        "requests": args.requests,
        "prompt_tokens": args.prompt_tokens,
        "max_tokens": args.max_tokens,
        "load_average_at_start": os.getloadavg(),
        "conditions": {},
    }
    for condition in args.conditions:
        other = busy_core() if condition == "shared" else None
        try:
            time.sleep(1.0)
            results: dict[str, list[dict[str, float]]] = {}
            chosen: list[dict[str, int]] = []
            for _ in range(args.rounds):
                for setting in [*grid, None]:  # None: the harness's rule
                    name = "rule" if setting is None else json.dumps(setting, sort_keys=True)
                    with LocalLlamaServer(
                        path,
                        alias=args.model,
                        ctx_size=args.prompt_tokens + args.max_tokens + 512,
                        parallel=args.requests,
                        **(setting or {}),
                    ) as server:
                        if setting is None:
                            chosen.append({"threads": server.threads, "batch_threads": server.batch_threads, "poll": server.poll})
                        one_pass(server.base_url, 1, 32, 4)  # warm up: page the weights in
                        results.setdefault(name, []).append(one_pass(server.base_url, args.requests, args.prompt_tokens, args.max_tokens))
                    shown = f"rule (chose {chosen[-1]})" if setting is None else name
                    print(
                        f"{condition} {shown}: {results[name][-1]['tokens_per_s']:.1f} tok/s (prefill "
                        f"{results[name][-1]['prefill_tok_s']:.1f}, generation {results[name][-1]['generate_tok_s']:.2f} per request)",
                        flush=True,
                    )
        finally:
            if other is not None:
                other.kill()
                other.wait()
        medians = {name: {key: statistics.median(r[key] for r in rows) for key in rows[0]} for name, rows in results.items()}
        best = max((name for name in medians if name != "rule"), key=lambda name: medians[name]["tokens_per_s"])
        ratio = medians["rule"]["tokens_per_s"] / medians[best]["tokens_per_s"]
        report["conditions"][condition] = {"medians": medians, "best": best, "rule_chose": chosen, "rule_over_best": ratio}
        print(
            f"{condition}: best {best} {medians[best]['tokens_per_s']:.1f} tok/s; the rule (chose {chosen}) "
            f"{medians['rule']['tokens_per_s']:.1f} tok/s; ratio {ratio:.3f}",
            flush=True,
        )
    report["load_average_at_end"] = os.getloadavg()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
