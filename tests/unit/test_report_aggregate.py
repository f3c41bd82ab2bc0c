"""The report on hand-built run folders: numbers chosen so every aggregate is known."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from memrl_bench.core.config import config_hash
from memrl_bench.core.runfolder import RunFolder
from memrl_bench.core.schema import Episode
from memrl_bench.report import ReportInputError, report
from memrl_bench.report.aggregate import aggregate, paired_bootstrap, retrieval_spread
from memrl_bench.report.cli import main as cli_main
from memrl_bench.report.figures import Styles, all_figures, method_colours
from memrl_bench.report.load import common_settings, load, settings_overrides
from memrl_bench.report.tables import all_tables, variant_order

T_975_2 = 4.302652729911275  # scipy.stats.t.ppf(0.975, 2)
TEST_SPLIT = "test_in_distribution"


def episode(task: str, phase: str, split: str, epoch: int, success: bool, **fields) -> dict:
    """One episode record in the runner's format."""
    record = Episode(
        episode_id=f"{phase}-{split}-e{epoch:02d}-{task}",
        task_id=task,
        split=split,
        phase=phase,  # type: ignore[arg-type]
        epoch=epoch,
        batch_index=0,
        order_index=int(task.rsplit("/", 1)[-1]),
        success=success,
        reward=float(success),
        status="ok",
    ).to_dict()
    return record | fields


def outcomes(phase: str, split: str, epoch: int, successes: list[bool], **fields) -> list[dict]:
    """One episode per task `<split>/<i>`, succeeding as listed."""
    return [episode(f"{split}/{i}", phase, split, epoch, ok, **fields) for i, ok in enumerate(successes)]


def write_run(
    root: Path,
    method: str,
    seed: int,
    records: list[dict],
    *,
    complete: bool = True,
    labels: tuple[str, ...] = ("synthetic",),
    split_sizes: dict[str, int] | None = None,
    overrides: tuple[str, ...] = (),
    items: list[dict] | None = None,
) -> Path:
    """A run folder as the runner leaves it (COMPLETE and metrics.json only if `complete`)."""
    all_overrides = [f"method={method}", f"seed={seed}", *overrides]
    folder = root / ",".join(sorted(o for o in all_overrides))
    folder.mkdir(parents=True)
    splits = {r["split"] for r in records}
    sizes = split_sizes or {s: len({r["task_id"] for r in records if r["split"] == s}) for s in splits}
    config = {
        "method": {"name": method},
        "env": {"name": "synthetic"},
        "seed": seed,
        "task_order_seed": seed,
        "hydra": {"overrides": all_overrides},
    }
    for override in overrides:  # "protocol.epochs=1" sets config["protocol"]["epochs"] = 1
        key, value = override.lstrip("+").split("=", 1)
        *parents, leaf = key.split(".")
        node = config
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(value)
    manifest = {
        "config": config,
        "config_hash": "",
        "git_commit": "0123456789abcdef",
        "labels": list(labels),
        "env": {"name": "synthetic"},
        "split_hashes": {s: f"{s}-hash" for s in sorted(splits)},
        "split_sizes": sizes,
        "model": None,
        "embedder": "env_intent",
    }
    write_manifest(folder, {**manifest, "schedule_episodes": len(records)})
    (folder / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if items is not None or complete:
        RunFolder(folder).save_snapshot(
            "final", lambda tmp: (tmp / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items or []))
        )
    if complete:
        (folder / "metrics.json").write_text(json.dumps({"episodes": len(records)}))
        RunFolder(folder).mark_complete()
    return folder


def write_manifest(folder: Path, manifest: dict) -> None:
    """manifest.json with its config hash and its digest computed, as the runner writes it (and COMPLETE, which holds the
    manifest's digest, written again)."""
    run = RunFolder(folder)
    run.write_manifest({**manifest, "config_hash": config_hash(manifest["config"])})
    if run.is_complete():
        run.mark_complete()


def successes(k: int, n: int = 10) -> list[bool]:
    return [i < k for i in range(n)]


