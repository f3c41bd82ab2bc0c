"""Is a faster CPU build of llama.cpp to be had from the package registries? The harness's prebuilt xllamacpp wheel
against llama-cpp-python compiled from its PyPI source for this machine's CPU (GGML_NATIVE: AVX-512 where the CPU has
it; the wheel's CPU backend is built for AVX2), on the same model and the same work.

    # once, in a virtualenv of its own (about 10 minutes of compiling on 2 cores):
    python -m venv /tmp/lcp && CMAKE_ARGS="-DGGML_NATIVE=ON" /tmp/lcp/bin/pip install llama-cpp-python==0.3.36
    PYTHONPATH=. python scripts/bench_llama_builds.py --native-python /tmp/lcp/bin/python --rounds 3

Work per round and build: one fresh prompt of --prompt-tokens tokens (prefill), then --gen-tokens tokens generated one
by one (greedy), with --threads threads for both, one sequence. Both builds report llama.cpp's own timings (xllamacpp:
the server's `timings` of a /completion answer; llama-cpp-python: the eval calls timed around them in process), so the
HTTP layer is not in the comparison. Rounds alternate the builds; medians and the native / wheel ratio are printed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import uuid
from urllib.parse import urlparse

from memrl_bench.llm import catalogue as models
from memrl_bench.llm.local_server import LocalLlamaServer

FILLER = "Table employees(id INT, name TEXT, salary INT, dept TEXT). SQL: SELECT dept, AVG(salary) FROM employees GROUP BY dept; "

NATIVE = r"""
import json, sys, time
import llama_cpp
path, prompt, gen, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
llm = llama_cpp.Llama(path, n_ctx=4096, n_batch=512, n_threads=threads, n_threads_batch=threads, verbose=False)
tokens = llm.tokenize(prompt.encode())
start = time.perf_counter(); llm.eval(tokens); prefill = time.perf_counter() - start
start = time.perf_counter()
for _ in range(gen):
    llm.eval([llm.sample(temp=0.0)])
generate = time.perf_counter() - start
info = llama_cpp.llama_print_system_info().decode()
print(json.dumps({"prompt_n": len(tokens), "prefill_tok_s": len(tokens) / prefill, "generate_tok_s": gen / generate, "system": info}))
"""


def text(tokens: int) -> str:
    """About `tokens` tokens (4 characters a token), unique so nothing is reused."""
    return f"Session {uuid.uuid4().hex}. " + (FILLER * (tokens * 4 // len(FILLER) + 1))[: tokens * 4]


def wheel_round(url: str, tokens: int, gen: int) -> dict:
    parsed = urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=1800)
    body = {"prompt": text(tokens), "n_predict": gen, "temperature": 0, "cache_prompt": False, "ignore_eos": True}
    connection.request("POST", "/completion", json.dumps(body), {"Content-Type": "application/json"})
    timings = json.loads(connection.getresponse().read())["timings"]
    connection.close()
    return {
        "prompt_n": timings["prompt_n"],
        "prefill_tok_s": timings["prompt_per_second"],
        "generate_tok_s": timings["predicted_per_second"],
    }


def native_round(python: str, path: str, tokens: int, gen: int, threads: int) -> dict:
    out = subprocess.run([python, "-c", NATIVE, path, text(tokens), str(gen), str(threads)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--native-python", required=True, help="the python of a virtualenv holding the natively built llama-cpp-python")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path = str(models.ensure(args.model))
    load = os.getloadavg()
    results: dict[str, list[dict]] = {"wheel": [], "native": []}
    system = ""
    with LocalLlamaServer(path, alias=args.model, ctx_size=4096, parallel=1, threads=args.threads) as server:
        root = server.base_url.removesuffix("/v1")
        wheel_round(root, 32, 4)  # warm up: the weights paged in
        for _ in range(args.rounds):
            results["wheel"].append(wheel_round(root, args.prompt_tokens, args.gen_tokens))
            native = native_round(args.native_python, path, args.prompt_tokens, args.gen_tokens, args.threads)
            system = native.pop("system")
            results["native"].append(native)
            print(json.dumps({"wheel": results["wheel"][-1], "native": results["native"][-1]}), flush=True)
    keys = ("prefill_tok_s", "generate_tok_s")
    medians = {build: {k: statistics.median(r[k] for r in rows) for k in keys} for build, rows in results.items()}
    print(f"load average at start {load[0]:.2f}, at end {os.getloadavg()[0]:.2f}; {args.threads} threads; native build: {system.strip()}")
    print("| build | prefill tok/s | generation tok/s |")
    print("|---|---:|---:|")
    for build, m in medians.items():
        print(f"| {build} | {m['prefill_tok_s']:.1f} | {m['generate_tok_s']:.2f} |")
    ratio = {k: medians["native"][k] / medians["wheel"][k] for k in keys}
    print(f"| native / wheel | {ratio['prefill_tok_s']:.2f} | {ratio['generate_tok_s']:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
