"""The transfer protocol (memrl_bench/protocols/transfer.py): a source run's final memory tested, frozen, in
another env; its guards, the synthetic world's ground truth for memories it did not write, the
metrics pinned on a hand-built log, and the report's pairing with `none` and its matrix."""

import json
import shutil
from pathlib import Path

import pytest

from memrl_bench.core.config import ConfigError, ConfigMismatchError
from memrl_bench.core.runfolder import RunFolder
from memrl_bench.core.schema import RetrievedItem, strip_measured
from memrl_bench.envs.synthetic import SyntheticEnv
from memrl_bench.protocols import ProtocolViolation, transfer
from memrl_bench.runner.loop import run
from tests.helpers import SMALL_WORLD, config, record

TRANSFER = {"name": "transfer", "epochs": 0, "validate_every_epoch": False, "checkpoint_interval_s": 0}
SOURCE_PROTOCOL = {"epochs": 2, "batch_size": 8, "validate_every_epoch": False, "checkpoint_interval_s": 0}


def world(types: list[int]) -> dict:
    return SMALL_WORLD | {"task_types": types}


def source_run(tmp: Path, name: str, method: str = "memrl", types: list[int] | None = None, **extra) -> Path:
    folder = tmp / "sources" / name
    run(config(method={"name": method}, protocol=SOURCE_PROTOCOL, **{"env": world(types or [0, 1]), **extra}), folder)
    return folder


def transfer_cfg(source: Path, method: str = "memrl", types: list[int] | None = None, **protocol) -> dict:
    return config(method={"name": method}, env=world(types or [0, 1]), protocol=TRANSFER | {"transfer_from": str(source)} | protocol)


def log(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]


def test_a_source_tested_on_its_own_world_repeats_its_held_out_test(tmp_path):
    """The diagonal of the matrix: the same memory on the same test tasks at outcome temperature 0
    gives the source's own test episodes (same retrievals, same outcomes), with no training here."""
    source = source_run(tmp_path, "memrl")
    metrics = run(transfer_cfg(source), tmp_path / "target")
    held_out = [strip_measured(r) for r in log(source) if r["phase"] == "test"]
    transferred = [strip_measured(r) for r in log(tmp_path / "target")]
    for episodes in (held_out, transferred):
        for r in episodes:  # the epoch names the episode, whose own (never stored) lesson the synthetic actor draws from its id
            for key in ("epoch", "episode_id", "memory_items_after", "memory_bytes_after", "memory_groups_after"):
                r.pop(key)
            for key in ("lesson_quality", "lesson_utility", "lesson_harmful"):
                r["info"].pop(key)
    assert transferred == held_out and all(r["phase"] == "test" for r in log(tmp_path / "target"))
    block = metrics["transfer"]
    assert block["test_split"] == "test_in_distribution" and block["source_method"] == "memrl"
    assert (
        block["test_success"]["test_in_distribution"]
        == json.loads((source / "metrics.json").read_text())["success_rate"]["test_in_distribution"]["2"]
    )
    assert block["inherited_items"] == 2 * 40 and "transfer" in metrics["labels"]
    manifest = json.loads((tmp_path / "target" / "manifest.json").read_text())
    assert manifest["transfer"]["source_config_hash"] == json.loads((source / "manifest.json").read_text())["config_hash"]


def test_a_memory_from_another_world_is_valued_by_the_world_that_wrote_it():
    """Task ids repeat across worlds; a transferred memory keeps its writer's type and lesson."""
    writer = SyntheticEnv({k: v for k, v in world([0, 1]).items() if k not in ("name", "seed")})
    reader = SyntheticEnv({k: v for k, v in world([1, 2]).items() if k not in ("name", "seed")})
    source = writer.tasks("train")[1]  # writer: type 1; the reader's task of this id is of type 2
    assert source.data["task_type"] == 1 and reader.tasks("train")[1].data["task_type"] == 2
    item = RetrievedItem("m", 1.0, source_task_id=source.id, source_episode_id="train-e01-00001-s0", source_epoch=1, source_success=True)
    quality = writer.lesson_quality(item.source_episode_id, True, 1)
    assert reader.item_effect(item, task_type=2) == pytest.approx(quality)  # read as its own task: wrong type
    reader.memories_from(world([0, 1]), seed=0)
    assert reader.item_effect(item, task_type=1) == pytest.approx(quality) and reader.item_effect(item, task_type=2) == 0.0
    other_seed = SyntheticEnv({k: v for k, v in world([1, 2]).items() if k not in ("name", "seed")}, seed=7)
    other_seed.memories_from(world([0, 1]), seed=0)  # another seed draws other types: no type in common
    assert other_seed.item_effect(item, task_type=1) == other_seed.settings.cross_type_match * quality
    with pytest.raises(ConfigError, match="synthetic world that wrote it"):
        reader.memories_from({"name": "llb_db"}, seed=0)


