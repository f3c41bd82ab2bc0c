"""The LLB-DB study's tables: this model beside MemRL's published LLB-DB numbers, what each arm cost an episode, and
held-out success by how many failed episodes were among the memories injected.

    python scripts/llb_db_tables.py results/llb_db            # prints the three tables
    python scripts/llb_db_tables.py results/llb_db --readme README.md   # also rewrites the README's paper table

Reads every complete run folder below the study (memrl_bench.core.records, which refuses damaged ones). The paper's
numbers are MemRL's (arXiv 2601.03192, GPT-4o-mini on LifelongAgentBench-DB): Table 1, runtime learning (last epoch SR /
CSR), and Table 2, the held-out 30%. Ours: the last training epoch's SR and the CSR over the training epochs on the tasks
memory is learned from (runtime learning), and the held-out test SR with its 95% interval over the test tasks and the
difference to no memory paired on the test task. Cost: tokens and calls per episode, injected characters per test
episode and the share of episodes ending at the step limit (seconds: scripts/bench_llb_db_cost.py, on an idle machine;
an arm replayed from the response cache logs the replay's seconds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from memrl_bench.core import metrics
from memrl_bench.core.records import read_run
from memrl_bench.core.stats import t_interval
from memrl_bench.findings import arm_label, test_splits
from memrl_bench.findings.measures import last_epoch_outcomes

START, END = "<!-- llb-db-paper:start -->", "<!-- llb-db-paper:end -->"

# MemRL (arXiv 2601.03192), GPT-4o-mini on LLB-DB: Table 1 (runtime learning: last epoch, CSR) and Table 2 (held-out 30%).
PAPER = {
    "none": ("0.860", "0.841"),
    "rag": ("0.914 / 0.916", "0.920"),
    "selfrag": ("–", "0.881"),
    "mem0": ("0.920 / 0.926", "0.935"),
    "memp": ("0.960 / 0.966", "0.928"),
    "memrl": ("0.960 / 0.972", "0.942"),
}
NAMES = {"none": "No memory", "rag": "RAG", "selfrag": "Self-RAG", "mem0": "Mem0", "memp": "MemP"}
OFFICIAL = "memrl ε=0.01"  # the official LLB preset's arm (conf/memrl_preset/llb_db.yaml)


def load(study: Path) -> dict[str, object]:
    """Arm label -> its records, for every complete run below `study`."""
    runs = {}
    for manifest in sorted(study.rglob("manifest.json")):
        if (manifest.parent / "COMPLETE").exists():
            records = read_run(manifest.parent, require_complete=True)
            runs[arm_label(records.manifest.config["method"])] = records
    return runs


def _order(label: str) -> tuple:
    method = label.split()[0]
    return (list(PAPER).index(method) if method in PAPER else len(PAPER), label != OFFICIAL, label)


def _test(records) -> dict[str, float]:
    """Test task -> its success in the last test epoch, every split playing test pooled (as the findings read it)."""
    return last_epoch_outcomes(records.episodes, test_splits(records.manifest))


def _name(label: str) -> str:
    """How the table names an arm: the paper's names; MemRL by its epsilon, the official preset said."""
    method = label.split()[0]
    name = f"MemRL {label.removeprefix('memrl ')}" if method == "memrl" else NAMES.get(method, label)
    return name + (" (the official LLB preset)" if label == OFFICIAL else "")


