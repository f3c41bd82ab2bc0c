"""Findings on the critique's claims: statistics and verdicts on constructed numbers,
cross-run measures on hand-built runs, the presets, and one tiny end-to-end study."""

from __future__ import annotations

import copy
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from memrl_bench import findings as fd
from memrl_bench.core.stats import INCONCLUSIVE, NOT_MEASURED, NOT_SUPPORTED, SUPPORTED
from memrl_bench.findings import Run
from memrl_bench.findings.across_runs import order_counterfactual, order_spread, retrieval_agreement, retrieval_overlap
from memrl_bench.findings.runs import arm_order
from tests.helpers import alive, children_of, default_sigint

# ---- cross-run measures on hand-built runs ---------------------------------------------


def run(
    order: int, seed: int = 0, method: dict | None = None, kind: str = "held_out", epoch_order_seeds: list[int] | None = None, **data
) -> Run:
    protocol = {"name": kind, "epochs": 3, "eval_samples": 1, "epoch_order_seeds": epoch_order_seeds}
    config = {
        "env": {"name": "synthetic", "outcome_temperature": 0.0},
        "method": method or {"name": "memrl", "epsilon": 0.0},
        "protocol": protocol,
        "seed": seed,
        "task_order_seed": order,
    }
    return Run(Path(f"run-{order}-{seed}"), config, ["synthetic"], **data)


def test_paired_averages_method_seeds_within_a_task_order():
    a = [run(0, 0, measures={"x": 1.0}), run(0, 1, measures={"x": 3.0}), run(1, 0, measures={"x": 5.0})]
    b = [run(0, 0, measures={"x": 1.0}), run(1, 0, measures={"x": 2.0}), run(2, 0, measures={"x": 9.0})]
    assert fd.per_order(a, "x") == {0: 2.0, 1: 5.0}
    diff = fd.paired(a, b, "x")  # orders 0 and 1 only: differences 1 and 3
    assert (diff.mean, diff.n) == (2.0, 2)


def test_order_spread_is_per_method_seed():
    runs = [run(o, s, measures={"x": v}) for s, values in ((0, [0.1, 0.3, 0.5]), (1, [0.2, 0.2, 0.2])) for o, v in enumerate(values)]
    spread = order_spread(runs, "x")
    assert spread["std"] == pytest.approx((0.2 + 0.0) / 2)
    assert spread["range"] == pytest.approx((0.4 + 0.0) / 2)
    assert spread["orders"] == 3


def test_retrieval_agreement_and_overlap():
    same = {"e1": ("a", "b"), "e2": ("c",)}
    runs = [
        run(0, 0, train_choices=same),
        run(0, 1, train_choices={"e1": ("a", "b"), "e2": ("d",)}),
        run(1, 0, train_choices=same),
        run(1, 1, train_choices=same),
    ]
    assert retrieval_agreement(runs) == {0: 0.5, 1: 1.0}
    # Test retrievals, by source task: order 0 vs order 1 share T1 of {T1, T2} for task q.
    x = [run(0, 0, test_sources={"q": frozenset({"T1", "T2"})}), run(1, 0, test_sources={"q": frozenset({"T1"})})]
    assert retrieval_overlap(x) == {0: 0.5, 1: 0.5}
    nothing = [run(0, 0, test_sources={"q": frozenset()}), run(1, 0, test_sources={"q": frozenset()})]
    assert retrieval_overlap(nothing) == {}  # a method that injects nothing has no overlap to measure


def test_order_counterfactual_pairs_each_run_with_its_reference():
    common = {"test_sources": {"q": frozenset({"T1", "T2"})}}
    ref = run(0, measures={"test_expected_sr": 0.5, "final_sr": 0.5}, top_sources=frozenset({"A", "B"}), **common)
    first = run(
        0,
        epoch_order_seeds=[7],
        measures={"test_expected_sr": 0.8, "final_sr": 0.4},
        top_sources=frozenset({"C", "D"}),
        test_sources={"q": frozenset({"T3"})},
    )
    second = run(
        0, epoch_order_seeds=[0, 7], measures={"test_expected_sr": 0.45, "final_sr": 0.5}, top_sources=frozenset({"A", "C"}), **common
    )
    out = order_counterfactual([ref, first, second])
    assert out["test_expected_sr"] == {1: {7: pytest.approx(0.3)}, 2: {7: pytest.approx(0.05)}}
    assert out["bank"] == {1: {7: 1.0}, 2: {7: pytest.approx(1 - 1 / 3)}}
    assert out["retrieval"] == {1: {7: 1.0}, 2: {7: 0.0}}