def test_memory_of_disjoint_types_transfers_nothing_and_shared_types_do(tmp_path):
    """Ground truth end to end: MemRL's memory of types 0-1 in a world of types 2-3 gives exactly
    none's outcomes (nothing passes its threshold), in a world sharing type 1 it changes some."""
    for method in ("memrl", "none"):
        source_run(tmp_path, method, method)
    sr = {}
    for method in ("memrl", "none"):
        for types in ([2, 3], [1, 2]):
            metrics = run(transfer_cfg(tmp_path / "sources", method, types), tmp_path / f"{method}-{types[0]}")
            sr[method, types[0]] = metrics["transfer"]["test_success"]["test_in_distribution"]
            if method == "memrl":
                sr["injected", types[0]] = metrics["transfer"]["test_injected_share"]["test_in_distribution"]
    assert sr["memrl", 2] == sr["none", 2] and sr["injected", 2] == 0.0
    assert sr["injected", 1] > 0 and sr["memrl", 1] != sr["none", 1]


def test_the_source_is_found_by_method_seeds_and_env_and_refused_when_it_cannot_be(tmp_path):
    for types in ([0, 1], [2, 3]):
        source_run(tmp_path, f"memrl-{types[0]}", types=types)
    folder = tmp_path / "sources"
    with pytest.raises(transfer.TransferViolation, match="2 runs under .* could be this run's source.*transfer_source_env"):
        run(transfer_cfg(folder), tmp_path / "t0")
    metrics = run(transfer_cfg(folder, transfer_source_env={"task_types": [2, 3]}), tmp_path / "t1")
    assert metrics["transfer"]["source_run"].endswith("memrl-2") and metrics["transfer"]["source_env"]["task_types"] == [2, 3]
    with pytest.raises(transfer.TransferViolation, match="method settings differ"):
        run(transfer_cfg(folder, "rag"), tmp_path / "t2")
    with pytest.raises(transfer.TransferViolation, match="cannot be this run's source: its method settings differ"):
        run(transfer_cfg(folder / "memrl-0", "rag"), tmp_path / "t3")
    with pytest.raises(transfer.TransferViolation, match="task_order_seed is 0, this run's 1"):
        run(transfer_cfg(folder, transfer_source_env={"task_types": [2, 3]}) | {"task_order_seed": 1}, tmp_path / "t4")
    with pytest.raises(ConfigError, match="is not a folder"):
        run(transfer_cfg(tmp_path / "nowhere"), tmp_path / "t5")
    with pytest.raises(transfer.TransferViolation, match="is itself a transfer run"):
        run(transfer_cfg(tmp_path / "t1"), tmp_path / "t6")
    for refused in ("t0", "t2", "t3", "t4", "t5", "t6"):
        assert not (tmp_path / refused).exists()  # a refused start leaves nothing


