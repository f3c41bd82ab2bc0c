"""The fair protocol's guards fire, and the schedule is what it claims."""

import json
from pathlib import Path

import pytest

from memrl_bench.core.schema import MemoryItem, Provenance, Task, Usage
from memrl_bench.methods.base import LearnResult
from memrl_bench.methods.none import NoMemory
from memrl_bench.protocols.base import ProtocolViolation, check_disjoint
from memrl_bench.runner.loop import ConfigError, run
from tests.helpers import build_schedule, config, protocol


def test_overlapping_splits_are_refused():
    a = [Task("t1", "train", "x"), Task("t2", "train", "y")]
    b = [Task("t2", "validation", "y")]
    with pytest.raises(ProtocolViolation, match="'t2'"):
        check_disjoint({"train": a, "validation": b})


def test_overlapping_roles_in_a_run_are_refused(tmp_path):
    cfg = config(env={"roles": {"train": "train", "validation": "validation", "test": ["train"]}})
    with pytest.raises(ProtocolViolation, match="overlap"):
        run(cfg, tmp_path / "run")


def test_skip_tasks_leaves_out_the_first_tasks_of_a_role_before_max_tasks(tmp_path):
    """A pilot on tasks a study that takes the first ones never sees: train tasks 30.. of 40."""
    from memrl_bench.core.records import read_run

    cfg = config(
        method={"name": "none"},
        protocol={"epochs": 1, "skip_tasks": {"train": 30}, "max_tasks": {"train": 5}, "validate_every_epoch": False, "test_at_end": False},
    )
    run(cfg, tmp_path / "pilot")
    study = config(
        method={"name": "none"}, protocol={"epochs": 1, "max_tasks": {"train": 30}, "validate_every_epoch": False, "test_at_end": False}
    )
    run(study, tmp_path / "study")
    pilot_tasks = {e.task_id for e in read_run(tmp_path / "pilot").episodes}
    study_tasks = {e.task_id for e in read_run(tmp_path / "study").episodes}
    assert len(pilot_tasks) == 5 and len(study_tasks) == 30 and not pilot_tasks & study_tasks


class MutatingMethod(NoMemory):
    """Changes its memory whenever it retrieves, also in evaluation: must fail the run."""

    name = "mutating"
    calls = 0

    def retrieve(self, query):
        self.calls += 1
        return super().retrieve(query)

    def snapshot(self, path: Path) -> None:
        (path / "items.jsonl").write_text(f"{self.calls}\n")


def test_a_method_that_mutates_memory_in_evaluation_fails_the_run(tmp_path, monkeypatch):
    from memrl_bench.core import registry

    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda kind, name: MutatingMethod if name == "mutating" else real_get(kind, name))
    with pytest.raises(ProtocolViolation, match="memory changed during the validation phase"):
        run(config(method={"name": "mutating"}), tmp_path / "run")
    assert not (tmp_path / "run" / "COMPLETE").exists()


class ChargesElsewhere(NoMemory):
    """Charges its memory calls to an episode that is not in the batch: that cost would vanish from the log."""

    name = "charges_elsewhere"

    def learn(self, batch):
        return LearnResult(usage_by_episode={"train-e99-00000-s0": Usage(calls=1, prompt_tokens=10)})


def test_memory_cost_charged_outside_the_learned_batch_fails_the_run(tmp_path, monkeypatch):
    from memrl_bench.core import registry

    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda kind, name: ChargesElsewhere if name == "charges_elsewhere" else real_get(kind, name))
    with pytest.raises(ProtocolViolation, match="'train-e99-00000-s0', which is not an episode of the batch"):
        run(config(method={"name": "charges_elsewhere"}), tmp_path / "run")
    assert not (tmp_path / "run" / "COMPLETE").exists()


def test_audit_rejects_memory_from_evaluation():
    good = MemoryItem("m1", "x", Provenance("t1", "train", "train", 1, "train-e01-00000-s0", True))
    bad = MemoryItem("m2", "y", Provenance("t9", "validation", "validation", 1, "validation-e01-00000-s0", True))
    audit = protocol({}).audit
    audit([good], {"train-e01-00000-s0"}, {"train": "train"})
    with pytest.raises(ProtocolViolation, match="m2"):
        audit([good, bad], {"train-e01-00000-s0"}, {"train": "train"})