def test_cross_run_means_do_not_depend_on_the_hash_seed():
    """Means over test tasks are float sums: in set order they changed in the last bit with
    PYTHONHASHSEED, enough to flip a rounded finding between two runs of the same study."""
    import subprocess
    import sys

    program = """
import random
from tests.integration.test_findings import run
from memrl_bench.findings.across_runs import order_counterfactual, retrieval_overlap
rng = random.Random(0)
def sources():
    return {f"task-{i}": frozenset(f"T{rng.randrange(9)}" for _ in range(rng.randrange(1, 5))) for i in range(60)}
a, b = sources(), sources()
print(repr(retrieval_overlap([run(0, 0, test_sources=a), run(1, 0, test_sources=b)])))
print(repr(order_counterfactual([run(0, test_sources=a), run(0, epoch_order_seeds=[7], test_sources=b)])["retrieval"]))
"""
    root = Path(__file__).resolve().parents[2]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", program],
            cwd=root,
            env={"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(1, 6)
    }
    assert len(outputs) == 1, outputs


def test_a_run_varying_two_epochs_is_not_a_counterfactual():
    assert run(0, epoch_order_seeds=[1, 2]).varied_epoch is None
    assert run(3, epoch_order_seeds=[3, 3, 5]).varied_epoch == (3, 5)


def test_a_missing_results_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        fd.findings(tmp_path / "nowhere")


def test_arm_labels():
    assert fd.arm_label({"name": "memrl", "epsilon": 0.1}) == "memrl ε=0.1"
    assert fd.arm_label({"name": "memrl", "selection": "softmax", "softmax_temperature": 0.3}) == "memrl softmax T=0.3"
    assert fd.arm_label({"name": "rag", "top_k": 3}) == "rag"


def test_arms_sort_greedy_zero_first_then_by_selection_rule_and_value_as_numbers():
    methods = [
        {"name": "rag"},
        {"name": "memrl", "selection": "softmax", "softmax_temperature": 1.0},
        {"name": "memrl", "epsilon": 0.2},
        {"name": "memrl", "selection": "softmax", "softmax_temperature": 0.1},
    ]
    methods += [{"name": "memrl", "epsilon": 0.05}, {"name": "none"}, {"name": "memrl", "epsilon": 0.0}, {"name": "memrl", "epsilon": 0.1}]
    labels = [fd.arm_label(m) for m in sorted(methods, key=arm_order)]
    assert labels == ["memrl ε=0", "memrl ε=0.05", "memrl ε=0.1", "memrl ε=0.2", "memrl softmax T=0.1", "memrl softmax T=1", "none", "rag"]


def test_measured_claims_come_first_and_each_unmeasured_one_names_its_presets():
    from memrl_bench.core.stats import t_interval

    rows = (
        fd.row("memrl ε=0 - memrl ε=0.1", t_interval([0.19, 0.2, 0.21]), +1, primary=True),
        fd.row("other", t_interval([-0.21, -0.2, -0.19]), +1),
    )
    measured = fd.Finding(fd.claim_by_id("regret"), rows, fd.SYNTHETIC)
    unmeasured = fd.Finding(fd.claim_by_id("epoch1_counterfactual"), (), fd.SYNTHETIC)
    regret, order = measured.claim.text, unmeasured.claim.text
    found = [unmeasured, measured]
    page = fd.render_html(found, Path("results"))
    assert page.count('<section id="findings">') == 1 and page.count("<h2>") == 1
    assert page.index(regret) < page.index("Not measured by the runs in this folder") < page.index(order)
    assert "+experiment=critique_order" in page[page.index(order) :]
    assert measured.verdict == SUPPORTED and "interval below 0" in page  # the other row says where it lies, not a verdict
    markdown = fd.render_markdown(found, Path("results"))
    assert markdown.count("**Verdict:") == 1 and f"- {order} — needs the runs of the preset critique_order" in markdown


# ---- presets ----------------------------------------------------------------------------

PRESETS = ("critique", "critique_epsilon", "critique_softmax", "critique_bandit", "critique_order", "critique_fairness", "critique_passk")


def test_presets_compose_on_the_synthetic_world_and_can_point_elsewhere():
    from memrl_bench.cli.hydra_support import compose, composing

    folders = set()
    with composing():  # registers the parts' settings, which the composed groups' defaults name
        for preset in PRESETS:
            cfg = compose([f"+experiment={preset}"], hydra_config=True)
            assert cfg.env.name == "synthetic" and cfg.env.harmful_early_share == 0.5, preset
            assert cfg.hydra.mode.name == "MULTIRUN" and cfg.hydra.sweeper.params, preset
            assert cfg.experiment_name.startswith("critique/"), preset
            folders.add(cfg.experiment_name)
        # Run folders are named by the overrides, so presets must not share a folder.
        assert len(folders) == len(PRESETS)
        assert compose(["+experiment=critique_fairness"], hydra_config=True).hydra.sweeper.params.protocol == "runtime_learning"
        moved = compose(["+experiment=critique", "env.n_types=6"])
        assert moved.env.n_types == 6