def _test_rows(success: list[bool], seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"seed": seed, "task_id": [f"t{i}" for i in range(len(success))], "success": success})


def test_bootstrap_all_versus_none_is_one_with_degenerate_interval():
    diff = paired_bootstrap(_test_rows([True] * 20), _test_rows([False] * 20))
    assert (diff.mean, diff.low, diff.high, diff.tasks, diff.pairs) == (1.0, 1.0, 1.0, 20, 20)


def test_bootstrap_half_the_tasks():
    a, b = _test_rows(successes(5)), _test_rows([False] * 10)
    diff = paired_bootstrap(a, b)
    assert diff.mean == pytest.approx(0.5)
    # sd of a mean of 10 Bernoulli(0.5) draws is 0.158: the interval is about 0.5 ± 0.31
    assert 0.1 < diff.low < 0.35 and 0.65 < diff.high < 0.9
    assert paired_bootstrap(a, b) == diff  # fixed rng seed


def test_bootstrap_pairs_by_seed_and_task():
    a = pd.concat([_test_rows([True, True], seed=0), _test_rows([True, False], seed=1)])
    b = pd.concat([_test_rows([False, False], seed=0), _test_rows([True, True], seed=2)])
    diff = paired_bootstrap(a, b)
    assert (diff.mean, diff.pairs, diff.tasks) == (1.0, 2, 2)  # only seed 0 pairs
    assert paired_bootstrap(_test_rows([True], seed=0), _test_rows([True], seed=1)) is None


def three_seed_sweep(root: Path) -> None:
    """rag: test SR 0.5 / 0.6 / 0.7; none: 0.2 on every seed; memrl: one seed, all tasks.

    Training (4 tasks, 2 epochs) is the same for each run: epoch 1 [1, 1, 0, 0],
    epoch 2 [0, 0, 1, 0]: SR 0.5, 0.25; CSR 0.5, 0.75; FR = 2 lost / 3 failed;
    FR of solved = 2 lost / 2 solved before = 1.
    """
    train = outcomes("train", "train", 1, [True, True, False, False]) + outcomes("train", "train", 2, [False, False, True, False])
    for seed, k in enumerate((5, 6, 7)):
        write_run(root, "rag", seed, train + outcomes("test", TEST_SPLIT, 2, successes(k)))
        write_run(root, "none", seed, train + outcomes("test", TEST_SPLIT, 2, successes(2)))
    write_run(root, "memrl", 0, train + outcomes("test", TEST_SPLIT, 2, successes(10)))


def _row(frame: pd.DataFrame, **where) -> pd.Series:
    mask = np.ones(len(frame), dtype=bool)
    for key, value in where.items():
        mask &= frame[key] == value
    assert mask.sum() == 1, where
    return frame[mask].iloc[0]


def test_aggregation_over_seeds(tmp_path):
    three_seed_sweep(tmp_path)
    agg = aggregate(load(tmp_path))
    rag = _row(agg.test_rates, variant="rag", split=TEST_SPLIT)
    assert rag["n"] == 3 and rag["mean"] == pytest.approx(0.6)
    assert (rag["ci_high"] - rag["ci_low"]) / 2 == pytest.approx(T_975_2 * 0.1 / math.sqrt(3))
    memrl = _row(agg.test_rates, variant="memrl", split=TEST_SPLIT)
    assert memrl["n"] == 1 and math.isnan(memrl["ci_low"])
    rates = agg.epoch_rates
    expected = {
        (1, "sr"): 0.5,
        (2, "sr"): 0.25,
        (1, "csr"): 0.5,
        (2, "csr"): 0.75,
        (2, "forgetting_rate"): 2 / 3,
        (2, "forgetting_of_solved"): 1.0,
    }
    for (epoch, metric), value in expected.items():
        cell = _row(rates, variant="rag", phase_name="train", epoch=epoch, metric=metric)
        assert cell["mean"] == pytest.approx(value) and cell["n"] == 3
    assert not ((rates["epoch"] == 1) & rates["metric"].str.startswith("forgetting")).any()


