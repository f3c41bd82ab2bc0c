"""The claims on the critique's other families (memrl_bench/findings/family_claims.py) on hand-built runs of
the LLB-DB world: arms paired with their twin, the writer as part of the arm, what decides each claim, and
the real-model-only claims left unmeasured on a synthetic section."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrl_bench import findings as fd
from memrl_bench.core.schema import Episode, StepRetrieval, Turn, Usage
from memrl_bench.core.stats import NOT_MEASURED
from memrl_bench.findings.measures import retrieval_cost

REAL = fd.Section("REAL MODEL qwen2.5-coder-1.5b on env llb_db", synthetic=False)
TASKS = [f"db/val/{i:03d}" for i in range(8)]
WRITER = {"name": "openai", "model": "Qwen/Qwen2.5-Coder-7B-Instruct", "base_url": "http://127.0.0.1:8000/v1", "max_concurrency": 4}


def run(method: dict, solved: int, chars: float = 1000.0, writer: dict | None = None, order: int = 0, **measures) -> fd.Run:
    """A held-out LLB-DB run solving the first `solved` test tasks, injecting `chars` characters per test episode."""
    config = {
        "env": {"name": "llb_db"},
        "llm": {"name": "local", "model": "qwen2.5-coder-1.5b"},
        "method": method,
        "protocol": {"name": "held_out", "epochs": 2, "eval_samples": 1},
        "seed": 0,
        "task_order_seed": order,
        **({"memory_llm": writer} if writer else {}),
    }
    outcomes = {task: float(i < solved) for i, task in enumerate(TASKS)}
    measured = {"test_sr": solved / len(TASKS), "test_injected_chars": chars, **measures}
    return fd.Run(Path(f"{method['name']}-{solved}"), config, ["llb_db"], measures=measured, test_outcomes=outcomes)


def finding(claim_id: str, runs: list[fd.Run], section: fd.Section = REAL) -> fd.Finding:
    return fd.claim_by_id(claim_id).finding(fd.Study(runs), section)


def test_arm_labels_tell_the_families_variants_apart_and_keep_the_old_ones():
    assert fd.arm_label({"name": "rag", "top_k": 3}) == "rag"
    assert fd.arm_label({"name": "rag", "retrieval_granularity": "task"}) == "rag"
    assert fd.arm_label({"name": "rag", "retrieval_granularity": "step"}) == "rag step"
    assert fd.arm_label({"name": "memrl", "epsilon": 0.01, "retrieval_granularity": "step"}) == "memrl ε=0.01 step"
    assert fd.arm_label({"name": "skillbank", "q_learning": False}) == "skillbank"
    assert fd.arm_label({"name": "skillbank", "q_learning": True}) == "skillbank+Q"
    assert fd.arm_label({"name": "dynamic_cheatsheet", "variant": "retrieval_synthesis"}) == "dynamic_cheatsheet DC-RS"
    assert fd.arm_label({"name": "dynamic_cheatsheet", "variant": "cumulative"}) == "dynamic_cheatsheet DC-Cu"
    assert fd.arm_label({"name": "memp"}, "Qwen/Qwen2.5-Coder-7B-Instruct") == "memp writer=Qwen/Qwen2.5-Coder-7B-Instruct"


def test_a_writer_is_part_of_the_arm_not_of_the_world():
    acting, written = run({"name": "memp"}, 4), run({"name": "memp"}, 5, writer=WRITER)
    assert acting.world_key == written.world_key and acting.arm_key != written.arm_key
    assert written.arm == "memp writer=Qwen/Qwen2.5-Coder-7B-Instruct" and acting.writer is None
    busier = run({"name": "memp"}, 5, writer={**WRITER, "max_concurrency": 1, "timeout_s": 900})  # how it runs: the same arm
    assert busier.arm_key == written.arm_key
    assert acting.arm_key == fd.runs.config_key({"name": "memp"})  # runs without a writer keep their key


def test_step_level_pairs_a_step_arm_with_its_task_twin_written_before_the_setting():
    """On LLB-DB the task arms are the LLB-DB study's, whose configs have no retrieval_granularity."""
    runs = [
        run({"name": "memrl", "epsilon": 0.01}, 3, chars=900, test_retrieve_s=0.1),
        run({"name": "memrl", "epsilon": 0.01, "retrieval_granularity": "step"}, 6, chars=2400, test_retrieve_s=0.4),
        run({"name": "rag"}, 4, chars=1000, test_retrieve_s=0.1),
        run({"name": "rag", "retrieval_granularity": "step"}, 4, chars=2000, test_retrieve_s=0.3),
        run({"name": "memrl", "epsilon": 0.1, "retrieval_granularity": "step"}, 8),  # no task twin: not compared
    ]
    found = finding("step_level_gain", runs)
    assert found.primary.label == "memrl ε=0.01 step - memrl ε=0.01: held-out test success, paired on the test task"
    assert found.primary.mean == pytest.approx(3 / 8) and found.primary.n == len(TASKS)  # pairs: the test tasks
    rows = {r.label: r for r in found.rows}
    assert rows["memrl ε=0.01 step: injected characters per test episode"].mean == 2400
    assert "rag step - rag: held-out test success, paired on the test task" in rows
    assert not any("memrl ε=0.1" in label for label in rows)


