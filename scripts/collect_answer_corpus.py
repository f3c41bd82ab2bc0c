"""Collect the answer corpus: real single-turn completions from run folders, for labelling by hand.

Reads every run folder under the given roots (their transcripts.jsonl.gz), keeps the acting
completions of single-turn envs (MMLU: letters; BigCodeBench: code), and writes one JSON line
per distinct (model, task, completion, finish_reason): id, model, env, task_id, finish_reason,
question and choices (MMLU), the completion, `occurrences` (how many episodes produced it: the
corpus is weighted as completions occur) and `label`.

`label` is what a careful reader takes as the answer, written by hand after reading the
completion, never by running the reader: a letter, "none" (no answer stated, or cut at the
token limit before one) for MMLU; for BigCodeBench "block" (the first fenced code block),
"whole" (the whole text is the code), or "none". A re-collection keeps the labels of the
entries it finds again and writes `"label": null` for new ones, which tests/integration/test_answers.py
refuses until they are labelled.

    PYTHONPATH=. python scripts/collect_answer_corpus.py results/critique_real /work/runs/answers_1.5b
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from memrl_bench.core.records import read_run
from memrl_bench.core.runfolder import run_folders
from memrl_bench.envs.mmlu import read_questions

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "answers_corpus.jsonl"
SINGLE_TURN = {"mmlu": "letter", "bigcodebench": "code"}


def _model_name(manifest_model: dict[str, Any]) -> str:
    return str(manifest_model.get("model", "?")).split("/")[-1].removesuffix(".gguf")


def collect(roots: list[Path], mmlu_dir: Path) -> list[dict[str, Any]]:
    mmlu = read_questions(mmlu_dir)
    counts: Counter[tuple] = Counter()
    first: dict[tuple, dict[str, Any]] = {}
    for root in roots:
        for folder in run_folders(root):
            run = read_run(folder)
            env = run.manifest.config.get("env", {}).get("name")
            if env not in SINGLE_TURN or not (folder / "transcripts.jsonl.gz").exists():
                continue
            model = _model_name(run.manifest.model)
            with gzip.open(folder / "transcripts.jsonl.gz", "rt") as lines:
                for line in lines:
                    record = json.loads(line)
                    for call in record["acting"]:
                        key = (model, record["task_id"], call["completion"], call["finish_reason"])
                        counts[key] += 1
                        first.setdefault(key, {"env": env})
    entries = []
    for key, count in counts.items():
        model, task_id, completion, finish_reason = key
        env = first[key]["env"]
        digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:12]
        entry: dict[str, Any] = {
            "id": f"{model}/{task_id}/{digest}",
            "model": model,
            "env": env,
            "task_id": task_id,
            "finish_reason": finish_reason,
        }
        if env == "mmlu":
            record = mmlu[task_id]
            entry.update(question=record["question"], choices=record["choices"], gold=record["answer"])
        entry.update(completion=completion, occurrences=count, label=None)
        entries.append(entry)
    return sorted(entries, key=lambda e: e["id"])


def merge(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`new` with the labels of `old` entries of the same id; old entries not found again are kept."""
    labels = {e["id"]: e for e in old}
    kept = ("label", "label_note", "reader_disagrees")
    merged = [{**e, **{k: labels[e["id"]][k] for k in kept if k in labels[e["id"]]}} if e["id"] in labels else e for e in new]
    found = {e["id"] for e in new}
    return merged + [e for e in old if e["id"] not in found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="+", type=Path, help="folders holding run folders")
    parser.add_argument("--mmlu-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "mmlu")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    old = [json.loads(line) for line in args.out.read_text().splitlines()] if args.out.exists() else []
    entries = merge(old, collect(args.roots, args.mmlu_dir))
    args.out.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries))
    unlabelled = sum(e["label"] is None for e in entries)
    print(f"{args.out}: {len(entries)} completions, {unlabelled} without a label")


if __name__ == "__main__":
    main()