# ---- one tiny study, end to end ---------------------------------------------------------

TINY = {
    "env": {
        "name": "synthetic",
        "seed": 0,
        "n_types": 2,
        "n_ood_types": 1,
        "intent_dim": 8,
        "harmful_early_share": 0.5,
        "outcome_temperature": 0.0,
        "tasks": {"train": 8, "validation": 4, "test_in_distribution": 4, "test_out_of_distribution": 4},
    },
    "method": {"name": "memrl"},
    "llm": {"name": "none"},
    "embedder": {"name": "env_intent"},
    "protocol": {"epochs": 3, "batch_size": 4, "validate_every_epoch": False, "checkpoint_interval_s": 0},
    "actor": {},
    "progress": False,
}


def tiny(method: dict, order: int, seed: int = 0, temperature: float = 0.0, **protocol) -> dict:
    cfg = copy.deepcopy(TINY)
    cfg["method"] = method
    cfg["env"]["outcome_temperature"] = temperature
    if protocol.pop("runtime_learning", False):
        cfg["protocol"].update(name="runtime_learning", test_at_end=False)
    cfg["protocol"].update(protocol)
    cfg.update(seed=seed, task_order_seed=order)
    return cfg


def tiny_study() -> list[dict]:
    """The shape of the critique presets on a world of 8 training tasks, two task orders."""
    greedy, explore, softmax = (
        {"name": "memrl"},
        {"name": "memrl", "epsilon": 0.1},
        {"name": "memrl", "selection": "softmax", "softmax_temperature": 0.3},
    )
    orders = (0, 1)
    cfgs = [tiny(m, o, s) for m in (greedy, explore, softmax) for o in orders for s in (0, 1)]
    cfgs += [tiny(m, o) for m in ({"name": "none"}, {"name": "rag"}) for o in orders]
    cfgs += [tiny(greedy, 0, epoch_order_seeds=seeds) for seeds in ([1], [2], [0, 1], [0, 2])]
    cfgs += [tiny(m, o, temperature=t, runtime_learning=True) for m in ({"name": "none"}, greedy) for o in orders for t in (0.0, 0.7)]
    cfgs += [tiny(m, o, temperature=0.7, eval_samples=3) for m in ({"name": "none"}, greedy) for o in orders]
    return cfgs


def test_tiny_study_end_to_end_yields_every_finding(tmp_path):
    from memrl_bench.runner.loop import run as run_one

    for i, cfg in enumerate(tiny_study()):
        run_one(cfg, tmp_path / "study" / f"run-{i:03d}")
    found = fd.findings(tmp_path)
    assert [f.id for f in found] == [
        "determinism",
        "epoch1_lock_in",
        "epoch1_counterfactual",
        "never_tested",
        "good_amplified",
        "bad_locked_in",
        "regret",
        "order_dependence",
        "memory_helps",
        "runtime_learning",
        "weak_baselines",
        "drift_stale_kept",
        "drift_adaptation",
        "drift_gain_per_token",
        "step_level_gain",
        "step_level_under_drift",
        "skills_without_rl",
        "writer_model",
        "strong_baselines",
    ]
    for f in found[:11]:
        assert f.section.label == "SYNTHETIC (simulation, not LLM results)" and f.section.synthetic
        assert f.verdict in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE), f.id
        assert any(r.primary for r in f.rows), f.id
        assert all(r.mean is not None for r in f.rows), (f.id, [r.label for r in f.rows if r.mean is None])
    by_id = {f.id: f for f in found}
    # epsilon = 0 with temperature-0 outcomes: the method seed changes no retrieval at all.
    assert by_id["determinism"].verdict == SUPPORTED
    labels = " | ".join(r.label for f in found for r in f.rows)
    for expected in (
        "memrl ε=0.1",
        "memrl softmax T=0.3",
        "epoch 1 - epoch 2",
        "test pass@3",
        "pass@3 (CSR over 3 epochs",
        "gap - none gap",
        "memrl ε=0 - none, outcome T=0: held-out test success, paired on the test task",
        "interval needs at this spread",
    ):
        assert expected in labels
    markdown = fd.render_markdown(found, tmp_path)
    assert markdown.startswith("## Findings on the critique's claims (synthetic)")
    assert markdown.count("**Verdict:") == 11
    page = fd.render_html(found, tmp_path)
    assert page.startswith('<section id="findings">') and page.count("<table>") == 11 and page.count('<section id="findings">') == 1
    for f in found[:11]:  # one rule: the headline is the deciding row's verdict, and no other row carries one
        assert [r.verdict for r in f.rows if r.verdict is not None] == [f.verdict], f.id
    assert [f.verdict for f in found[11:]] == [NOT_MEASURED] * 8  # no drift runs, no step-level runs, no real model here
    assert "memrl-bench +experiment=drift_study" in markdown and "memrl-bench +experiment=families_study" in markdown
    assert markdown.count("needs a real model (no synthetic ground truth) and the runs of the preset") == 3
    assert "memrl-bench +experiment=llb_db_families)" in markdown


