"""The typed run reader (memrl_bench.records) against the writers: every field the runner
writes is a field of its record, a real run folder reads back whole, and a damaged file
is one error naming it and the field."""

from __future__ import annotations

import dataclasses
import json

import pytest

from memrl_bench.records import EpisodeRecord, MemoryItemRecord, RetrievedRecord, TurnRecord, UsageRecord, read_run
from memrl_bench.runfolder import CorruptRunFolderError
from memrl_bench.types import Episode, MemoryItem, Provenance, RetrievedItem, Turn, Usage
from tests.helpers import config, run_to


@pytest.mark.parametrize(
    "writer, record",
    [(Episode, EpisodeRecord), (Usage, UsageRecord), (Turn, TurnRecord), (RetrievedItem, RetrievedRecord), (MemoryItem, MemoryItemRecord)],
)
def test_every_written_field_is_read_back(writer, record):
    written = {f.name for f in dataclasses.fields(writer)}
    assert written == set(record.model_fields), f"{writer.__name__} and {record.__name__} disagree: {written ^ set(record.model_fields)}"


def test_a_run_folder_reads_back_as_the_runner_wrote_it(tmp_path):
    metrics, folder = run_to(tmp_path, "run", config(protocol={"epochs": 2, "batch_size": 8, "checkpoint_interval_s": 0}))
    run = read_run(folder, require_complete=True)
    lines = (folder / "episodes.jsonl").read_text().splitlines()
    assert [e.model_dump() for e in run.episodes] == [json.loads(line) for line in lines]
    assert run.complete and run.metrics.episodes == metrics["episodes"] == len(run.played)
    assert run.manifest.method == "memrl" and run.manifest.env.name == "synthetic" and run.manifest.labels == ["synthetic"]
    assert len(run.items) == metrics["memory_final"]["items"] and all(i.provenance.phase == "train" for i in run.items)
    assert {e.phase_name for e in run.episodes} == {"train", "validation", "test_in_distribution", "test_out_of_distribution"}


def test_a_damaged_record_names_its_file_line_and_field(tmp_path):
    _, folder = run_to(tmp_path, "run", config(protocol={"epochs": 1, "batch_size": 8, "checkpoint_interval_s": 0}))
    log = folder / "episodes.jsonl"
    lines = log.read_text().splitlines()
    second = json.loads(lines[1])
    second["success"] = "maybe"
    log.write_text("\n".join([lines[0], json.dumps(second), *lines[2:]]) + "\n")
    with pytest.raises(CorruptRunFolderError, match=r"episodes.jsonl line 2: success: Input should be a valid boolean"):
        read_run(folder)
    items = MemoryItem("m", "text", Provenance("t", "train", "train", 1, "e", True)).to_dict()
    assert MemoryItemRecord.model_validate(items).provenance.episode_id == "e"


def test_sealing_a_manifest_written_before_digests_adds_only_what_the_runner_writes(tmp_path):
    """scripts/seal_manifests.py (the migration of manifests from before digests): a manifest
    without its digest and schedule size is refused by readers; sealed, it is byte for byte the
    one the runner writes (the schedule's size computed from its own roles and split sizes)."""
    import subprocess
    import sys
    from pathlib import Path

    from memrl_bench.runfolder import DIGEST, SCHEDULE_EPISODES

    root = Path(__file__).resolve().parents[1]
    _, folder = run_to(tmp_path, "run", config(protocol={"name": "poison", "epochs": 2, "batch_size": 8, "checkpoint_interval_s": 0, "poison_share": 0.25, "poison_epoch": 2}))
    written = (folder / "manifest.json").read_bytes()
    old = {k: v for k, v in json.loads(written).items() if k not in (DIGEST, SCHEDULE_EPISODES)}
    (folder / "manifest.json").write_text(json.dumps(old, indent=1, sort_keys=True))
    with pytest.raises(CorruptRunFolderError, match="has no manifest_sha256 .*scripts/seal_manifests.py"):
        read_run(folder)
    seal = [sys.executable, str(root / "scripts" / "seal_manifests.py"), str(tmp_path)]
    done = subprocess.run(seal, capture_output=True, text=True, env={"PYTHONPATH": str(root), "PATH": ""})
    assert done.returncode == 0 and "sealed 1 of 1 manifests" in done.stderr, done.stderr
    assert (folder / "manifest.json").read_bytes() == written
    assert read_run(folder, require_complete=True).complete
