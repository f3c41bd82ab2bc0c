"""The report of real runs (the runner on a small synthetic world), rendered in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from memrl_bench.report import report
from memrl_bench.report.aggregate import aggregate
from memrl_bench.report.load import load
from memrl_bench.runner import run

CHROMIUM_MISSING = "chromium not installed: apt-get install chromium chromium-driver"
METHODS = ("none", "rag", "memrl")
SEEDS = (0, 1)


def small_config(method: str, seed: int) -> dict:
    overrides = [f"method={method}", f"seed={seed}"]
    return {
        "env": {"name": "synthetic", "seed": 0, "n_types": 4, "n_ood_types": 2, "intent_dim": 16, "tasks": {"train": 40, "validation": 20, "test_in_distribution": 20, "test_out_of_distribution": 20}},
        "method": {"name": method},
        "llm": {"name": "none"},
        "embedder": {"name": "env_intent"},
        "protocol": {"epochs": 3, "batch_size": 8},
        "actor": {},
        "seed": seed,
        "task_order_seed": seed,
        "progress": False,
        "hydra": {"overrides": overrides},
    }


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    for method in METHODS:
        for seed in SEEDS:
            run(small_config(method, seed), root / "small" / f"method={method},seed={seed}")
    return root


@pytest.fixture(scope="module")
def page(sweep) -> Path:
    return report(sweep)


def test_report_agrees_with_each_runs_metrics_json(sweep):
    results = load(sweep)
    assert sorted(results.runs["variant"].unique()) == sorted(METHODS)
    assert results.runs["complete"].all()
    agg = aggregate(results)
    for _, row in agg.per_run_epoch.iterrows():
        metrics = json.loads((Path(results.runs.set_index("run").loc[row["run"], "path"]) / "metrics.json").read_text())
        assert row["sr"] == pytest.approx(metrics["success_rate"][row["phase_name"]][str(row["epoch"])])
        if row["phase_name"] in ("train", "validation"):
            assert row["csr"] == pytest.approx(metrics["cumulative_success_rate"][row["phase_name"]][str(row["epoch"])])
    for _, end in agg.per_run_end.iterrows():
        metrics = json.loads((Path(results.runs.set_index("run").loc[end["run"], "path"]) / "metrics.json").read_text())
        assert end["memory_items"] == metrics["memory_final"]["items"]
        if metrics["memory_final"]["retrieval_gini"] is not None:
            assert end["retrieval_gini"] == pytest.approx(metrics["memory_final"]["retrieval_gini"])
        if metrics.get("synthetic", {}).get("spearman_q_true_utility") is not None:
            assert end["spearman_q_utility"] == pytest.approx(metrics["synthetic"]["spearman_q_true_utility"])


def test_page_is_self_contained(page):
    html = page.read_text()
    assert not re.search(r"<(script|link)\b", html)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    images = re.findall(r'<img [^>]*src="data:image/png;base64,', html)
    assert len(images) == len(list((page.parent / "figures").glob("*.png"))) == 7
    assert "synthetic (simulation, not LLM results)" in html
    assert "<details>" in html and "config hash" in html


def _chromium():
    if not (shutil.which("chromium") or shutil.which("chromium-browser")) or not shutil.which("chromedriver"):
        pytest.skip(CHROMIUM_MISSING)
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed: pip install selenium (in the test extra)")
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1000"):
        options.add_argument(flag)
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=webdriver.ChromeService(shutil.which("chromedriver")), options=options)


def test_page_renders_in_chromium(page, tmp_path):
    browser = _chromium()
    try:
        browser.get(page.as_uri())
        widths = browser.execute_script("return Array.from(document.images).map(img => img.naturalWidth)")
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1280, height)
        screenshot = tmp_path / "report.png"
        browser.save_screenshot(str(screenshot))
        console = browser.get_log("browser")
    finally:
        browser.quit()
    assert len(widths) == 7 and all(w > 0 for w in widths), widths
    assert [entry for entry in console if entry["level"] == "SEVERE"] == []
    from PIL import Image

    with Image.open(screenshot) as image:
        assert image.height > 2000  # the whole page, not one screen
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is None or len(colours) > 50  # not blank


def test_figures_draw_the_variants_with_the_most_runs(monkeypatch):
    import pandas as pd

    from memrl_bench.report import figures

    monkeypatch.setattr(figures, "FIGURE_VARIANTS", 3)
    runs = pd.DataFrame(
        [("memrl", f"memrl [eps={e}]") for e in (0, 0.1, 0.2) for _ in range(3)] + [("memrl", "memrl [order=1]"), ("none", "none"), ("none", "none"), ("rag", "rag")],
        columns=["method", "variant"],
    )
    styles = figures.Styles(runs)
    # three variants have 3 runs; in the tables' order (baseline first) with the rest left out
    assert styles.order == ["memrl [eps=0.1]", "memrl [eps=0.2]", "memrl [eps=0]"] and styles.left_out == 3


def test_a_folder_with_more_variants_than_a_figure_draws_says_so(sweep, monkeypatch):
    from memrl_bench.report import figures

    monkeypatch.setattr(figures, "FIGURE_VARIANTS", 2)
    drawn = figures.all_figures(load(sweep), aggregate(load(sweep)))
    made = [f for f in drawn.values() if f.png is not None]
    assert len(made) >= 5 and all("the 2 variants with the most runs; 1 more are in the tables" in f.title for f in made)
