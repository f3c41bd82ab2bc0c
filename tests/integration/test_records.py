"""The typed run reader (memrl_bench.core.records): a real run folder reads back whole as the
records the runner wrote (memrl_bench/core/schema.py), what the runner writes once per run is
checked against the same schema, and a damaged file is one error naming it and the field."""

from __future__ import annotations

import json

import pytest

from memrl_bench.core.records import read_run
from memrl_bench.core.runfolder import CorruptRunFolderError
from memrl_bench.core.schema import Episode, ManifestRecord, MemoryItem, MetricsRecord, Provenance
from tests.helpers import config, run_to


def test_a_run_folder_reads_back_as_the_runner_wrote_it(tmp_path):
    metrics, folder = run_to(tmp_path, "run", config(protocol={"epochs": 2, "batch_size": 8, "checkpoint_interval_s": 0}))
    run = read_run(folder, require_complete=True)
    lines = (folder / "episodes.jsonl").read_text().splitlines()
    assert all(type(e) is Episode for e in run.episodes) and all(type(i) is MemoryItem for i in run.items)
    assert [e.to_dict() for e in run.episodes] == [json.loads(line) for line in lines]
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
    assert MemoryItem.from_dict(items).provenance.episode_id == "e"


def test_a_damaged_nested_field_is_named_by_its_path(tmp_path):
    """The writer's dataclasses, validated on reading: a turn or a memory's provenance is checked as deep as it is written."""
    _, folder = run_to(tmp_path, "run", config(protocol={"epochs": 1, "batch_size": 8, "checkpoint_interval_s": 0}))
    log = folder / "episodes.jsonl"
    lines = log.read_text().splitlines()
    first = json.loads(lines[0])
    first["turns"][0]["reward"] = "lots"
    log.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with pytest.raises(CorruptRunFolderError, match=r"episodes.jsonl line 1: turns.0.reward: Input should be a valid number"):
        read_run(folder)
    with pytest.raises(ValueError, match=r"provenance.epoch"):
        MemoryItem.from_dict(
            {
                "id": "m",
                "content": "",
                "provenance": {"task_id": "t", "split": "train", "phase": "train", "epoch": "first", "episode_id": "e", "success": True},
            }
        )


def test_what_is_written_once_per_run_is_checked_against_its_schema(tmp_path):
    """manifest.json and metrics.json: a key the schema does not declare (nor the run's protocol) is
    refused before it is written, so a reader never meets a block no one declared."""
    metrics, folder = run_to(tmp_path, "run", config(protocol={"epochs": 1, "batch_size": 8, "checkpoint_interval_s": 0}))
    assert MetricsRecord.checked(metrics) is metrics
    with pytest.raises(ValueError, match=r"MetricsRecord: the runner writes undeclared keys \['replay'\]"):
        MetricsRecord.checked({**metrics, "replay": {}})
    assert MetricsRecord.checked({**metrics, "replay": {}}, own=("replay",))["replay"] == {}
    with pytest.raises(ValueError, match="episodes"):
        MetricsRecord.checked({**metrics, "episodes": "many"})
    manifest = json.loads((folder / "manifest.json").read_text())
    assert ManifestRecord.checked(manifest) is manifest
    with pytest.raises(ValueError, match=r"undeclared keys \['transfer'\]"):
        ManifestRecord.checked({**manifest, "transfer": {}})


def test_sealing_a_manifest_written_before_digests_adds_only_what_the_runner_writes(tmp_path):
    """scripts/seal_run_folders.py (the migration of run folders from before digests): a manifest
    without its digest and schedule size, a COMPLETE without the metrics' digest, are refused by
    readers; sealed, each is byte for byte what the runner writes (the schedule's size computed
    from the manifest's own roles and split sizes)."""
    import subprocess
    import sys
    from pathlib import Path

    from memrl_bench.core.runfolder import DIGEST, SCHEDULE_EPISODES

    root = Path(__file__).resolve().parents[2]
    _, folder = run_to(
        tmp_path,
        "run",
        config(
            protocol={"name": "poison", "epochs": 2, "batch_size": 8, "checkpoint_interval_s": 0, "poison_share": 0.25, "poison_epoch": 2}
        ),
    )
    written, complete = (folder / "manifest.json").read_bytes(), (folder / "COMPLETE").read_bytes()
    old = {k: v for k, v in json.loads(written).items() if k not in (DIGEST, SCHEDULE_EPISODES)}
    (folder / "manifest.json").write_text(json.dumps(old, indent=1, sort_keys=True))
    with pytest.raises(CorruptRunFolderError, match="has no manifest_sha256 .*scripts/seal_run_folders.py"):
        read_run(folder)
    seal = [sys.executable, str(root / "scripts" / "seal_run_folders.py"), str(tmp_path)]
    done = subprocess.run(seal, capture_output=True, text=True, env={"PYTHONPATH": str(root), "PATH": ""})
    assert done.returncode == 0 and "sealed 1 of 1 manifests and 0 COMPLETE markers" in done.stderr, done.stderr
    assert (folder / "manifest.json").read_bytes() == written
    assert read_run(folder, require_complete=True).complete
    (folder / "COMPLETE").write_text("complete\n")  # as runs wrote it before it held the metrics' digest
    with pytest.raises(CorruptRunFolderError, match="records no metrics_sha256 .*scripts/seal_run_folders.py"):
        read_run(folder)
    done = subprocess.run(seal, capture_output=True, text=True, env={"PYTHONPATH": str(root), "PATH": ""})
    assert done.returncode == 0 and "sealed 0 of 1 manifests and 1 COMPLETE markers" in done.stderr, done.stderr
    assert (folder / "COMPLETE").read_bytes() == complete and read_run(folder, require_complete=True).complete
