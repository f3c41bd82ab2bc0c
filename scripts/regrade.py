"""Re-grade logged multiple-choice episodes with the current answer reader, with no model call.

For every run folder under the given roots whose env is MMLU, each logged episode's completion
(from transcripts.jsonl.gz) is read again by memrl_bench.core.answers and checked against the key:
what the run scored then, what the current reader scores now, on the same completions. Training
episodes are re-graded too, but the memory those runs learned came from the old grades, so only
a re-run (same command, same response cache) shows what learning would have done with the new
ones; this script isolates the grader.

    PYTHONPATH=. python scripts/regrade.py results/critique_real            # a table per run and phase
    PYTHONPATH=. python scripts/regrade.py results/critique_real --changes  # every completion read differently
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import Counter, defaultdict
from pathlib import Path

from memrl_bench.core.answers import read_answer
from memrl_bench.core.records import read_run
from memrl_bench.core.runfolder import run_folders
from memrl_bench.envs.mmlu import read_questions


def regrade(folder: Path, mmlu: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    """(one row per episode: phase, old and new success, old and new answer; the changed readings)."""
    run = read_run(folder)
    with gzip.open(folder / "transcripts.jsonl.gz", "rt") as lines:
        acting = {r["episode_id"]: r["acting"] for r in map(json.loads, lines)}
    rows, changes = [], []
    for episode in run.played:
        record = mmlu[episode.task_id]
        call = acting[episode.episode_id][-1]
        reading = read_answer(
            call["completion"], "letter", finished=call["finish_reason"] != "length", choices=record["choices"], question=record["question"]
        )
        old_answer = episode.turns[-1].action if episode.turns and episode.turns[-1].action else None
        rows.append(
            {
                "phase": episode.phase,
                "old": episode.success,
                "new": reading.answer == record["answer"],
                "old_answer": old_answer,
                "new_answer": reading.answer,
            }
        )
        if reading.answer != old_answer:
            changes.append(
                {
                    "run": folder.name,
                    "episode": episode.episode_id,
                    "old": old_answer,
                    "new": reading.answer,
                    "rule": reading.rule,
                    "finish_reason": call["finish_reason"],
                    "completion": call["completion"],
                }
            )
    return rows, changes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--mmlu-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "mmlu")
    parser.add_argument("--changes", action="store_true", help="print every completion read differently")
    args = parser.parse_args()
    mmlu = read_questions(args.mmlu_dir)
    by_method: dict[tuple[str, str], list[dict]] = defaultdict(list)
    all_changes = []
    print("| run | phase | episodes | SR then | SR now | answers read differently |")
    print("|---|---|---:|---:|---:|---:|")
    for root in args.roots:
        for folder in run_folders(root):
            rows, changes = regrade(folder, mmlu)
            all_changes += changes
            method = read_run(folder).manifest.method
            for phase in sorted({r["phase"] for r in rows}):
                of_phase = [r for r in rows if r["phase"] == phase]
                by_method[(f"{folder.parent.name}/{method}", phase)] += of_phase
                differ = sum(r["old_answer"] != r["new_answer"] for r in of_phase)
                print(
                    f"| {folder.parent.name}/{folder.name} | {phase} | {len(of_phase)} | "
                    f"{sum(r['old'] for r in of_phase) / len(of_phase):.3f} | {sum(r['new'] for r in of_phase) / len(of_phase):.3f} | "
                    f"{differ} |"
                )
    print("\n| group/method | phase | episodes | SR then | SR now | change |")
    print("|---|---|---:|---:|---:|---:|")
    for (method, phase), rows in sorted(by_method.items()):
        then, now = sum(r["old"] for r in rows) / len(rows), sum(r["new"] for r in rows) / len(rows)
        print(f"| {method} | {phase} | {len(rows)} | {then:.3f} | {now:.3f} | {now - then:+.3f} |")
    kinds = Counter((c["old"] is None, c["new"] is None, c["rule"]) for c in all_changes)
    print(
        f"\n{len(all_changes)} episodes read differently: "
        + "; ".join(
            f"{'none' if o else 'a letter'} -> {'none' if n else 'a letter'} ({rule}): {k}" for (o, n, rule), k in kinds.most_common()
        )
    )
    if args.changes:
        for change in all_changes:
            print(json.dumps(change, ensure_ascii=False))


if __name__ == "__main__":
    main()