def test_an_incomplete_or_damaged_source_is_refused(tmp_path):
    source = source_run(tmp_path, "memrl")
    (source / "COMPLETE").unlink()
    with pytest.raises(transfer.TransferViolation, match="not complete"):
        run(transfer_cfg(source), tmp_path / "t0")
    RunFolder(source).mark_complete()
    keys = source / "memory" / "final" / "keys.npy"
    keys.write_bytes(keys.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(Exception, match="does not match its checksum"):
        run(transfer_cfg(source), tmp_path / "t1")


def test_a_source_that_learned_on_the_targets_test_tasks_is_refused(tmp_path):
    roles = {"train": "test_in_distribution", "validation": "train", "test": ["validation"]}
    source = source_run(tmp_path, "memrl", env=world([0, 1]) | {"roles": roles})
    with pytest.raises(ProtocolViolation, match="test split 'test_in_distribution' holds 20 task.*the source run .* learned from"):
        run(transfer_cfg(source), tmp_path / "target")


def test_a_crashed_transfer_run_resumes_and_refuses_a_source_that_changed(tmp_path, monkeypatch):
    """A crash in the test phase resumes to the uninterrupted log; a source re-learned meanwhile is refused."""
    from memrl_bench.envs.synthetic import SyntheticActor

    source = source_run(tmp_path, "memrl")
    cfg = transfer_cfg(source, batch_size=5)
    run(cfg, tmp_path / "reference")
    real = SyntheticActor.play_batch

    def crash_in_third_batch(folder: Path) -> None:
        calls = {"n": 0}

        async def crashing(self, jobs, pool):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt("simulated crash")
            return await real(self, jobs, pool)

        monkeypatch.setattr(SyntheticActor, "play_batch", crashing)
        with pytest.raises(KeyboardInterrupt):
            run(cfg, folder)
        monkeypatch.setattr(SyntheticActor, "play_batch", real)
        assert len(log(folder)) == 10

    crash_in_third_batch(tmp_path / "resumed")
    run(cfg, tmp_path / "resumed")
    assert [strip_measured(r) for r in log(tmp_path / "resumed")] == [strip_measured(r) for r in log(tmp_path / "reference")]
    crash_in_third_batch(tmp_path / "changed")
    shutil.rmtree(source)
    source_run(tmp_path, "memrl", task_order_seed=3)  # another memory in the same folder
    with pytest.raises(ConfigMismatchError, match="transfer source .* changed since this run started"):
        run(cfg, tmp_path / "changed")


def test_the_audit_refuses_a_memory_the_source_did_not_learn(tmp_path):
    from memrl_bench.core.schema import MemoryItem, Provenance

    source = transfer.load_source(transfer_cfg(source_run(tmp_path, "memrl")))
    inherited = source.records.items[0]
    theirs = MemoryItem(inherited.id, inherited.content, provenance=Provenance(**inherited.provenance.to_dict()))
    transfer.audit([theirs], source)
    foreign = MemoryItem(
        "new",
        "x",
        provenance=Provenance(
            task_id="t", split="test_in_distribution", phase="test", epoch=0, episode_id="test-e00-00000-s0", success=True
        ),
    )
    with pytest.raises(ProtocolViolation, match="memory item 'new' .* not a memory the source run"):
        transfer.audit([theirs, foreign], source)


def test_the_transfer_block_on_a_hand_built_log(tmp_path):
    source = transfer.load_source(transfer_cfg(source_run(tmp_path, "memrl")))
    hit = RetrievedItem("m1", 0.9).to_dict()
    records = [
        record("a", 0, True, phase="test", split="ood", retrieved=[hit]),
        record("b", 0, False, phase="test", split="ood"),
        record("c", 0, True, phase="test", split="iid", retrieved=[hit]),
        record("d", 0, True, phase="test", split="iid", retrieved=[hit]),
        record("e", 0, False, phase="test", split="iid"),
        record("f", 0, False, phase="test", split="iid", retrieved=[hit]),
    ]
    block = transfer.metrics(records, source, source.records.items, ["iid", "ood", "unplayed"])
    assert block["test_split"] == "iid" and list(block["test_success"]) == ["iid", "ood"]
    assert block["test_success"] == {"iid": 0.5, "ood": 0.5} and block["test_injected_share"] == {"iid": 0.75, "ood": 0.5}
    assert block["inherited_items"] == len(source.records.items) == 80 and block["source_memory_sha256"] == source.memory_sha256


@pytest.mark.parametrize("protocol, message", [
    ({"name": "transfer", "epochs": 2, "transfer_from": "x"}, "needs protocol.epochs=0"),
    ({"epochs": 0}, "protocol.epochs=0 trains nothing: only protocol=transfer"),
    ({(
        "transfer_source_env"
    ): {(
        "task_types"
    ): [0]}}, (
        "protocol.transfer_source_env: not a setting of protocol=held_out; it belongs to protocol=transfer"
    )),
])  # fmt: skip
def test_transfer_settings_out_of_place_are_refused(tmp_path, protocol, message):
    with pytest.raises(ConfigError, match=message):
        run(config(protocol=protocol), tmp_path / "run")


def test_a_test_split_named_after_a_phase_is_refused(tmp_path):
    """Its episode ids (the split's name, then the epoch) would be those of that phase's episodes."""
    with pytest.raises(ConfigError, match="env.roles.test: split 'train' cannot play test"):
        run(
            config(env=SMALL_WORLD | {"roles": {"train": "validation", "test": ["train"]}}, protocol={"validate_every_epoch": False}),
            tmp_path / "run",
        )


def test_synthetic_task_types_are_checked(tmp_path):
    with pytest.raises(ConfigError, match=r"env.task_types must be distinct types in 0..3"):
        run(config(env=world([0, 4])), tmp_path / "run")


def test_the_report_pairs_each_transfer_with_none_and_fills_the_matrix(tmp_path):
    from memrl_bench.report import report

    for method in ("memrl", "none"):
        source_run(tmp_path, method, method)
    sr = {}
    for method in ("memrl", "none"):
        for types in ([0, 1], [1, 2]):
            sr[method, types[0]] = run(transfer_cfg(tmp_path / "sources", method, types), tmp_path / "runs" / f"{method}-{types[0]}")[
                "transfer"
            ]["test_success"]["test_in_distribution"]
    report(tmp_path / "runs", tmp_path / "report")
    matrix = (tmp_path / "report" / "tables" / "transfer.md").read_text()
    for target in (0, 1):
        gain = 100 * (sr["memrl", target] - sr["none", target])
        shown = "[0, 1]" if target == 0 else "[1, 2]"
        assert f"| memrl | synthetic task_types=[0, 1] | synthetic task_types={shown} | {gain:.1f} (n=1) |" in matrix
    assert "none |" not in matrix  # the baseline is what the others are measured against
    assert (tmp_path / "report" / "figures" / "transfer.svg").read_text().count("<svg") == 1
    page = (tmp_path / "report" / "report.html").read_text()
    assert '<figure id="fig-transfer">' in page and "learned in (source)" in page and "fig-streaming" not in page


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.skipif(not (SHARED / "llb").exists() or not (SHARED / "mmlu").exists(), reason=f"shared LLB-DB and MMLU data not at {SHARED}")
def test_an_llm_run_transfers_text_memory_from_llb_db_to_mmlu(tmp_path):
    """Control flow on real envs (real SQLite, the real MMLU files, MiniLM keys) with a scripted
    model: rag's LLB-DB memories, learned from SQL episodes, are injected, frozen, into MMLU
    prompts; the run is labelled, audited against the source's log and paired by the report."""
    import re

    from scripted_llm import ScriptedChatModel

    from memrl_bench.core.records import read_run

    def sql(messages: list[dict[str, str]]) -> str:
        text = "\n".join(m["content"] for m in messages if m["role"] != "system")
        return "Action: COMMIT" if "columns:" in text else "Action: SQL: SELECT * FROM " + re.findall(r"Table (\w+)\(", text)[-1]

    source_cfg = config(
        method={"name": "rag"},
        embedder={"name": "minilm"},
        actor={"max_steps": 3},
        protocol={"epochs": 1, "batch_size": 3, "validate_every_epoch": False, "test_at_end": False, "checkpoint_interval_s": 0},
    )
    source_cfg["env"] = {"name": "llb_db", "data_dir": str(SHARED / "llb"), "tasks_per_split": 3}
    run(source_cfg, tmp_path / "source", llm=ScriptedChatModel(sql))
    answers = ScriptedChatModel(lambda messages: "Answer: A")
    cfg = config(
        method={"name": "rag"},
        embedder={"name": "minilm"},
        protocol=TRANSFER | {"batch_size": 4, "transfer_from": str(tmp_path / "source")},
    )
    cfg["env"] = {"name": "mmlu", "data_dir": str(SHARED / "mmlu"), "subjects": ["marketing"], "tasks_per_split": 4}
    metrics = run(cfg, tmp_path / "target", llm=answers)
    learned = {i.content for i in read_run(tmp_path / "source").items}
    prompts = ["\n".join(m["content"] for m in call.messages) for call in answers.calls]
    assert len(prompts) == 4 and all(any(memory in prompt for memory in learned) for prompt in prompts)
    assert "SQL: SELECT * FROM" in prompts[0] and metrics["transfer"]["test_injected_share"] == {"test": 1.0}
    assert metrics["transfer"]["source_env"]["name"] == "llb_db" and "transfer" in metrics["labels"]
    assert {r.phase for r in read_run(tmp_path / "target").episodes} == {"test"}


def test_envs_are_named_by_what_tells_them_apart_among_their_own_kind():
    from memrl_bench.report.aggregate import env_labels

    configs = [
        {"name": "llb_db", "statement_timeout_s": 5.0},
        {"name": "llb_os", "workdir": "/"},
        world([0, 1]),
        world([1, 2]),
        SMALL_WORLD,
    ]
    assert env_labels(configs) == [
        "llb_db",
        "llb_os",
        "synthetic task_types=[0, 1]",
        "synthetic task_types=[1, 2]",
        "synthetic task_types=None",
    ]


def test_transfer_gain_and_the_matrix_on_hand_built_runs():
    """transfer_gain: SR with the source's memory minus the none run's of the same command (same
    target, source and seeds); a matrix cell: its mean with a t-interval over the replicates."""
    import math

    import pandas as pd

    from memrl_bench.core.stats import t_interval
    from memrl_bench.report.aggregate import protocol_numbers, transfer_matrix
    from memrl_bench.report.axes import Place
    from memrl_bench.report.load import Results

    def row(run: str, method: str, order: int, sr: float) -> dict:
        cfg = {
            "method": {"name": method},
            "env": world([1, 2]),
            "protocol": {"name": "transfer", "transfer_from": "sources"},
            "seed": 0,
            "task_order_seed": order,
        }
        block = {
            "test_split": "iid",
            "test_success": {"iid": sr, "ood": 0.0},
            "test_injected_share": {"iid": 0.5, "ood": 0.0},
            "source_env": world([0, 1]),
        }
        return {
            "run": run,
            "method": method,
            "variant": method,
            "config": cfg,
            "seed": 0,
            "task_order_seed": order,
            "complete": True,
            "protocol_metrics": {"transfer": block},
        }

    runs = pd.DataFrame(
        [
            row("m0", "memrl", 0, 0.6),
            row("n0", "none", 0, 0.4),
            row("m1", "memrl", 1, 0.5),
            row("n1", "none", 1, 0.4),
            row("m2", "memrl", 2, 0.9),
        ]
    )
    numbers = protocol_numbers(runs)
    assert numbers.loc["m0", "transfer_gain"] == pytest.approx(0.2) and numbers.loc["m1", "transfer_gain"] == pytest.approx(0.1)
    assert math.isnan(numbers.loc["m2", "transfer_gain"]) and math.isnan(
        numbers.loc["n0", "transfer_gain"]
    )  # no none twin; the baseline itself
    assert numbers.loc["m0", "transfer_sr"] == 0.6 and numbers.loc["m0", "transfer_injected_share"] == 0.5
    places = {m: Place(m, m, None, None, ()) for m in ("memrl", "none")}
    results = Results(root=Path("."), runs=runs, episodes=pd.DataFrame(), items=pd.DataFrame(), rates=pd.DataFrame(), places=places)
    [cell] = transfer_matrix(results, numbers).to_dict("records")
    expected = t_interval([0.2, 0.1])
    assert (cell["arm"], cell["source"], cell["target"], cell["n"]) == (
        "memrl",
        "synthetic task_types=[0, 1]",
        "synthetic task_types=[1, 2]",
        2,
    )
    assert (cell["mean"], cell["ci_low"], cell["ci_high"]) == pytest.approx((0.15, expected.low, expected.high)) and cell[
        "transfer_sr"
    ] == pytest.approx(0.55)


def test_the_findings_leave_transfer_runs_to_the_matrix(tmp_path):
    """A transfer run is not a held-out run of its target world: the critique's claims never pool it."""
    from memrl_bench import findings as fd
    from memrl_bench.core.stats import NOT_MEASURED

    for method in ("memrl", "none"):
        source_run(tmp_path, method, method)
        run(transfer_cfg(tmp_path / "sources", method, [1, 2]), tmp_path / "targets" / method)
    assert [r.kind for r in fd.load_runs(tmp_path / "targets")] == ["transfer", "transfer"]
    assert fd.findings(tmp_path / "targets", warn=None) == []
    helps = next(f for f in fd.findings(tmp_path, warn=None) if f.id == "memory_helps")
    by_order = next(r for r in helps.rows if "paired on the task order" in r.label)
    assert helps.verdict != NOT_MEASURED and by_order.n == 1  # the source pair only, not the transfer runs