def test_differences_against_none(tmp_path):
    three_seed_sweep(tmp_path)
    diffs = aggregate(load(tmp_path)).differences
    memrl = _row(diffs, variant="memrl", split=TEST_SPLIT)
    assert memrl["baseline"] == "none"
    # memrl seed 0 solves all 10 tasks, none seed 0 tasks 0-1: +0.8 on average, tasks differ by 0 or 1
    assert memrl["diff_mean"] == pytest.approx(0.8) and memrl["pairs"] == 10
    assert 0.5 <= memrl["ci_low"] < 0.8 and memrl["ci_high"] == pytest.approx(1.0)
    rag = _row(diffs, variant="rag", split=TEST_SPLIT)
    assert rag["diff_mean"] == pytest.approx(0.6 - 0.2) and rag["pairs"] == 30
    assert "none" not in set(diffs["variant"])


def test_tables_show_intervals_and_labels(tmp_path):
    three_seed_sweep(tmp_path)
    results = load(tmp_path)
    tables = all_tables(results, aggregate(results))
    test = tables["test_sr"].view.set_index("variant")
    assert test.loc["rag", f"{TEST_SPLIT} SR"] == "60.0 ± 24.8"
    assert test.loc["memrl", f"{TEST_SPLIT} SR"] == "100.0 (n=1)"
    assert test.loc["none", f"{TEST_SPLIT} Δ vs none (pp)"] == "baseline"
    assert test.loc["rag", f"{TEST_SPLIT} Δ vs none (pp)"].startswith("+40.0 [")
    assert set(test["labels"]) == {"synthetic"}
    assert list(test.index) == ["none", "memrl", "rag"]
    train = tables["sr_csr_train"].view
    assert list(train.columns[:4]) == ["variant", "metric", "epoch 1", "epoch 2"]
    assert _row(train, variant="rag", metric="CSR")["epoch 2"] == "75.0 ± 0.0"


def test_partial_sweep_lists_incomplete_run(tmp_path):
    train = outcomes("train", "train", 1, successes(2, 4)) + outcomes("train", "train", 2, successes(3, 4))
    for seed in (0, 1):
        write_run(tmp_path, "rag", seed, train + outcomes("test", TEST_SPLIT, 2, successes(5)))
    # seed 2 stopped in epoch 2 after two of its four tasks: no COMPLETE, no metrics.json
    write_run(tmp_path, "rag", 2, train[:6], complete=False, split_sizes={"train": 4, TEST_SPLIT: 10})
    page = report(tmp_path)
    results = load(tmp_path)
    status = results.runs.set_index("seed")["status"]
    assert list(status) == ["complete", "complete", "incomplete"]
    assert (results.episodes["seed"] == 2).sum() == 6
    rates = aggregate(results).epoch_rates
    assert _row(rates, phase_name="train", epoch=1, metric="sr")["n"] == 3  # its whole epoch counts
    assert _row(rates, phase_name="train", epoch=2, metric="sr")["n"] == 2  # its partial one does not
    html = page.read_text()
    assert "Incomplete runs" in html and "method=rag,seed=2" in html
    assert (tmp_path / "report" / "tables" / "runs.csv").exists()


def test_single_run_folder_and_its_parent(tmp_path):
    folder = write_run(
        tmp_path / "exp", "memrl", 0, outcomes("train", "train", 1, successes(1, 4)) + outcomes("test", TEST_SPLIT, 1, successes(3))
    )
    page = report(folder)
    assert page == folder / "report" / "report.html"
    assert "30.0 (n=1)" in page.read_text()
    assert list(load(folder).runs["run"]) == ["method=memrl,seed=0"]
    assert list(load(tmp_path).runs["run"]) == ["exp/method=memrl,seed=0"]


def test_missing_sweep_runs_from_multirun_yaml(tmp_path):
    sweep = tmp_path / "demo"
    write_run(sweep, "none", 0, outcomes("train", "train", 1, successes(1, 4)))
    (sweep / "multirun.yaml").write_text(
        "hydra:\n"
        "  sweeper:\n    _target_: hydra._internal.core_plugins.basic_sweeper.BasicSweeper\n    params:\n      method: none,memrl\n      "
        "seed: 0\n"
        "  overrides:\n    task:\n    - +experiment=demo\n    - results_dir=/somewhere\n"
    )
    results = load(tmp_path)
    assert results.missing == ["demo/method=memrl,seed=0"]
    assert "demo/method=memrl,seed=0" in report(tmp_path).read_text()


