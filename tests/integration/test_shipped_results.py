"""The real-model study shipped in results/critique_real (issue 19) replays from its response cache.

README, "A real model": `memrl-bench +experiment=critique_real llm.cache_mode=read_only
llm.cache_path=results/critique_real/llm_cache.sqlite` re-renders the study's findings with no
server (llm=local in read_only mode starts none: memrl_bench.llm.client.CacheReplayModel), and
the same study run into a fresh folder from that cache gives the shipped episodes. A copy of the
shipped folder is used, so the repository is never written.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import readme_command

from memrl_bench import findings as fd
from memrl_bench.core.schema import strip_measured
from memrl_bench.core.stats import NOT_MEASURED
from memrl_bench.core.transcripts import TRANSCRIPTS, TranscriptLog, agrees_with_log

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "results" / "critique_real"
RERENDER = "memrl-bench +experiment=critique_real llm.cache_mode=read_only llm.cache_path=results/critique_real/llm_cache.sqlite"
GPU_COMMAND_START = "memrl-bench +experiment=critique_real env=alfworld"


def readme() -> str:
    return (ROOT / "README.md").read_text()


def memrl_bench(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memrl_bench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def episodes(folder: Path) -> list[dict]:
    return [strip_measured(json.loads(line)) for line in (folder / "episodes.jsonl").read_text().splitlines() if '"phase"' in line]


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """A copy of the shipped study at results/critique_real below a scratch folder."""
    root = tmp_path_factory.mktemp("shipped")
    shutil.copytree(SHIPPED, root / "results" / "critique_real", ignore=shutil.ignore_patterns("report"))
    return root


def test_the_shipped_study_is_whole():
    runs = sorted(p.parent for p in SHIPPED.rglob("manifest.json"))
    assert len(runs) == 24 and all((r / "COMPLETE").exists() and (r / "transcripts.jsonl.gz").exists() for r in runs)
    models = {json.dumps(json.loads((r / "manifest.json").read_text())["model"]["model_sha256"]) for r in runs}
    assert len(models) == 1  # one model for the whole study
    assert (SHIPPED / "report" / "report.html").exists() and (SHIPPED / "report" / "episodes" / "index.html").exists()
    # every claim this real-model study can measure is measured (none left "not measured" by a missing measure); the families'
    # claims have a real-model study of their own (llb_db_families)
    measured = {f.id for f in fd.findings(SHIPPED, warn=None) if f.verdict != NOT_MEASURED}
    assert measured == {c.id for c in fd.claims() if c.real_measured_by and fd.STUDY_KINDS[c.study_kind].real_study == "critique_real"}


def test_every_shipped_transcript_record_agrees_with_its_episode():
    """The viewer's join of transcripts to the log (agrees_with_log) proved on every real completion shipped: a record it
    refused here would hide a real transcript."""
    checked = 0
    for path in sorted((ROOT / "results").rglob(TRANSCRIPTS)):
        logged = {r["episode_id"]: r for r in map(json.loads, (path.parent / "episodes.jsonl").read_text().splitlines())}
        bound = json.loads((path.parent / "manifest.json").read_text()).get("transcripts_format", 1) >= 2
        for record in TranscriptLog(path.parent).read():
            assert agrees_with_log(record, logged[record["episode_id"]], bound), (path, record["episode_id"])
            checked += 1
    assert checked >= 4_800, checked  # the LLB-DB and critique studies' episodes with an LLM call


def test_the_readme_command_rerenders_the_findings_with_no_server(copy):
    assert f"\n{RERENDER}\n" in readme()
    result = memrl_bench(shlex.split(RERENDER)[1:], cwd=copy)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("is complete; nothing to do") + result.stdout.count("is complete; nothing to do") == 24
    assert (copy / "results" / "critique_real" / "findings.md").read_text() == (SHIPPED / "findings.md").read_text()


def test_a_slice_run_afresh_from_the_cache_gives_the_shipped_episodes(copy, tmp_path):
    """MemRL (epsilon = 0) on task order 0, run into an empty folder: every completion and token
    count comes from the shipped cache (a miss would stop the run), and the log equals the shipped one."""
    cache = copy / "results" / "critique_real" / "llm_cache.sqlite"
    args = [
        "+experiment=critique_real_methods",
        "method=memrl",
        "task_order_seed=0",
        f"results_dir={tmp_path}",
        "llm.cache_mode=read_only",
        f"llm.cache_path={cache}",
        "progress=false",
    ]
    result = memrl_bench(args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    name = "method=memrl,task_order_seed=0"
    fresh, shipped = episodes(tmp_path / "critique_real" / "main" / name), episodes(SHIPPED / "main" / name)
    assert len(fresh) == len(shipped) == 25 * 2 + 120
    assert fresh == shipped


@pytest.mark.parametrize("study", ["critique_real", "llb_db"])
def test_the_readme_findings_table_holds_the_shipped_studys_numbers(study):
    """Each shipped real-model study's column of README's findings table is what its shipped runs give
    (scripts/readme_findings.py wrote it; the real columns come last, in this order)."""
    shipped = ROOT / "results" / study
    found = fd.findings(shipped, warn=None)
    expected = fd.comparison_table([(found[0].section.label, found)]).splitlines()
    block = readme().split("<!-- findings-table:start -->\n", 1)[1].split("<!-- findings-table:end -->", 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    header = lines[0].strip("| ").split(" | ")
    column = header.index(found[0].section.label)  # the study's label heads its column
    rows = lines[1:]
    assert len(rows) == len(expected) - 2
    for row, mine in zip(rows, expected[2:]):
        cells, wanted = row.strip("| ").split(" | "), mine.strip("| ").split(" | ")
        assert cells[0] == wanted[0] and cells[column : column + 2] == wanted[-2:], cells[0]


def test_the_gpu_command_composes_every_job_of_the_study():
    """README's command for a GPU server (ALFWorld at MemRL's scale): each of the study's jobs
    composes and passes the config checks."""
    from omegaconf import OmegaConf

    from memrl_bench.cli.hydra_support import compose, composing
    from memrl_bench.cli.study import study_jobs
    from memrl_bench.core.config import validate_config

    words = readme_command(readme(), GPU_COMMAND_START)[1:]
    overrides = [w for w in words if not w.startswith("+experiment=")]
    with composing():
        presets = list(compose(["+experiment=critique_real"]).study.presets)
    jobs = study_jobs(presets, ["results_dir=runs", *overrides])
    assert len(jobs) == 24
    with composing():
        for job in jobs:
            cfg = OmegaConf.to_container(compose(job), resolve=True)
            assert cfg["env"]["name"] == "alfworld" and cfg["llm"]["name"] == "openai"
            validate_config(cfg)


def test_the_families_readme_holds_findings_1_3_and_5_as_their_runs_give_them(tmp_path):
    """Every arm of findings 1, 3 and 5 in results/llb_db_families is complete: its README's numbers are what their command
    computes from them and the LLB-DB study's twins, and its findings.md is that command's output over all of them."""
    study = ROOT / "results" / "llb_db_families"
    text = (study / "README.md").read_text()
    for name in ("methods", "greedy", "explore"):
        shutil.copytree(ROOT / "results" / "llb_db" / name, tmp_path / "llb_db" / name)
    shutil.copytree(study / "llb_db" / "families_step", tmp_path / "llb_db" / "families_step")
    rows = {row.label: row for found in fd.findings(tmp_path, warn=None) for row in found.rows}
    memrl, success = "memrl ε=0.01", "held-out test success, paired on the test task"
    for pair in (f"{memrl} step - {memrl}", "rag step - rag", f"{memrl} step - none", "rag step - none"):
        assert rows[f"{pair}: {success}"].text.split(" (n=")[0] in text, pair
    assert rows[f"{memrl} step - {memrl}: {success}"].verdict == "inconclusive at this sample size"
    for arm in (memrl, "rag"):
        for measure in ("injected characters", "acting prompt tokens"):
            step, task = (rows[f"{arm}{kind}: {measure} per test episode"].mean for kind in (" step", ""))
            assert f"| {round(step):,} | {round(task):,} |" in text, (arm, measure)
    # finding 3: both skill-bank arms are complete too
    shutil.copytree(study / "llb_db" / "families_skills", tmp_path / "llb_db" / "families_skills")
    rows = {row.label: row for found in fd.findings(tmp_path, warn=None) for row in found.rows}
    for pair in ("skillbank - rag", "skillbank - none", "skillbank+Q - skillbank", "skillbank+Q - rag", "skillbank+Q - none"):
        assert rows[f"{pair}: {success}"].text.split(" (n=")[0] in text, pair
    assert rows[f"skillbank - rag: {success}"].verdict == "supported"
    assert rows[f"skillbank+Q - skillbank: {success}"].side == "spans 0"
    # finding 5: ReasoningBank, AWM, DC-Cu and DC-RS
    for name in ("families_baselines", "families_dc"):
        shutil.copytree(study / "llb_db" / name, tmp_path / "llb_db" / name)
    rows = {row.label: row for found in fd.findings(tmp_path, warn=None) for row in found.rows}
    memrl, baselines = "memrl ε=0", ("reasoningbank", "awm", "dynamic_cheatsheet DC-Cu", "dynamic_cheatsheet DC-RS")
    for pair in [f"{memrl} - {b}" for b in baselines] + [f"{b} - none" for b in baselines]:
        assert rows[f"{pair}: {success}"].text.split(" (n=")[0] in text, pair
    assert rows[f"{memrl} - reasoningbank: {success}"].verdict == "inconclusive at this sample size"
    for b in baselines:
        chars, tokens = (
            {arm: rows[f"{arm}: {m} per test episode"].mean for arm in (b, memrl)} for m in ("injected characters", "acting prompt tokens")
        )
        assert f"{round(chars[b]):,} / {round(chars[memrl]):,} = {chars[b] / chars[memrl]:.2f}x" in text, b
        assert f"| {round(tokens[b]):,} / {round(tokens[memrl]):,} |" in text, b
    # findings.md: the command over every arm and the twins, the folder's name in its third line
    folder = tmp_path / "llb_db_families"
    shutil.copytree(tmp_path / "llb_db", folder / "llb_db")
    shipped = (study / "findings.md").read_text()
    assert fd.render_markdown(fd.findings(folder, warn=None), folder) + "\n" == shipped.replace("/tmp/llb_db_families", str(folder))
