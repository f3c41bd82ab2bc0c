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
from memrl_bench.runner.loop import run

CHROMIUM_MISSING = "chromium not installed: apt-get install chromium chromium-driver"
METHODS = ("none", "rag", "memrl")
SEEDS = (0, 1)


def small_config(method: str, seed: int) -> dict:
    overrides = [f"method={method}", f"seed={seed}"]
    return {
        "env": {
            "name": "synthetic",
            "seed": 0,
            "n_types": 4,
            "n_ood_types": 2,
            "intent_dim": 16,
            "tasks": {"train": 40, "validation": 20, "test_in_distribution": 20, "test_out_of_distribution": 20},
        },
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


def test_gain_against_cost_of_real_runs_of_none_rag_and_full_context(tmp_path):
    for method in ("none", "rag", "full_context"):
        run(
            small_config(method, 0) | {"method": {"name": method, **({"budget_tokens": 300} if method == "full_context" else {})}},
            tmp_path / f"method={method},seed=0",
        )
    results = load(tmp_path)
    agg = aggregate(results)
    gains = agg.gain_cost.set_index("variant")
    assert set(gains.index) == {"rag", "full_context"}
    test = results.episodes[results.episodes["phase"] == "test"]
    for variant in ("rag", "full_context"):
        chars = test.loc[test["variant"] == variant, "injected_chars"]
        assert (
            gains.loc[variant, "injected_tokens"] == pytest.approx((-(-chars // 3)).mean()) and gains.loc[variant, "pairs"] == 40
        )  # both test splits, 20 tasks each
    assert gains.loc["full_context", "injected_tokens"] <= 300
    html = report(tmp_path).read_text()
    assert '<section id="gain_cost">' in html and 'id="fig-gain_cost"><figcaption>' in html


def test_page_is_self_contained(page):
    html = page.read_text()
    assert not re.search(r"<(script|link)\b", html)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    figures = re.findall(r'<figure id="fig-[a-z_]+"><figcaption>[^<]*</figcaption><svg ', html)
    assert len(figures) == len(list((page.parent / "figures").glob("*.svg"))) == 8  # none, rag and memrl vary no number: no axes figure
    assert "Figure skipped — Along the study" in html
    assert "synthetic (simulation, not LLM results)" in html
    assert "<details>" in html and "config hash" in html


def _chromium():
    if not (shutil.which("chromium") or shutil.which("chromium-browser")) or not shutil.which("chromedriver"):
        pytest.skip(CHROMIUM_MISSING)
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed: pip install selenium (in the test extra)")
    options = webdriver.ChromeOptions()
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=webdriver.ChromeService(shutil.which("chromedriver")), options=options)


def test_page_renders_in_chromium(page, tmp_path):
    browser = _chromium()
    try:
        browser.get(page.as_uri())
        widths = browser.execute_script(
            "return Array.from(document.querySelectorAll('figure svg')).map(svg => svg.getBoundingClientRect().width)"
        )
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1280, height)
        screenshot = tmp_path / "report.png"
        browser.save_screenshot(str(screenshot))
        console = browser.get_log("browser")
    finally:
        browser.quit()
    assert len(widths) == 8 and all(w > 0 for w in widths), widths
    assert [entry for entry in console if entry["level"] == "SEVERE"] == []
    from PIL import Image

    with Image.open(screenshot) as image:
        assert image.height > 2000  # the whole page, not one screen
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is None or len(colours) > 50  # not blank


def test_figures_draw_the_variants_with_the_most_runs(monkeypatch):
    import types

    import pandas as pd

    from memrl_bench.report import figures
    from memrl_bench.report.axes import places

    monkeypatch.setattr(figures, "FIGURE_VARIANTS", 3)
    configs = {f"e{e}": {"method": {"name": "memrl", "epsilon": e}} for e in (0.2, 0.1, 0)} | {
        "o": {"method": {"name": "memrl", "epsilon": 0}, "protocol": {"order": 1}}
    }
    configs |= {"none": {"method": {"name": "none"}}, "rag": {"method": {"name": "rag"}}}
    by_key = places(configs)
    runs = pd.DataFrame({"variant": [by_key[k].label for k in ["e0.2", "e0.1", "e0"] * 3 + ["o", "none", "none", "rag"]]})
    styles = figures.Styles(types.SimpleNamespace(runs=runs, places={p.label: p for p in by_key.values()}))
    # three variants have 3 runs; in the tables' order (baseline first, numbers as numbers) with the rest left out
    assert styles.order == ["memrl epsilon=0", "memrl epsilon=0.1", "memrl epsilon=0.2"] and styles.left_out == 3
    assert styles.marked("memrl epsilon=0") and len({styles.colour[v] for v in styles.order}) == 3  # one family, three shades


def test_a_folder_with_more_variants_than_a_figure_draws_says_so(sweep, monkeypatch):
    from memrl_bench.report import figures

    monkeypatch.setattr(figures, "FIGURE_VARIANTS", 2)
    drawn = figures.all_figures(load(sweep), aggregate(load(sweep)))
    made = [f for f in drawn.values() if f.svg is not None]
    assert len(made) >= 5 and all("the 2 variants with the most runs; 1 more are in the tables" in f.title for f in made)


# ---- a critique study's report, read in the browser ----------------------------------------

CRITIQUE = [
    "env.tasks.train=8",
    "env.tasks.validation=4",
    "env.tasks.test_in_distribution=4",
    "env.tasks.test_out_of_distribution=4",
    "protocol.epochs=2",
    "task_order_seed=0",
    "seed=0",
]
SERIES_COLOURS = """
const out = {};
for (const fig of document.querySelectorAll('figure[id^="fig-"]')) {
  const colours = new Set();
  for (const el of fig.querySelectorAll('[id^="series-"] path, [id^="series-"] use, [id^="series-"] rect')) {
    const style = getComputedStyle(el);
    for (const c of [style.fill, style.stroke]) if (c && c !== 'none' && c !== 'rgb(0, 0, 0)' && c !== 'rgb(255, 255, 255)') colours.add(c);
  }
  const texts = Array.from(fig.querySelectorAll('text')).map(t => t.textContent);
  const edged = fig.querySelectorAll('[id^="series-"] [style*="stroke: #000000"]').length;
  out[fig.id] = {colours: colours.size, texts: texts, edged: edged};
}
return out;
"""


@pytest.fixture(scope="module")
def critique_page(tmp_path_factory) -> Path:
    """The report of a small critique study: none, rag and memrl epsilon = 0, 0.05, 0.1, 0.2 and softmax T = 0.1, 0.3, 1 at two outcome
    temperatures.
    """
    from memrl_bench.cli import study

    root = tmp_path_factory.mktemp("critique")
    jobs = [
        job
        for preset in ("critique", "critique_epsilon", "critique_softmax")
        for job in study.expand(preset, [f"results_dir={root}", "progress=false", *CRITIQUE])
    ]
    assert len(jobs) == 18
    study.run_jobs(jobs)
    return report(root / "critique")


@pytest.mark.slow  # 18 runs of the critique presets (~45 s on 2 cores)
def test_the_critique_report_tells_its_variants_apart_by_colour_and_draws_the_epsilon_axis(critique_page):
    html = critique_page.read_text()
    assert html.count('<section id="findings">') == 1 and html.count("<h2>Findings on the critique") == 1
    browser = _chromium()
    try:
        browser.get(critique_page.as_uri())
        figures = browser.execute_script(SERIES_COLOURS)
        headers = browser.execute_script(
            "const th = Array.from(document.querySelectorAll('h3')).find(h => h.textContent.startsWith('Test SR per "
            "split')).nextElementSibling.querySelectorAll('th');"
            "return Array.from(th).map(h => { const r = h.getBoundingClientRect(); return [r.left, r.right, h.scrollWidth <= h.clientWidth "
            "+ 1]; });"
        )
    finally:
        browser.quit()
    # none, rag, memrl greedy in 4 shades of its colour (epsilon 0, 0.05, 0.1, 0.2), memrl softmax in 3 (T = 0.1, 0.3, 1): 9 colours, not
    # one red for all of memrl
    for name, colours in (
        ("fig-sr_csr", 9),
        ("fig-test_sr", 9),
        ("fig-memory_growth", 9),
        ("fig-retrieval", 8),
    ):  # none keeps no memory to retrieve
        assert figures[name]["colours"] == colours, (name, figures[name]["colours"])
    axes = figures["fig-axes"]
    assert any("method.epsilon" in t for t in axes["texts"]) and {"0", "0.05", "0.1", "0.2"} <= set(axes["texts"])
    assert axes["edged"] > 0 and figures["fig-sr_csr"]["edged"] > 0  # epsilon = 0 drawn with a black-edged marker
    assert axes["colours"] >= 6  # the epsilon line's shades, softmax's, none's and rag's flat lines
    assert all(right <= next_left + 0.5 for (_, right, _), (next_left, _, _) in zip(headers, headers[1:])), (
        headers
    )  # test SR headers do not overlap
    assert all(fits for *_, fits in headers), headers


def test_the_axes_figure_draws_each_interval_within_its_metrics_range(sweep):
    from memrl_bench.report import figures

    results = load(sweep)
    numbers = figures._axis_numbers(results, aggregate(results))
    assert "retrieval Gini" in numbers and any(name.endswith("(%)") for name in numbers)
    for name, by_variant in numbers.items():  # two seeds: t-intervals of rates reach past 0 and 100 unless clipped
        top = 100 if name.endswith("(%)") else 1
        assert all(0 <= low <= high <= top for _, low, high in by_variant.values() if low == low), (name, by_variant)


def test_the_lorenz_figure_names_the_gini_the_memory_table_shows(sweep):
    from memrl_bench.report import figures
    from memrl_bench.report.tables import all_tables

    results = load(sweep)
    agg = aggregate(results)
    svg = figures.retrieval_figure(results, agg, figures.Styles(results)).svg
    in_figure = dict(re.findall(r">([^<>]+) \(Gini (\d\.\d\d)\)<", svg))
    in_table = all_tables(results, agg)["memory"].view.set_index("variant")["retrieval Gini"]
    assert set(in_figure) == {"rag", "memrl"}, in_figure  # none keeps no memory
    for variant, gini in in_figure.items():
        assert in_table[variant].startswith(gini), (variant, gini, in_table[variant])


# ---- text the harness did not write lands inert (memrl_bench.core.markup) ----------------------------

MARKUP_MODEL = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def markup_page(tmp_path_factory) -> Path:
    """The report of one MMLU run whose folder is named run<!--<script> and whose model is named with an <img onerror>."""
    from tests.fault_server import FaultServer
    from tests.helpers import composed, tiny_mmlu

    root = tmp_path_factory.mktemp("markup")
    with FaultServer(reply=lambda messages: "Answer: B") as server:
        overrides = (
            "env=mmlu",
            f"env.data_dir={tiny_mmlu(root / 'mmlu')}",
            "method=none",
            "llm=openai",
            f"llm.base_url={server.base_url}",
            f"llm.model='{MARKUP_MODEL}'",
        )
        run(
            composed(
                *overrides,
                "embedder=openai",
                f"embedder.base_url={server.base_url}",
                "embedder.model=e",
                "protocol.epochs=1",
                "progress=false",
            ),
            root / "results" / "run<!--<script>",
        )
    return report(root / "results")


def test_a_run_folder_named_like_markup_leaves_compare_html_whole(markup_page):
    page = (markup_page.parent / "episodes" / "compare.html").read_text()
    inline = re.search(r'<script type="application/json" id="runs">(.*?)</script>', page, re.S).group(1)
    assert "<" not in inline and ">" not in inline and "&" not in inline  # no comment, tag or character reference for the HTML parser
    assert json.loads(inline) == [{"n": 0, "run": "run<!--<script>", "variant": "none"}]
    assert page.endswith('<div id="compare">loading…</div></main></body></html>\n')  # the page after the JSON is still there


def test_a_model_named_like_markup_is_text_in_tables_md_and_report_html(markup_page):
    tables = (markup_page.parent / "tables.md").read_text()
    assert MARKUP_MODEL in json.loads(re.search(r"\| (\{[^|]*\\<img[^|]*\}) \|", tables).group(1).replace("\\", ""))["model"]
    assert re.search(r"(?<!\\)<", tables) is None  # every < is escaped: no raw HTML for a Markdown renderer
    assert "run\\<!--\\<script\\>" in tables
    html_page = markup_page.read_text()
    assert "<img" not in html_page and "&lt;img src=x onerror=alert(1)&gt;" in html_page


def test_findings_markdown_escapes_the_model_name():
    from memrl_bench import findings as fd
    from memrl_bench.core.stats import t_interval

    row = fd.row(f"memrl {MARKUP_MODEL} | x", t_interval([0.1, 0.2, 0.3]), +1, primary=True)
    found = [fd.Finding(fd.claim_by_id("regret"), (row,), fd.Section(f"REAL MODEL {MARKUP_MODEL} on env mmlu", synthetic=False))]
    markdown = fd.render_markdown(found, Path("results<b>"))
    assert re.search(r"(?<!\\)[<>]", markdown) is None and "\\<img src=x onerror=alert(1)\\> \\| x" in markdown


def test_a_name_written_as_a_markdown_link_is_no_link():
    from memrl_bench.core.markup import markdown_text

    assert markdown_text("[l](javascript:alert(2))") == "[l\\](javascript:alert(2))"  # "\]" closes no link text
    assert markdown_text("0.058 [-0.007, 0.123] (n=3)") == "0.058 [-0.007, 0.123] (n=3)"  # intervals read as before