def test_a_sweep_record_naming_an_environment_variable_is_read_as_written(tmp_path, monkeypatch):
    """Round 25b: `${oc.env:OPENAI_API_KEY}` added to a sweep's multirun.yaml was resolved while listing its missing runs,
    and the key of whoever made the report went into report.html."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-of-the-reporter")
    sweep = tmp_path / "demo"
    write_run(sweep, "none", 0, outcomes("train", "train", 1, successes(1, 4)))
    (sweep / "multirun.yaml").write_text(
        "hydra:\n"
        "  sweeper:\n    _target_: hydra._internal.core_plugins.basic_sweeper.BasicSweeper\n    params:\n      method: none,memrl\n"
        "  overrides:\n    task:\n    - +experiment=demo\n    - +note=${oc.env:OPENAI_API_KEY}\n"
    )
    assert all("canary" not in name for name in load(tmp_path).missing)
    assert "canary" not in report(tmp_path).read_text()


def test_variants_are_conditions_named_by_what_varies_and_sorted_numerically(tmp_path):
    assert settings_overrides(
        ["method=memrl", "seed=1", "+experiment=demo", "method.epsilon=0.1", "task_order_seed=4", "llm.threads=2"]
    ) == ("method.epsilon=0.1",)
    records = outcomes("train", "train", 1, successes(1, 4))
    for seed in (0, 1):
        for epsilon in ("0.1", "0", "0.05"):
            write_run(tmp_path, "memrl", seed, records, overrides=("protocol.epochs=1", f"method.epsilon={epsilon}"))
        write_run(tmp_path, "none", seed, records, overrides=("protocol.epochs=1",))
    results = load(tmp_path)
    runs = results.runs
    assert common_settings(runs) == ["protocol.epochs=1"]  # named once, not in every variant
    assert variant_order(results) == [
        "none",
        "memrl epsilon=0",
        "memrl epsilon=0.05",
        "memrl epsilon=0.1",
    ]  # 0 before 0.05 before 0.1: numbers as numbers
    assert runs.groupby("variant").size().eq(2).all()
    assert results.places["memrl epsilon=0"].marked and not results.places["memrl epsilon=0.1"].marked


def test_the_same_condition_from_two_presets_is_one_variant_and_a_repeated_run_counts_once(tmp_path):
    records = outcomes("train", "train", 1, successes(1, 4))
    main = write_run(tmp_path / "main", "memrl", 0, records, overrides=("method.epsilon=0.0",))
    write_run(tmp_path / "main", "memrl", 1, records, overrides=("method.epsilon=0.0",))
    again = write_run(
        tmp_path / "order", "memrl", 0, records, overrides=("method.epsilon=0",)
    )  # 0 from a command line, 0.0 from a YAML: one condition
    results = load(tmp_path)
    assert list(results.runs["variant"].unique()) == ["memrl"] and len(results.runs) == 2
    assert results.repeated == [f"{again.relative_to(tmp_path)} (the same run as {main.relative_to(tmp_path)})"]


def test_labels_beside_rows_and_in_headings(tmp_path):
    write_run(tmp_path, "memrl", 0, outcomes("train", "train", 1, successes(1, 4)), labels=("runtime_learning",))
    write_run(tmp_path, "rag", 0, outcomes("train", "train", 1, successes(1, 4)), labels=("synthetic", "finetuned_backbone"))
    page = report(tmp_path).read_text()
    view = all_tables(load(tmp_path), aggregate(load(tmp_path)))["sr_csr_train"].view.set_index("variant")
    assert view.loc["memrl", "labels"].unique().tolist() == ["runtime_learning"]
    assert view.loc["rag", "labels"].unique().tolist() == ["finetuned_backbone, synthetic"]
    assert "rows labelled synthetic are simulation, not LLM results" in page
    assert (
        "No command-line setting is common to every run" in page and "Settings shared by every run" not in page
    )  # not read as the method none
    assert (tmp_path / "report" / "tables.md").read_text().count("rows labelled synthetic are simulation, not LLM results") >= 1


def test_figures_without_data_are_skipped_with_a_note(tmp_path):
    write_run(tmp_path, "none", 0, outcomes("train", "train", 1, successes(1, 4)) + outcomes("test", TEST_SPLIT, 1, successes(3)), items=[])
    page = report(tmp_path).read_text()
    assert "Figure skipped — Learned Q against true utility" in page
    assert "Figure skipped — Retrieval concentration" in page
    assert page.count('<figure id="fig-') == len(list((tmp_path / "report" / "figures").glob("*.svg"))) > 0


def test_q_and_retrieval_figures_from_snapshot(tmp_path):
    train = [episode(f"train/{i}", "train", "train", 1, i % 2 == 0, info={"synthetic": True, "lesson_utility": i / 10}) for i in range(6)]
    train[5]["retrieved"] = [{"item_id": "train-train-e01-train/0", "similarity": 0.9}]
    items = [
        {
            "id": r["episode_id"],
            "content": "",
            "provenance": {k: r[k] for k in ("task_id", "split", "phase", "epoch", "episode_id", "success")},
            "fields": {"q_value": float(i)},
        }
        for i, r in enumerate(train)
    ]
    write_run(tmp_path, "memrl", 0, train, items=items)
    results = load(tmp_path)
    agg = aggregate(results)
    end = agg.per_run_end.iloc[0]
    assert end["spearman_q_utility"] == pytest.approx(1.0)
    assert end["never_retrieved_any_phase_share"] == pytest.approx(5 / 6)
    with_document = results.episodes.copy()  # an injection of none of the items (a document rebuilt from them, AWM's)
    with_document["retrieved_ids"] = [["workflows"] if ids else [] for ids in with_document["retrieved_ids"]]
    spread = retrieval_spread(dataclasses.replace(results, episodes=with_document)).iloc[0]
    assert np.isnan(spread["never_retrieved_any_phase_share"]) and np.isnan(spread["retrieval_gini"])
    page = report(tmp_path).read_text()
    assert "Spearman" in page and "Figure skipped — Learned Q" not in page and "Figure skipped — Retrieval" not in page


def test_colours_fixed_per_method():
    colours = method_colours(["zeta", "memrl", "none", "alpha"])
    assert (colours["none"], colours["memrl"]) == ("#7f7f7f", "#d62728")
    assert colours["alpha"] != colours["zeta"]
    assert method_colours(["alpha", "zeta"])["alpha"] == colours["alpha"]


def test_bad_input_names_the_folder(tmp_path, capsys):
    with pytest.raises(ReportInputError, match="no run folders"):
        load(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        cli_main([str(tmp_path / "nowhere")])
    assert exit_info.value.code == 2
    assert "nowhere: not a folder" in capsys.readouterr().err
    broken = tmp_path / "broken"
    broken.mkdir()
    write_manifest(broken, {"config": {"seed": 0}})
    with pytest.raises(ReportInputError, match=r"no readable run folder; .*broken/manifest.json: no 'method.name'"):
        load(tmp_path)


def test_cli_writes_report_and_prints_its_path(tmp_path, capsys):
    three_seed_sweep(tmp_path / "results")
    cli_main([str(tmp_path / "results"), "--out", str(tmp_path / "out")])
    assert capsys.readouterr().out.strip() == str(tmp_path / "out" / "report.html")
    assert {p.name for p in (tmp_path / "out" / "tables").glob("*.csv")} == {
        "sr_csr_train.csv",
        "forgetting_train.csv",
        "test_sr.csv",
        "memory.csv",
        "usage.csv",
        "gain_cost.csv",
        "runs.csv",
    }


def test_latency_percentiles_leave_out_cached_act(tmp_path):
    records = []
    for i in range(100):
        cached = i >= 90  # answered from the cache: act latency of a cache read
        usage = {"calls": 1, "cache_hits": int(cached), "prompt_tokens": 10, "completion_tokens": 2}
        records.append(
            episode(
                f"train/{i}",
                "train",
                "train",
                1,
                True,
                latency_s={"retrieve": (i + 1) / 1000, "act": 0.001 if cached else 1.0 + i},
                act_usage=usage,
            )
        )
    write_run(tmp_path, "rag", 0, records)
    latency = aggregate(load(tmp_path)).latency.set_index("stage")
    assert latency.loc["retrieve", "p50_s"] == pytest.approx(0.0505) and latency.loc["retrieve", "p95_s"] == pytest.approx(0.09505)
    assert latency.loc["act", "n"] == 90 and latency.loc["act", "p50_s"] == pytest.approx(45.5)
    usage = aggregate(load(tmp_path)).per_run_end.iloc[0]
    assert (usage["act_calls"], usage["act_prompt_tokens"], usage["act_completion_tokens"]) == (100, 1000, 200)
    view = all_tables(load(tmp_path), aggregate(load(tmp_path)))["latency"].view.iloc[0]
    assert view["retrieve p50 / p95"] == "50.5 ms / 95 ms" and view["act p50 / p95"] == "45.5 s / 85.5 s"


def test_same_overrides_different_settings_get_told_apart(tmp_path):
    records = outcomes("train", "train", 1, successes(1, 4))
    for experiment, epochs in (("short", 1), ("long", 9)):
        folder = write_run(tmp_path / experiment, "rag", 0, records)
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["config"]["protocol"] = {"epochs": epochs}  # set by an experiment preset, not an override
        write_manifest(folder, manifest)
    assert sorted(load(tmp_path).runs["variant"]) == ["rag | protocol.epochs=1", "rag | protocol.epochs=9"]  # named by what differs


def test_epsilon_swept_under_two_selection_rules_draws_a_line_per_rule(tmp_path, monkeypatch):
    from memrl_bench.report import figures

    for selection in ("greedy", "softmax"):
        for epsilon, solved in (("0", 2), ("0.1", 5)):
            for seed in (0, 1):
                write_run(
                    tmp_path,
                    "memrl",
                    seed,
                    outcomes("train", "train", 1, successes(solved + seed, 10)),
                    overrides=(f"method.selection={selection}", f"method.epsilon={epsilon}"),
                )
    write_run(tmp_path, "none", 0, outcomes("train", "train", 1, successes(1, 10)))
    results = load(tmp_path)
    monkeypatch.setattr(figures, "_svg", lambda fig, name: fig)  # keep the matplotlib figure to read its lines
    fig = figures.axes_figure(results, aggregate(results), figures.Styles(results)).svg
    (ax,) = fig.axes[:1]
    lines = [line for line in ax.get_lines() if line.get_label() == "_line"]
    assert [list(line.get_xdata()) for line in lines] == [[0.0, 0.1], [0.0, 0.1]]  # greedy and softmax, each along epsilon
    assert len({line.get_color() for line in lines}) == 2
    assert [line.get_label() for line in ax.get_lines() if line.get_linestyle() == "--"] == ["none"]  # the baseline as a flat line
    assert "method.epsilon" in ax.get_xlabel() or "method.epsilon" in fig.axes[-1].get_xlabel()


def test_report_shows_prompt_tokens_trimmed_tokens_format_failures_and_context_refusals_per_method(tmp_path):
    usage = {"calls": 2, "prompt_tokens": 300, "completion_tokens": 20}
    harness = {"trimmed_tokens": 40, "format_failures": 1, "truncated_actions": 1, "fuzzy_matched_actions": 0}
    rag = outcomes("train", "train", 1, [True, False], act_usage=usage, info=harness)
    rag[1]["status"] = "context_exceeded"
    write_run(tmp_path, "rag", 0, rag)
    write_run(tmp_path, "none", 0, outcomes("train", "train", 1, [True, False], act_usage=usage))
    view = all_tables(load(tmp_path), aggregate(load(tmp_path)))["usage"].view.set_index("variant")
    assert view.loc["rag", "act: prompt tokens / run"].startswith("600")
    assert view.loc["rag", "act: history tokens trimmed to fit / run"].startswith("80")
    assert view.loc["rag", "act: format failures (not executed) / run"].startswith("2")
    assert view.loc["rag", "episodes refused for context length / run"].startswith("1")
    assert view.loc["none", "episodes refused for context length / run"].startswith("0")


def gain_cost_folder(root: Path, with_none: bool = True) -> None:
    """Two seeds each; test SR: none 2/10, rag 6/10 injecting 300 characters a prompt, full_context 4/10
    injecting 1500, simplemem 5/10 injecting 150 with one memory call per training episode."""
    train = outcomes("train", "train", 1, [True, False, True, False])
    memory_call = {"calls": 1, "prompt_tokens": 90, "completion_tokens": 10}
    arms = {"none": (2, 0, None), "rag": (6, 300, None), "full_context": (4, 1500, None), "simplemem": (5, 150, memory_call)}
    for method, (k, chars, usage) in arms.items():
        for seed in (0, 1) if with_none or method != "none" else ():
            played = [r | {"injected_chars": chars} | ({"memory_usage": usage} if usage else {}) for r in train]
            write_run(root, method, seed, played + outcomes("test", TEST_SPLIT, 2, successes(k), injected_chars=chars))


def test_gain_against_cost_per_method(tmp_path):
    gain_cost_folder(tmp_path)
    results = load(tmp_path)
    agg = aggregate(results)
    gains = agg.gain_cost.set_index("variant")
    assert set(gains.index) == {"rag", "full_context", "simplemem"} and set(gains["baseline"]) == {"none"}
    assert gains.loc["rag", "gain_mean"] == pytest.approx(0.4) and gains.loc["rag", "pairs"] == 20
    assert gains.loc["rag", "injected_tokens"] == 100 and gains.loc["full_context", "injected_tokens"] == 500  # ceil(chars / 3)
    assert gains.loc["rag", "gain_per_1k_tokens_mean"] == pytest.approx(4.0)  # +40 pp for 0.1k tokens
    assert gains.loc["full_context", "gain_per_1k_tokens_mean"] == pytest.approx(0.2 / 0.5)
    rag = gains.loc["rag"]
    assert rag["gain_per_1k_tokens_low"] == pytest.approx(rag["gain_low"] / 0.1) and rag["gain_low"] < 0.4 < rag["gain_high"]
    assert gains.loc["simplemem", "memory_calls_per_episode"] == pytest.approx(4 / 14)  # 4 training calls over 14 episodes
    assert gains.loc["simplemem", "gain_per_call_mean"] == pytest.approx(0.3 / (4 / 14))
    assert np.isnan(rag["gain_per_call_mean"])  # rag makes no memory call: no ratio

    tables = all_tables(results, agg)
    view = tables["gain_cost"].view.set_index("variant")
    assert list(view.index) == ["none", "full_context", "rag", "simplemem"]
    assert view.loc["none", "test SR gain vs none (pp) [95% CI]"] == "baseline"
    assert view.loc["rag", "test SR gain vs none (pp) [95% CI]"].startswith("+40.0 [")
    assert view.loc["rag", "injected tokens / prompt (test, estimated)"] == "100 ± 0"
    assert view.loc["rag", "gain per 1k injected tokens (pp)"].startswith("+400.00 [")
    assert view.loc["rag", "gain per memory call / episode (pp)"] == "–"
    figure = all_figures(results, agg)["gain_cost"]
    assert figure.svg is not None
    styles = Styles(results)
    for variant in ("rag", "full_context", "simplemem"):
        assert f'id="series-{styles.index[variant]}' in figure.svg


def test_no_gain_against_cost_without_a_none_baseline(tmp_path):
    gain_cost_folder(tmp_path, with_none=False)
    results = load(tmp_path)
    agg = aggregate(results)
    assert agg.gain_cost.empty and "gain_cost" not in all_tables(results, agg)
    assert all_figures(results, agg)["gain_cost"].svg is None
