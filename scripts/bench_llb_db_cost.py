"""What memory costs an LLB-DB episode in prefill: the study's own test episodes sent again to a fresh local server.

    PYTHONPATH=. python scripts/bench_llb_db_cost.py results/llb_db --episodes 8

For each arm of the study (a complete run folder; arms whose logs are identical are measured once), `--episodes` of its
test episodes, evenly spaced over its test phase, are replayed call by call: each acting call's messages, as its
transcript holds them, through the harness's own client (`llm=local` with the run's llm settings, the response cache
off) to one server started as the run started its own (2 slots, 2 episodes in flight). Episodes of all arms are
interleaved, so every arm meets the same machine. Per episode: seconds from its first call to its last, prompt tokens,
completion tokens, and whether every completion equals the one logged (temperature 0; a batch of other requests can
change llama.cpp's arithmetic). Prints medians per arm and their ratio to `none`'s; JSON with --json.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import statistics
import time
from pathlib import Path

from memrl_bench.core.records import read_run
from memrl_bench.core.schema import strip_measured
from memrl_bench.findings import arm_label
from memrl_bench.llm.client import open_local


def arms(study: Path) -> dict[str, Path]:
    """Arm label -> run folder, one per distinct episode log (MemRL at epsilon 0.01 and 0 played the same here)."""
    seen: dict[str, str] = {}
    out: dict[str, Path] = {}
    for manifest in sorted(study.rglob("manifest.json")):
        folder = manifest.parent
        if not (folder / "COMPLETE").exists():
            continue
        records = read_run(folder, require_complete=True)
        log = json.dumps([strip_measured(e.to_dict()) for e in records.episodes], sort_keys=True)
        label = arm_label(records.manifest.config["method"])
        if log in seen:
            print(f"{label}: its log equals {seen[log]}'s; measured once")
            continue
        seen[log] = label
        out[label] = folder
    return out


def sampled(folder: Path, n: int) -> list[dict]:
    """n test episodes' transcripts, evenly spaced over the test phase."""
    with gzip.open(folder / "transcripts.jsonl.gz", "rt") as f:
        test = [t for t in map(json.loads, f) if t["phase"] == "test"]
    step = max(1, len(test) // n)
    return test[::step][:n]


async def replay(model, transcript: dict) -> dict:
    started = time.perf_counter()
    prompt = completion = 0
    same = True
    for call in transcript["acting"]:
        result = await model.chat(call["messages"])
        prompt += result.usage.prompt_tokens
        completion += result.usage.completion_tokens
        same &= result.text == call["completion"]
    return {"seconds": time.perf_counter() - started, "prompt_tokens": prompt, "completion_tokens": completion, "same": same}


async def measure(model, work: list[tuple[str, dict]], in_flight: int) -> dict[str, list[dict]]:
    gate = asyncio.Semaphore(in_flight)
    results: dict[str, list[dict]] = {}

    async def one(label: str, transcript: dict) -> None:
        async with gate:
            results.setdefault(label, []).append(await replay(model, transcript))

    await asyncio.gather(*(one(label, t) for label, t in work))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", type=Path)
    parser.add_argument("--episodes", type=int, default=8, help="test episodes per arm")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folders = arms(args.study)
    episodes = {label: sampled(folder, args.episodes) for label, folder in folders.items()}
    work = [(label, episodes[label][i]) for i in range(args.episodes) for label in folders if i < len(episodes[label])]
    llm = json.loads((next(iter(folders.values())) / "manifest.json").read_text())["config"]["llm"]
    llm = {**llm, "cache_mode": "off", "cache_path": None}
    load_start = os.getloadavg()
    with open_local(llm) as model:  # the server is up here: the episodes are timed, not its start
        wall = time.perf_counter()
        results = asyncio.run(measure(model, work, int(llm["max_concurrency"])))
        wall = time.perf_counter() - wall
    medians = {
        label: {key: statistics.median(r[key] for r in rows) for key in ("seconds", "prompt_tokens", "completion_tokens")}
        | {"episodes": len(rows), "same_completions": sum(r["same"] for r in rows)}
        for label, rows in results.items()
    }
    base = medians.get("none")
    print(f"load average at start {load_start[0]:.2f}, at end {os.getloadavg()[0]:.2f}; wall {wall:.0f} s")
    print("| arm | test episodes | median s / episode | x none | median prompt tokens | x none | median completion tokens | same |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, m in medians.items():
        ratio = {key: f"{m[key] / base[key]:.2f}" if base and base[key] else "–" for key in ("seconds", "prompt_tokens")}
        print(
            f"| {label} | {m['episodes']} | {m['seconds']:.1f} | {ratio['seconds']} | {m['prompt_tokens']:,.0f} | {ratio['prompt_tokens']} "
            f"| {m['completion_tokens']:.0f} | {m['same_completions']} of {m['episodes']} |"
        )
    if args.json:
        print(json.dumps({"load_average": [load_start, os.getloadavg()], "wall_s": wall, "medians": medians, "episodes": results}))


if __name__ == "__main__":
    main()