def test_audit_rejects_an_item_from_no_logged_episode():
    ghost = MemoryItem("m3", "z", Provenance("t1", "train", "train", 1, "train-e01-99999-s0", True))
    with pytest.raises(ProtocolViolation, match="m3"):
        protocol({}).audit([ghost], {"train-e01-00000-s0"}, {"train": "train"})


def test_finetuned_backbone_refused_without_flag_and_labelled_with_it(tmp_path):
    with pytest.raises(ProtocolViolation, match="finetuned_on"):
        run(config(llm={"name": "none", "finetuned_on": "alfworld"}), tmp_path / "refused")
    assert not (tmp_path / "refused" / "episodes.jsonl").exists()
    metrics = run(
        config(llm={"name": "none", "finetuned_on": "alfworld"}, protocol={"epochs": 1, "allow_finetuned": True}), tmp_path / "allowed"
    )
    assert "finetuned_backbone" in metrics["labels"]


def test_runtime_learning_is_labelled_and_scores_training_tasks(tmp_path):
    cfg = config(protocol={"name": "runtime_learning", "epochs": 2, "validate_every_epoch": False, "test_at_end": False})
    metrics = run(cfg, tmp_path / "rl")
    assert "runtime_learning" in metrics["labels"] and "synthetic" in metrics["labels"]
    assert set(metrics["success_rate"]) == {"train"}


def test_runtime_learning_with_held_out_phases_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="runtime_learning"):
        run(config(protocol={"name": "runtime_learning"}), tmp_path / "x")


def test_schedule_orders_epochs_by_the_task_order_seed_only():
    tasks = {s: [Task(f"{s}{i}", s, "") for i in range(10)] for s in ("train", "validation", "t")}
    roles = {"train": "train", "validation": "validation", "test": ["t"]}
    cfg = {"epochs": 2, "batch_size": 4}
    a = build_schedule(cfg, roles, tasks, task_order_seed=1)
    b = build_schedule(cfg, roles, tasks, task_order_seed=2)
    phases = [(x.phase, x.epoch) for x in a]
    assert phases == [("train", 1)] * 3 + [("validation", 1)] * 3 + [("train", 2)] * 3 + [("validation", 2)] * 3 + [("test", 2)] * 3
    order_a = [t.id for x in a if x.phase == "train" for t in x.tasks]
    order_b = [t.id for x in b if x.phase == "train" for t in x.tasks]
    assert sorted(order_a[:10]) == sorted(order_b[:10]) and order_a != order_b
    assert order_a[:10] != order_a[10:]  # each epoch reshuffles


def test_epoch_order_seeds_change_only_their_epoch():
    tasks = {"train": [Task(f"t{i}", "train", "") for i in range(10)]}
    roles = {"train": "train"}
    base = build_schedule({"epochs": 3, "batch_size": 10, "epoch_order_seeds": [0, 0, 0]}, roles, tasks, 0)
    moved = build_schedule({"epochs": 3, "batch_size": 10, "epoch_order_seeds": [7, 0, 0]}, roles, tasks, 0)
    assert base[0].tasks != moved[0].tasks and base[1:] == moved[1:]


def test_poisoning_feeds_adversarial_memories_that_are_logged_but_not_scored(tmp_path):
    clean = run(config(protocol={"epochs": 3}), tmp_path / "clean")
    poisoned = run(config(protocol={"name": "poison", "epochs": 3, "poison_share": 0.5, "poison_epoch": 2}), tmp_path / "poisoned")
    log = [__import__("json").loads(x) for x in (tmp_path / "poisoned" / "episodes.jsonl").read_text().splitlines()]
    poison = [r for r in log if r["status"] == "poison"]
    assert len(poison) == 20 and all(r["epoch"] == 2 and r["episode_id"].startswith("poison-") for r in poison)
    assert poisoned["episodes"] == clean["episodes"]  # poison is not an episode of any score
    assert poisoned["poison"]["memories"] == 20 and poisoned["poison"]["share_of_retrievals"] > 0
    assert poisoned["success_rate"]["train"][1] == clean["success_rate"]["train"][1]  # before the poison


