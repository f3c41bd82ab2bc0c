"""The contract of every registered protocol (built in or installed), as the method contract is of
every method: composed from its YAML, it runs end to end on the synthetic world; its schedule is
deterministic (resume relies on it) and as long as its manifest says;
metrics.json carries the blocks it declares, its runs carry its labels, the report gets exactly its
columns, and the findings give its runs a kind."""

from __future__ import annotations

import json

import pytest

from memrl_bench import protocols
from memrl_bench.core import registry
from memrl_bench.findings import load_runs
from memrl_bench.runner.loop import run
from tests.helpers import composed

SMALL = [
    "env.tasks.train=16",
    "env.tasks.validation=8",
    "env.tasks.test_in_distribution=8",
    "env.tasks.test_out_of_distribution=8",
    "method=memrl",
]
# What a protocol needs beyond its YAML to run on the small world (its own keys, sized to it).
NEEDS = {
    "held_out": ["protocol.epochs=2", "protocol.batch_size=8"],
    "runtime_learning": ["protocol.epochs=2", "protocol.batch_size=8"],
    "poison": ["protocol.epochs=2", "protocol.batch_size=8"],
    "repair": ["protocol.epochs=2", "protocol.batch_size=8", "protocol.corrupt_epochs=1"],
    "drift": ["protocol.epochs=2", "protocol.batch_size=8", "protocol.drift.epoch=2", "protocol.drift.window=4"],
    "streaming": [],
    "replay": ["protocol.replay_every=4", "protocol.replay_tasks=2"],
}


def _play(name: str, folder, tmp_path) -> tuple[dict, dict]:
    if name == "transfer":  # its memory comes from a complete source run
        source = tmp_path / "source"
        run(composed(*SMALL, *NEEDS["held_out"]), source)
        cfg = composed(*SMALL, "protocol=transfer", f"protocol.transfer_from={source}")
    else:
        cfg = composed(*SMALL, f"protocol={name}", *NEEDS[name])
    return cfg, run(cfg, folder)


def test_every_built_in_protocol_is_under_contract():
    assert sorted(registry.names("protocol")) == sorted([*NEEDS, "transfer"])


@pytest.mark.parametrize("name", registry.names("protocol"))
def test_the_protocol_keeps_its_contract(name, tmp_path):
    folder = tmp_path / "runs" / name
    cfg, metrics = _play(name, folder, tmp_path)
    protocol = protocols.build(cfg["protocol"])
    assert type(protocol) is registry.get("protocol", name)

    # metrics.json: its declared blocks and labels
    assert set(protocol.metrics_keys) <= set(metrics), (
        f"declared blocks missing from metrics.json: {set(protocol.metrics_keys) - set(metrics)}"
    )
    assert set(protocol.run_labels()) <= set(metrics["labels"])
    # the report: exactly its columns, each a number or None
    numbers = type(protocol).report_numbers({k: metrics[k] for k in protocol.metrics_keys})
    assert set(numbers) <= set(protocol.report_columns), f"numbers without a column: {set(numbers) - set(protocol.report_columns)}"
    assert all(v is None or isinstance(v, (int, float)) for v in numbers.values())

    # the schedule: what the manifest announced was played, and the same again in another folder
    manifest = json.loads((folder / "manifest.json").read_text())
    log = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    assert manifest["schedule_episodes"] == len(log)
    if name != "transfer":  # its split sizes are the source's concern: no old transfer folder needs sealing
        assert protocol.schedule_size(manifest["env"]["roles"], manifest["split_sizes"]) == len(log)
    again = run(cfg, tmp_path / "again" / name)
    assert [json.loads(line)["task_id"] for line in (tmp_path / "again" / name / "episodes.jsonl").read_text().splitlines()] == [
        r["task_id"] for r in log
    ]
    assert again["labels"] == metrics["labels"]

    # the findings: a kind, its own
    (run_read,) = [r for r in load_runs(tmp_path / "runs", workers=1, warn=None) if r.path.name == name]
    assert run_read.kind == type(protocol).kind(cfg["protocol"])