def paper_table(runs: dict) -> str:
    none = _test(runs["none"]) if "none" in runs else {}
    model = next(iter(runs.values())).manifest.config["llm"]["model"] if runs else "?"
    lines = [
        f"| method | MemRL paper, GPT-4o-mini: runtime learning, last epoch / CSR | paper: held-out | here, {model}: runtime learning, "
        "last epoch / CSR | here: held-out test SR | here: held-out - none, paired on the test task |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    shown = set()
    for label in sorted(runs, key=_order):
        records = runs[label]
        method = records.manifest.config["method"]["name"]
        paper = PAPER.get(method, ("–", "–")) if method not in shown else ("", "")
        shown.add(method)
        sr, csr = metrics.success_rates(records.episodes)["train"], metrics.cumulative_success_rates(records.episodes)
        tasks = len({e.task_id for e in records.episodes if e.phase == "train"})
        test = _test(records)
        diff = t_interval(test[t] - none[t] for t in test if t in none).text() if label != "none" else "baseline"
        lines.append(
            f"| {_name(label)} | {paper[0]} | {paper[1]} | {sr[max(sr)]:.3f} / {csr[max(csr)]:.3f} ({max(sr)} epochs, {tasks} tasks) "
            f"| {t_interval(test.values()).text()} | {diff} |"
        )
    for method in PAPER:
        if method not in shown:
            lines.append(f"| {NAMES[method]} | {PAPER[method][0]} | {PAPER[method][1]} | not run here | | |")
    return "\n".join(lines)


def cost_table(runs: dict) -> str:
    lines = [
        "| arm | episodes | act calls / episode | act prompt tokens / episode (train, test) | completion tokens / episode | memory-call "
        "tokens / training episode | injected chars / test episode | ended at the step limit |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label in sorted(runs, key=_order):
        eps = [e for e in runs[label].episodes if e.first_attempt]
        train, test = [e for e in eps if e.phase == "train"], [e for e in eps if e.phase == "test"]
        mean = statistics.fmean
        lines.append(
            f"| {label} | {len(eps)} | {mean(e.act_usage.calls for e in eps):.2f} | "
            f"{_prompt_tokens(train):,.0f}, {_prompt_tokens(test):,.0f} | "
            f"{mean(e.act_usage.completion_tokens for e in eps):.0f} | "
            f"{mean(e.memory_usage.prompt_tokens + e.memory_usage.completion_tokens for e in train):,.0f} | "
            f"{mean(e.injected_chars for e in test):,.0f} | {mean(e.status == 'step_limit' for e in eps):.2f} |"
        )
    return "\n".join(lines)


FAILED_SHARES = ("no memory injected", "none failed", "some, at most half, failed", "more than half failed")


def _failed_share(retrieved: list) -> str:
    failed = sum(u.source_success is False for u in retrieved)
    if not retrieved:
        return FAILED_SHARES[0]
    return FAILED_SHARES[1] if not failed else FAILED_SHARES[2] if 2 * failed <= len(retrieved) else FAILED_SHARES[3]


def failures_table(runs: dict) -> str:
    """Per memory arm, its test episodes by how many of the memories injected came from failed episodes, beside none's SR on
    the same tasks: what a weak model's own failures teach it when they are shown as examples."""
    none = _test(runs["none"]) if "none" in runs else {}
    lines = [
        "| arm | failed episodes among the memories injected | test episodes | SR | none's SR on the same tasks | difference |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for label in sorted(runs, key=_order):
        test = _test(runs[label])
        groups: dict[str, list[str]] = {}
        for e in runs[label].episodes:
            if e.phase == "test" and e.task_id in test and label != "none":
                groups.setdefault(_failed_share(e.retrieved), []).append(e.task_id)
        for key in (k for k in FAILED_SHARES if k in groups):
            tasks = [t for t in groups[key] if t in none]
            if tasks:
                mine, theirs = statistics.fmean(test[t] for t in tasks), statistics.fmean(none[t] for t in tasks)
                lines.append(f"| {label} | {key} | {len(tasks)} | {mine:.2f} | {theirs:.2f} | {mine - theirs:+.2f} |")
    return "\n".join(lines)


def _prompt_tokens(episodes: list) -> float:
    return statistics.fmean(e.act_usage.prompt_tokens for e in episodes) if episodes else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", type=Path)
    parser.add_argument("--readme", type=Path, help="rewrite the paper table between the markers of this file")
    args = parser.parse_args()
    runs = load(args.study)
    if not runs:
        print(f"llb_db_tables: no complete run below {args.study}", file=sys.stderr)
        return 2
    table = paper_table(runs)
    if args.readme:
        text = args.readme.read_text()
        if text.count(START) != 1 or text.count(END) != 1:
            print(f"llb_db_tables: {args.readme} must hold {START} and {END} once each", file=sys.stderr)
            return 2
        before, rest = text.split(START)
        args.readme.write_text(before + START + "\n" + table + "\n" + rest[rest.index(END) :])
    print(table, "", cost_table(runs), "", failures_table(runs), sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