def test_skills_without_rl_decides_on_the_bank_against_raw_trajectories():
    runs = [
        run({"name": "rag"}, 2),
        run({"name": "rag", "retrieval_granularity": "step"}, 8),  # not the raw trajectories of the bank
        run({"name": "skillbank", "q_learning": False}, 5),
        run({"name": "skillbank", "q_learning": True}, 4),
    ]
    found = finding("skills_without_rl", runs)
    assert found.primary.label == "skillbank - rag: held-out test success, paired on the test task"
    assert found.primary.mean == pytest.approx(3 / 8)
    labels = [r.label for r in found.rows]
    assert "skillbank+Q - skillbank: held-out test success, paired on the test task" in labels
    assert "skillbank+Q - rag: held-out test success, paired on the test task" in labels
    assert finding("skills_without_rl", runs, fd.SYNTHETIC).verdict == NOT_MEASURED  # no ground truth for a skill's text


def test_writer_model_pairs_each_writer_arm_with_the_acting_model_as_writer():
    runs = [
        run({"name": "memp"}, 4, train_memory_tokens=300.0),
        run({"name": "memp"}, 6, writer=WRITER, train_memory_tokens=500.0),
        run({"name": "skillbank"}, 3, writer=WRITER),  # its twin not run: no row
    ]
    found = finding("writer_model", runs)
    assert found.primary.label == "memp writer=Qwen/Qwen2.5-Coder-7B-Instruct - memp: held-out test success, paired on the test task"
    assert found.primary.mean == pytest.approx(2 / 8)
    tokens = {r.label: r.mean for r in found.rows if "memory-call tokens" in r.label}
    assert tokens == {
        "memp writer=Qwen/Qwen2.5-Coder-7B-Instruct: memory-call tokens per training episode": 500.0,
        "memp: memory-call tokens per training episode": 300.0,
    }
    assert not any(r.label.startswith("skillbank") for r in found.rows)


def test_strong_baselines_decide_on_the_strongest_and_say_how_equal_the_injected_tokens_were():
    runs = [
        run({"name": "memrl", "epsilon": 0.0}, 6, chars=1000, test_prompt_tokens=5000.0),
        run({"name": "memrl", "epsilon": 0.1}, 7, chars=1000),  # not the MemRL arm: ε=0 comes first
        run({"name": "reasoningbank"}, 3, chars=1100),
        run({"name": "dynamic_cheatsheet", "variant": "cumulative"}, 5, chars=4000),
        run({"name": "dynamic_cheatsheet", "variant": "retrieval_synthesis"}, 4, chars=900),
        run({"name": "awm"}, 2, chars=700),
        run({"name": "awm"}, 8, chars=700, writer=WRITER),  # a writer apart: another claim's arm
    ]
    found = finding("strong_baselines", runs)
    assert found.primary.label == "memrl ε=0 - dynamic_cheatsheet DC-Cu: held-out test success, paired on the test task"
    assert found.primary.mean == pytest.approx(1 / 8)
    ratios = {r.label: r.text for r in found.rows if r.label.endswith("injected characters") and " / " in r.label}
    assert ratios == {
        "reasoningbank / memrl ε=0: injected characters": "1.10x: equal injected tokens (within 1.25x)",
        "dynamic_cheatsheet DC-Cu / memrl ε=0: injected characters": "4.00x: NOT at equal injected tokens",
        "dynamic_cheatsheet DC-RS / memrl ε=0: injected characters": "0.90x: equal injected tokens (within 1.25x)",
        "awm / memrl ε=0: injected characters": "0.70x: NOT at equal injected tokens",
    }
    assert not any("writer=" in r.label or "ε=0.1" in r.label for r in found.rows)
    tokens = [(r.label, r.mean) for r in found.rows if "prompt tokens" in r.label]
    assert tokens == [("memrl ε=0: acting prompt tokens per test episode", 5000.0)]  # the baselines' runs did not count theirs
    assert finding("strong_baselines", runs, fd.SYNTHETIC).rows == ()


def episode(epoch: int, chars: int, steps: list[tuple[int, float]], retrieve_s: float = 0.5, prompt_tokens: int = 0) -> Episode:
    turns = [Turn("a0", "o0")] + [
        Turn(f"a{i}", f"o{i}", latency_s={"retrieve": s, "act": 2.0}, retrieval=StepRetrieval(injected_chars=c))
        for i, (c, s) in enumerate(steps, 1)
    ]
    return Episode(
        f"test-{epoch}-{chars}", "db/val/000", "test", "test", epoch, 0, 0, True, 1.0, "ok", turns=turns, injected_chars=chars,
        latency_s={"retrieve": retrieve_s}, act_usage=Usage(calls=len(turns), prompt_tokens=prompt_tokens),
    )  # fmt: skip


def test_retrieval_cost_counts_every_step_retrieval_in_the_last_epoch():
    records = [
        episode(1, 9999, [(9999, 9.0)], prompt_tokens=99999),  # an earlier test epoch: not counted
        episode(2, 100, [(40, 0.25), (60, 0.25)], prompt_tokens=3000),
        episode(2, 300, [], prompt_tokens=1000),
    ]
    assert retrieval_cost(records, "test") == {
        "injected_chars": pytest.approx((200 + 300) / 2),
        "retrieve_s": pytest.approx((1.0 + 0.5) / 2),
        "prompt_tokens": pytest.approx(2000),
    }
    assert retrieval_cost(records, "train") == {"injected_chars": None, "retrieve_s": None, "prompt_tokens": None}
    synthetic = [episode(2, 100, [])]  # no server counted tokens: not a count of zero
    assert retrieval_cost(synthetic, "test")["prompt_tokens"] is None