def test_the_alfworld_preset_is_memrls_alfworld_config():
    from memrl_bench.methods.memrl import MemRLConfig
    from tests.helpers import composed

    cfg = composed("+experiment=alfworld_memrl")
    m = MemRLConfig(**{k: v for k, v in cfg["method"].items() if k != "name"})
    assert (m.k_groups, m.k_select, m.epsilon, m.lambda_, m.alpha, m.sim_mean, m.sim_std, m.sim_threshold) == (
        5,
        3,
        0.0,
        0.5,
        0.3,
        0.5187,
        0.1203,
        0.5,
    )
    assert (m.reward_success, m.reward_failure, m.add_similarity_threshold, m.selection) == (1.0, -1.0, 0.9, "greedy")
    assert (cfg["protocol"]["batch_size"], cfg["protocol"]["epochs"], cfg["actor"]["max_steps"], cfg["llm"]["temperature"]) == (
        32,
        10,
        30,
        0.0,
    )
    assert cfg["env"]["name"] == "alfworld" and composed("+experiment=alfworld_memrl", "method=rag")["method"]["name"] == "rag"


def test_the_report_shows_poisoning_and_keeps_poison_out_of_the_rates(tmp_path):
    from memrl_bench.report import report

    run(
        config(protocol={"name": "poison", "epochs": 2, "poison_share": 0.0, "poison_epoch": 2}),
        tmp_path / "runs" / "protocol.poison_share=0.0",
    )
    poisoned = run(
        config(protocol={"name": "poison", "epochs": 2, "poison_share": 0.5, "poison_epoch": 2}),
        tmp_path / "runs" / "protocol.poison_share=0.5",
    )
    report(tmp_path / "runs", tmp_path / "report")
    table = (tmp_path / "report" / "tables" / "poisoning.md").read_text()
    share = 100 * poisoned["poison"]["share_of_retrievals"]
    assert f"| memrl \\| protocol.poison_share=0.5 | 20 (n=1) | {share:.1f} (n=1) |" in table
    rates = (tmp_path / "report" / "tables" / "sr_csr_train.md").read_text()
    sr = poisoned["success_rate"]["train"]  # metrics.json leaves poison out; so must the report
    assert f"| memrl \\| protocol.poison_share=0.5 | SR | {100 * sr[1]:.1f} (n=1) | {100 * sr[2]:.1f} (n=1) |" in rates


def test_poison_memories_written_with_an_llm_charge_their_calls_to_the_log(tmp_path):
    """A method that writes memory with the LLM (Dynamic Cheatsheet's curator) spends calls on the poison it is fed; they
    were in the transcripts but not in the log, so the run's memory cost left them out (found with the thirty-fourth round's
    check of records against the log)."""
    from memrl_bench.core.transcripts import TranscriptLog
    from tests.memory_llm_helpers import WordBagEmbedder
    from tests.scripted_llm import ScriptedChatModel

    cfg = config(
        method={"name": "dynamic_cheatsheet"},
        llm={"name": "openai", "model": "scripted", "base_url": "http://127.0.0.1:9/v1"},
        embedder={"name": "openai", "model": "hashed-bag-of-words"},
        protocol={"name": "poison", "epochs": 2, "batch_size": 2, "poison_share": 0.5, "poison_epoch": 2, "checkpoint_interval_s": 0},
        transcripts=True,
    )
    cfg["env"] = {"name": "mmlu", "tasks_per_split": 4}
    run(cfg, tmp_path, llm=ScriptedChatModel(lambda messages: "Answer: C"), embedder=WordBagEmbedder())
    poison = [r for r in map(json.loads, (tmp_path / "episodes.jsonl").read_text().splitlines()) if r["status"] == "poison"]
    records = TranscriptLog(tmp_path).by_episode()
    calls = {r["episode_id"]: records[r["episode_id"]]["memory_calls"] for r in poison if r["episode_id"] in records}
    assert sum(map(len, calls.values())) > 0
    for r in poison:
        mine = calls.get(r["episode_id"], [])
        assert r["memory_usage"]["calls"] == len(mine)
        assert r["memory_usage"]["prompt_tokens"] == sum(c["prompt_tokens"] or 0 for c in mine)
