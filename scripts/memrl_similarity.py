"""How similar an embedder finds an env's tasks, next to MemRL's official constants.

Usage: python scripts/memrl_similarity.py [--envs llb_db alfworld textworld_express] [--max-tasks 400]
For each env: the quantiles of each training task's best cosine to the OTHER training
tasks (what a training query meets in memory), of each validation task's best cosine to
the training tasks (what a held-out query meets), the share of validation queries below
the official threshold 0.5 (retrieving nothing), and sim_mean / sim_std / sim_threshold
calibrated from the training tasks only (memrl_bench.methods.memrl.calibrate_similarity).
Prints a markdown table for BENCHMARKS.md. The embedder is MiniLM (conf/embedder/minilm.yaml).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memrl_bench.core import registry  # noqa: E402
from memrl_bench.core.vector_index import unit_rows  # noqa: E402
from memrl_bench.llm.embedders import make_embedder  # noqa: E402
from memrl_bench.methods.memrl import OFFICIAL_SIMILARITY, calibrate_similarity  # noqa: E402

QUANTILES = (0.05, 0.5, 0.95)


def env_tasks(name: str, max_tasks: int) -> tuple[list[str], list[str]]:
    env = registry.get("env", name)({}, seed=0)
    try:
        roles = env.default_roles
        train = [t.description for t in env.tasks(roles["train"] if isinstance(roles["train"], str) else roles["train"][0])][:max_tasks]
        held = roles["validation"] if isinstance(roles["validation"], str) else roles["validation"][0]
        return train, [t.description for t in env.tasks(held)][:max_tasks]
    finally:
        env.close()


def quantiles(values: np.ndarray) -> str:
    return " / ".join(f"{np.quantile(values, q):.2f}" for q in QUANTILES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", nargs="+", default=["llb_db", "alfworld", "textworld_express"])
    parser.add_argument("--max-tasks", type=int, default=400, help="first N tasks of each split")
    args = parser.parse_args()
    embedder = make_embedder({"name": "minilm", "threads": 1, "batch_size": 32, "max_tokens": 256})
    print(
        "| env | train tasks | train→train best sim q05 / q50 / q95 | validation tasks | validation→train q05 / q50 / q95 | validation "
        "below 0.5 | calibrated sim_mean / sim_std / sim_threshold |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in args.envs:
        train, held = env_tasks(name, args.max_tasks)
        train_keys, held_keys = unit_rows(embedder.embed(train)), unit_rows(embedder.embed(held))
        own = train_keys @ train_keys.T
        own[np.array([[a == b for b in train] for a in train])] = -np.inf
        train_best = own.max(axis=1)
        train_best = train_best[np.isfinite(train_best)]
        held_best = (held_keys @ train_keys.T).max(axis=1)
        if not len(train_best):  # one task text for every game (TextWorldExpress): every query meets itself
            print(
                f"| {name} | {len(train)} (1 distinct text) | - | {len(held)} | {quantiles(held_best)} | "
                f"{100 * np.mean(held_best < OFFICIAL_SIMILARITY['sim_threshold']):.0f}% | - |"
            )
            continue
        c = calibrate_similarity(train_keys, train)
        print(
            f"| {name} | {len(train)} | {quantiles(train_best)} | {len(held)} | {quantiles(held_best)} | "
            f"{100 * np.mean(held_best < OFFICIAL_SIMILARITY['sim_threshold']):.0f}% | {c['sim_mean']:.3f} / {c['sim_std']:.3f} / "
            f"{c['sim_threshold']:.3f} |"
        )
    o = OFFICIAL_SIMILARITY
    print(
        f"\nOfficial constants (MemRL's embedder): sim_mean {o['sim_mean']} / sim_std {o['sim_std']} / sim_threshold {o['sim_threshold']}"
    )


if __name__ == "__main__":
    main()