def test_a_tiny_step_level_study_yields_the_step_finding(tmp_path):
    """rag and memrl at task and step granularity on tasks of three steps: the step claim decides on memrl, with the
    retrieval seconds and injected characters the step retrievals add."""
    from memrl_bench.runner.loop import run as run_one

    for name in ("rag", "memrl"):
        for granularity in ("task", "step"):
            for order in (0, 1, 2):
                cfg = tiny({"name": name, "retrieval_granularity": granularity}, order)
                cfg["env"]["steps_per_task"] = 3
                run_one(cfg, tmp_path / f"{name}-{granularity}-{order}")
    found = {f.id: f for f in fd.findings(tmp_path, warn=None)}
    step = found["step_level_gain"]
    assert step.section.synthetic and step.verdict in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)
    assert step.primary.label == "memrl ε=0 step - memrl ε=0, outcome T=0: held-out test success, paired on the test task"
    rows = {r.label: r for r in step.rows}
    chars = rows["memrl ε=0 step, outcome T=0: injected characters per test episode"]
    assert chars.mean > 0 and "memrl ε=0 step - memrl ε=0, outcome T=0: added injected characters per test episode" in rows
    assert rows["rag step - rag, outcome T=0: added retrieval seconds per test episode"].mean > 0  # two more retrievals per episode
    # a step-level MemRL is a variant of its own, not an exploring MemRL the greedy claims compare ε=0 with
    assert not any("memrl ε=0 - memrl ε=0 step" in r.label for f in found.values() for r in f.rows)


def test_a_tiny_step_study_under_a_scene_drift_yields_the_step_drift_finding(tmp_path):
    """step_drift's shape: the change redraws the scenes and flips no lesson; the step arm's step retrievals find no cluster
    more often in the first epoch after it than in the one before, and the claim decides on memrl step - task."""
    from memrl_bench.runner.loop import run as run_one

    protocol = {"name": "drift", "epochs": 4, "drift": {"epoch": 3, "window": 4, "flip_share": 0.0}}
    for name in ("rag", "memrl"):
        for granularity in ("task", "step"):
            for order in (0, 1, 2):
                cfg = tiny({"name": name, "retrieval_granularity": granularity}, order, **protocol)
                cfg["env"].update(steps_per_task=3, drift_scenes=True)
                run_one(cfg, tmp_path / f"{name}-{granularity}-{order}")
    found = {f.id: f for f in fd.findings(tmp_path, warn=None)}
    drift = found["step_level_under_drift"]
    assert drift.primary.label == "memrl ε=0 step - memrl ε=0, outcome T=0: SR after the change - SR of the epoch before it"
    rows = {r.label: r.mean for r in drift.rows}
    unmatched = "memrl ε=0 step, outcome T=0: step retrievals joining no observation cluster"
    assert rows[f"{unmatched}, the epoch before the change"] < rows[f"{unmatched}, the first after it"]
    assert found["step_level_gain"].verdict == NOT_MEASURED  # no held-out runs: the families' held-out world is empty


def test_a_tiny_drift_study_yields_the_three_drift_findings(tmp_path):
    from helpers import config

    from memrl_bench.runner.loop import run as run_one

    methods = [{"name": "none"}, {"name": "rag"}, {"name": "memrl"}, {"name": "simplemem", "write_with_llm": False}]
    protocol = {
        "name": "drift",
        "epochs": 3,
        "batch_size": 10,
        "checkpoint_interval_s": 0,
        "validate_every_epoch": False,
        "drift": {"epoch": 2, "window": 10},
    }
    for method in methods:
        for order in (0, 1, 2):
            run_one(config(method=method, protocol=protocol, task_order_seed=order), tmp_path / "drift" / f"{method['name']}-{order}")
    found = {f.id: f for f in fd.findings(tmp_path)}
    assert all(found[k].verdict == NOT_MEASURED for k in ("determinism", "never_tested", "bad_locked_in"))  # drift runs are their own kind
    for key in ("drift_stale_kept", "drift_adaptation", "drift_gain_per_token"):
        f = found[key]
        assert f.verdict in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE), key
        assert [r.verdict for r in f.rows if r.verdict is not None] == [f.verdict], key
        assert all(r.n == 3 for r in f.rows if r.primary), key
    labels = " | ".join(r.label for f in found.values() for r in f.rows)
    for expected in (
        "rag, outcome T=0: stale share of injections, last window after the change",
        "memrl ε=0 - rag, outcome T=0: SR after the change - SR of the epoch before it",
        "simplemem - memrl ε=0, outcome T=0: gain per 1k injected tokens",
    ):
        assert expected in labels
    assert not any(r.label.startswith("none,") for r in found["drift_stale_kept"].rows)  # injects nothing: no share


