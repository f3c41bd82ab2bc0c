"""Is temperature 0 deterministic on the local llama.cpp server? The same prompt sent twice in a row, with llama.cpp's
prompt cache (the harness's setting: a turn reuses the cached prefix of the turn before) and without it.

    PYTHONPATH=. python scripts/bench_determinism.py results/llb_db/methods/method=none,task_order_seed=0 --prompts 8

The prompts are the first acting calls of a run's test episodes (evenly spaced), as its transcripts hold them. Each is
sent four times, one request at a time, to one server started as the harness starts its own (the run's llm settings, 2
slots): twice with `cache_prompt` true (the second finds the whole prompt cached), then twice with it false (each
prefilled from scratch). Counts how many prompts gave the same completion twice under each setting, and how many matched
the completion the run logged.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
from pathlib import Path
from urllib.parse import urlparse

from memrl_bench.llm import catalogue as models
from memrl_bench.llm.local_server import LocalLlamaServer


def complete(url: str, messages: list[dict], llm: dict, cache_prompt: bool) -> str:
    parsed = urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=1800)
    body = {
        "messages": messages,
        "max_tokens": llm["max_tokens"],
        "temperature": llm["temperature"],
        "top_p": llm["top_p"],
        "seed": llm["seed"],
        "cache_prompt": cache_prompt,
    }
    connection.request("POST", f"{parsed.path}/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    answer = json.loads(connection.getresponse().read())
    connection.close()
    return answer["choices"][0]["message"]["content"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a run folder with transcripts (a local model's)")
    parser.add_argument("--prompts", type=int, default=8)
    args = parser.parse_args()
    with gzip.open(args.run / "transcripts.jsonl.gz", "rt") as f:
        test = [t for t in map(json.loads, f) if t["phase"] == "test" and t["acting"]]
    calls = [t["acting"][0] for t in test[:: max(1, len(test) // args.prompts)][: args.prompts]]
    llm = json.loads((args.run / "manifest.json").read_text())["config"]["llm"]
    counts = {"cached: same twice": 0, "uncached: same twice": 0, "cached = logged": 0, "uncached = logged": 0, "cached = uncached": 0}
    with LocalLlamaServer(models.ensure(llm["model"]), alias=llm["model"], parallel=int(llm["max_concurrency"])) as server:
        for call in calls:
            a, b = (complete(server.base_url, call["messages"], llm, True) for _ in range(2))
            c, d = (complete(server.base_url, call["messages"], llm, False) for _ in range(2))
            counts["cached: same twice"] += a == b
            counts["uncached: same twice"] += c == d
            counts["cached = logged"] += a == call["completion"]
            counts["uncached = logged"] += c == call["completion"]
            counts["cached = uncached"] += a == c
            logged = [a == call["completion"], c == call["completion"]]
            print(json.dumps({"same_cached": a == b, "same_uncached": c == d, "logged": logged}), flush=True)
    print(f"{len(calls)} prompts: " + "; ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