@pytest.mark.slow
def test_study_runs_the_same_job_as_the_hydra_cli(tmp_path):
    """The study expands and runs a preset's jobs itself; the run folders must be the ones
    `memrl-bench +experiment=<preset>` writes (name, config hash, episodes)."""
    import json
    import subprocess
    import sys

    from memrl_bench.cli import study
    from memrl_bench.core.schema import strip_measured

    root = Path(__file__).resolve().parents[2]
    pick = ["env.outcome_temperature=0", "method=memrl", "task_order_seed=1", "env.tasks.train=12", "protocol.epochs=2"]
    jobs = study.expand("critique_fairness", [f"results_dir={tmp_path / 'study'}", "progress=false", *pick])
    assert len(jobs) == 1 and "protocol=runtime_learning" in jobs[0]
    study.run_jobs(jobs)
    subprocess.run(
        [sys.executable, "-m", "memrl_bench", "+experiment=critique_fairness", f"results_dir={tmp_path / 'cli'}", "progress=false", *pick],
        cwd=root,
        check=True,
        capture_output=True,
    )

    (a,) = (tmp_path / "study").rglob("manifest.json")
    (b,) = (tmp_path / "cli").rglob("manifest.json")
    assert a.parent.relative_to(tmp_path / "study") == b.parent.relative_to(tmp_path / "cli")
    assert json.loads(a.read_text())["config_hash"] == json.loads(b.read_text())["config_hash"]
    episodes = [[strip_measured(json.loads(line)) for line in (m.parent / "episodes.jsonl").read_text().splitlines()] for m in (a, b)]
    assert episodes[0] == episodes[1] and len(episodes[0]) == 24


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_study_leaves_no_worker_playing(tmp_path):
    """`memrl-bench +experiment=families_study` (two worker processes) SIGKILLed while its workers play: none is alive 3 s
    later. Before, they played on (holding their run folders' locks, so a study started again found them taken) and then
    waited on the dead pool's queue for good."""
    import subprocess
    import time

    command = [sys.executable, "-m", "memrl_bench", "+experiment=families_study", f"results_dir={tmp_path}", "progress=false"]
    study = subprocess.Popen(command, cwd=Path(__file__).resolve().parents[2], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    while study.poll() is None and len(workers) < 2:
        workers = children_of(study.pid)
        time.sleep(0.01)
    while study.poll() is None and not list(tmp_path.rglob("episodes.jsonl")):  # the workers are playing
        time.sleep(0.01)
    study.kill()
    study.wait()
    assert len(workers) == 2, "the study ended before its pool started"
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(alive(w) for w in workers):
        time.sleep(0.05)
    survivors = [w for w in workers if alive(w)]
    for pid in survivors:  # the test's own leftovers, if it fails
        os.kill(pid, signal.SIGKILL)
    assert survivors == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_during_a_study_is_one_line_and_exit_130_and_it_resumes(tmp_path):
    """A terminal's Ctrl-C (SIGINT to the study and its workers) while the workers play: one line, exit 130, no worker left;
    the same command then finishes every run (before 2026-12-06 listed as not probed)."""
    import subprocess
    import time

    command = [sys.executable, "-m", "memrl_bench", "+experiment=families_study", f"results_dir={tmp_path}", "progress=false"]
    command.append("task_order_seed=0")  # 8 runs of the 48

    def start_in_its_own_group():
        default_sigint()
        os.setsid()

    root = Path(__file__).resolve().parents[2]
    study = subprocess.Popen(
        command, cwd=root, preexec_fn=start_in_its_own_group, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    while study.poll() is None and not list(tmp_path.rglob("episodes.jsonl")):
        time.sleep(0.01)
    workers = children_of(study.pid)
    os.killpg(study.pid, signal.SIGINT)
    _, err = study.communicate(timeout=120)
    assert (study.returncode, err.strip()) == (130, "memrl-bench: interrupted; re-run the same command to resume")
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(alive(w) for w in workers):
        time.sleep(0.05)
    assert workers and not any(alive(w) for w in workers)
    assert len(list(tmp_path.rglob("COMPLETE"))) < 8
    again = subprocess.run(command, cwd=root, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert len(list(tmp_path.rglob("COMPLETE"))) == 8 and (tmp_path / "families" / "findings.md").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_study_whose_worker_is_killed_says_so_in_one_line_and_resumes(tmp_path):
    """A worker of the study killed outright (as the OOM killer would), not the study: one line and exit 1 (before, 42b:
    concurrent.futures' BrokenProcessPool traceback); the same command then finishes every run."""
    import subprocess
    import time

    command = [sys.executable, "-m", "memrl_bench", "+experiment=families_study", f"results_dir={tmp_path}", "progress=false"]
    command += ["task_order_seed=0", "study.workers=1"]
    root = Path(__file__).resolve().parents[2]
    study = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while study.poll() is None and not list(tmp_path.rglob("episodes.jsonl")):
        time.sleep(0.01)
    for worker in children_of(study.pid):
        os.kill(worker, signal.SIGKILL)
    _, err = study.communicate(timeout=120)
    assert (study.returncode, err.strip()) == (
        1,
        "memrl-bench: stopped: a worker process died (killed by a signal: out of memory?); what finished is kept: re-run the same command",
    )
    again = subprocess.run(command, cwd=root, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert len(list(tmp_path.rglob("COMPLETE"))) == 8


@pytest.mark.parametrize(
    "value, says",
    [
        ("abc", "Input should be a valid integer"),
        ("null", "Input should be a valid integer"),
        ("[1]", "Input should be a valid integer"),
        ("true", "Input should be a valid integer"),
        ("1e3", "Input should be a valid integer"),  # a float: was read as 1,000 workers, every one forked
        ("100000", "Input should be less than or equal to 256"),  # forked as the pool started: the host hung (42b)
        ("0", "Input should be greater than or equal to 1"),  # ran with one worker, silently
    ],
)
def test_a_bad_study_workers_is_one_line_naming_it(tmp_path, value, says):
    """Before (42b): a traceback for abc, null, [1] and {a:1}; 0, -3 and true ran with one worker; 1e3 and 100000 forked that
    many harness processes as the pool started."""
    import subprocess

    command = [sys.executable, "-m", "memrl_bench", "+experiment=families_study", f"results_dir={tmp_path}", f"study.workers={value}"]
    done = subprocess.run(command, cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith(f"memrl-bench: error: study.workers: {says}"), done.stderr
    assert "Traceback" not in done.stderr and not list(tmp_path.rglob("episodes.jsonl"))


def test_study_command_runs_its_presets_then_writes_the_findings(tmp_path):
    """`memrl-bench +experiment=critique_study`, cut down to two small presets."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    small = [
        "env.tasks.train=8",
        "env.tasks.validation=4",
        "env.tasks.test_in_distribution=4",
        "env.tasks.test_out_of_distribution=4",
        "protocol.epochs=2",
        "task_order_seed=0",
        "seed=0",
    ]
    command = [
        sys.executable,
        "-m",
        "memrl_bench",
        "+experiment=critique_study",
        "study.presets=[critique,critique_bandit]",
        "study.workers=1",
        f"results_dir={tmp_path}",
        "progress=false",
        *small,
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # a fixed value replaces a preset's sweep: critique 3 methods x 2 outcome temperatures; bandit 2 selections x 2
    assert len(list((tmp_path / "critique" / "main").glob("*/COMPLETE"))) == 6
    assert len(list((tmp_path / "critique" / "bandit").glob("*/COMPLETE"))) == 4
    assert sorted(p.name for p in (tmp_path / "critique").iterdir() if p.is_file()) == ["findings.html", "findings.md", "timing.json"]
    assert (tmp_path / "critique" / "findings.md").read_text().startswith("## Findings on the critique's claims (synthetic)")
    assert "10 runs" in done.stdout

    again = subprocess.run(command[:-1] + ["seed=0", "foo=1"], cwd=root, capture_output=True, text=True)
    assert again.returncode != 0 and "foo" in again.stderr  # a bad override names its key

    # The export of the study folder: one row per logged episode, the varied settings as columns.
    import yaml

    from memrl_bench import load_episodes

    logs = list(tmp_path.rglob("episodes.jsonl"))
    frame = load_episodes(tmp_path / "critique")
    assert len(logs) == 10 and len(frame) == sum(len(p.read_text().splitlines()) for p in logs)
    overrides = [
        dict(
            o.split("=", 1)
            for o in yaml.safe_load((p.parent / ".hydra" / "overrides.yaml").read_text())
            if not o.startswith(("+", "hydra", "results_dir", "progress"))
        )
        for p in logs
    ]
    varied = {k for k in set().union(*overrides) if len({o.get(k) for o in overrides}) > 1}
    assert varied and varied <= set(frame.columns) | {"method"}, varied - set(frame.columns)


@pytest.mark.slow
def test_the_readme_drift_study_commands_write_the_findings_and_the_report(tmp_path):
    """README "Drift": `memrl-bench +experiment=drift_study` then `memrl-bench-report results/drift`,
    cut down to a small world, one task order and one seed."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    small = [
        "env.tasks.train=10",
        "env.tasks.validation=4",
        "env.tasks.test_in_distribution=4",
        "env.tasks.test_out_of_distribution=4",
        "protocol.epochs=3",
        "++protocol.drift.epoch=2",
        "++protocol.drift.window=5",
        "protocol.batch_size=5",
        "task_order_seed=0",
        "seed=0",
    ]
    study = subprocess.run(
        [
            sys.executable,
            "-m",
            "memrl_bench",
            "+experiment=drift_study",
            "study.workers=1",
            f"results_dir={tmp_path}",
            "progress=false",
            *small,
        ],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert study.returncode == 0, study.stderr
    assert len(list((tmp_path / "drift").glob("*/*/COMPLETE"))) == 5  # none, rag, memrl, full_context; simplemem
    findings = (tmp_path / "drift" / "findings.md").read_text()
    for claim in ("Stale memories are kept", "MemRL adapts", "gain per"):
        assert claim in findings, claim
    report = subprocess.run([sys.executable, "-m", "memrl_bench.report", str(tmp_path / "drift")], cwd=root, capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert "Drift" in (tmp_path / "drift" / "report" / "report.html").read_text()


def test_a_comparison_on_new_tasks_pairs_each_test_task_over_the_orders(tmp_path):
    """task_differences: per test task, the arm's success averaged over its runs minus none's;
    tasks only one arm played are left out."""

    def run(order: int, outcomes: dict[str, float]) -> fd.Run:
        return fd.Run(tmp_path, {"method": {"name": "x"}, "task_order_seed": order, "env": {}}, [], test_outcomes=outcomes)

    memory = [run(0, {"a": 1, "b": 0, "c": 1}), run(1, {"a": 1, "b": 1, "c": 0})]
    none = [run(0, {"a": 0, "b": 0, "d": 1}), run(1, {"a": 1, "b": 0, "d": 1})]
    assert fd.task_differences(memory, none) == [0.5, 0.5]


def test_the_test_splits_are_those_playing_test_but_out_of_distribution():
    from memrl_bench.core.schema import EnvRecord, ManifestRecord

    def manifest(roles: dict | None) -> ManifestRecord:
        env = EnvRecord(name="x", roles=roles) if roles else None
        return ManifestRecord(config={"method": {"name": "none"}}, config_hash="x", env=env)

    assert fd.test_splits(manifest({"train": "test", "validation": None, "test": ["validation"]})) == ("validation",)
    # LLB-DB's study: both halves of db_val play test, one distribution, pooled
    assert fd.test_splits(manifest({"train": "train", "validation": None, "test": ["validation", "test"]})) == ("validation", "test")
    assert fd.test_splits(manifest(None)) == ("test_in_distribution",)  # the default roles: the OOD split is another distribution


def test_a_test_sr_pools_every_test_split_and_counts_each_episode_once():
    from helpers import record

    from memrl_bench.core.schema import Episode
    from memrl_bench.findings.measures import last_epoch_outcomes, retrieval_cost

    def episode(split: str, task: str, success: bool, epoch: int = 2) -> Episode:
        return record(task, epoch, success, phase="test", split=split, injected_chars=10 * len(task))

    records = [episode("validation", "a", True), episode("validation", "b", False), episode("test", "c", True), episode("test", "d", True)]
    records.append(episode("test", "c", False, epoch=1))  # an earlier epoch is not the last
    assert last_epoch_outcomes(records, ("validation", "test")) == {"a": 1.0, "b": 0.0, "c": 1.0, "d": 1.0}
    assert last_epoch_outcomes(records, "validation") == {"a": 1.0, "b": 0.0}
    assert retrieval_cost(records, ("validation", "test"))["injected_chars"] == 10.0


def test_a_difference_of_two_task_sets_has_welchs_interval():
    from scipy.stats import ttest_ind

    from memrl_bench.core.stats import difference_of_means

    a, b = [1, 0, 1, 1, 0, 1, 1], [0, 0, 1, 0, 1, 0]
    got = difference_of_means(a, b)
    want = ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert got.mean == pytest.approx(sum(a) / 7 - sum(b) / 6) and got.n == 13
    assert (got.low, got.high) == (pytest.approx(want.low), pytest.approx(want.high))
    assert difference_of_means([1], b).low is None and difference_of_means([], b).mean is None


def test_a_study_of_one_task_order_and_held_out_runs_only_decides_runtime_learning_on_the_tasks():
    """The LLB-DB study: one task order, held-out runs whose training phase is runtime learning. Verdicts come from the rows
    paired on the task (an order-paired interval of one pair has no width)."""
    from memrl_bench.findings.fairness_claims import runtime_learning, weak_baselines

    train = [f"t{i}" for i in range(10)]
    test = [f"v{i}" for i in range(12)]

    def arm(method: dict, train_sr: list[int], ever: list[int], test_sr: list[int]) -> Run:
        measures = {"final_sr": sum(train_sr) / 10, "csr": sum(ever) / 10, "test_sr": sum(test_sr) / 12}
        return run(
            0,
            method=method,
            measures=measures,
            train_outcomes=dict(zip(train, map(float, train_sr))),
            train_solved=dict(zip(train, map(float, ever))),
            test_outcomes=dict(zip(test, map(float, test_sr))),
        )

    none = arm({"name": "none"}, [1, 0] * 5, [1, 0] * 5, [1, 0, 0] * 4)
    # MemRL solves every training task by its last epoch (it learned them) and gains nothing on new tasks
    memrl = arm({"name": "memrl", "epsilon": 0.0}, [1] * 10, [1] * 10, [1, 0, 0] * 4)
    study = fd.Study([none, memrl])
    rows = {r.label: r for r in runtime_learning.measure(study)}
    decides = rows["memrl ε=0 gap - none gap, outcome T=0, paired on the task within each task set"]
    assert decides.primary and decides.mean == pytest.approx(0.5) and decides.n == 22 and decides.low > 0
    assert not rows["memrl ε=0 gap - none gap, outcome T=0"].primary  # one pair: no interval to decide with
    assert "training phase of the held-out run" in rows["none, outcome T=0: runtime-learning CSR, training phase of the held-out run"].label
    assert runtime_learning.finding(study, fd.SYNTHETIC).verdict == SUPPORTED
    weak = {r.label: r for r in weak_baselines.measure(study)}
    on_tasks = weak["none pass@3 - memrl ε=0 CSR, outcome T=0, paired on the training task"]
    assert on_tasks.primary and on_tasks.mean == pytest.approx(-0.5) and on_tasks.n == 10
    # with two task orders the order-paired rows decide, as before, and no task-paired row is added
    second = [replace(r, config={**r.config, "task_order_seed": 1}) for r in (none, memrl)]
    study2 = fd.Study([none, memrl, *second])
    labels = [r.label for r in runtime_learning.measure(study2) if r.primary]
    assert labels == ["memrl ε=0 gap - none gap, outcome T=0"]


def test_an_unmeasured_claim_of_another_real_study_says_whose_runs_these_are():
    """The LLB-DB study's findings name its own runs before the presets of the study that would measure a claim."""
    section = fd.Section("REAL MODEL m on env llb_db", synthetic=False, study="llb_db")
    found = [fd.claim_by_id(i).finding(fd.Study([]), section) for i in ("order_dependence", "good_amplified")]
    lines = fd.render_markdown(found, Path("results/llb_db")).splitlines()
    order, amplified = (next(line for line in lines if f.claim.text in line) for f in found)
    assert "not measured by the runs of llb_db; needs the runs of the presets critique_real_methods" in order
    assert "llb_db" not in amplified.split(" — ", 1)[1]  # a claim needing ground truth says only that
    assert fd.real_section({"env": {"name": "llb_db"}, "llm": {"model": "m"}, "experiment_name": "llb_db/greedy"}).study == "llb_db"


def test_with_one_task_order_never_tested_decides_over_the_final_memories():
    """0.3 of 60 memories never injected: below one half with an interval over the memories; the single run's share alone has none."""
    from memrl_bench.findings.greedy_claims import never_tested

    greedy = run(0, method={"name": "memrl", "epsilon": 0.0}, measures={"never_retrieved": 0.3, "gini": 0.5, "memories": 60.0})
    rows = {r.label: r for r in never_tested.measure(fd.Study([greedy]))}
    decides = rows["memrl ε=0, outcome T=0: never injected, over its final memories"]
    assert decides.primary and decides.n == 60 and decides.mean == pytest.approx(0.3) and decides.high < 0.5
    assert never_tested.finding(fd.Study([greedy]), fd.SYNTHETIC).verdict == NOT_SUPPORTED
    assert not rows["memrl ε=0, outcome T=0: never injected"].primary
