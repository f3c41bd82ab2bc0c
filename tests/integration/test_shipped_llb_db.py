"""The LLB-DB study with Qwen2.5-Coder-1.5B shipped in results/llb_db (issue 28) replays from its response cache.

README, "A model that acts": `memrl-bench +experiment=llb_db llm.cache_mode=read_only
llm.cache_path=results/llb_db/llm_cache.sqlite` re-renders the study's findings with no server, the README's table beside
MemRL's paper is what scripts/llb_db_tables.py makes of the shipped runs, and an arm run afresh from the cache alone gives
the shipped episodes. A copy of the shipped folder is used, so the repository is never written.
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

from memrl_bench.core.schema import strip_measured

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "results" / "llb_db"
RERENDER = "memrl-bench +experiment=llb_db llm.cache_mode=read_only llm.cache_path=results/llb_db/llm_cache.sqlite"
GPU_COMMAND_START = "memrl-bench +experiment=llb_db llm=openai"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"  # qwen2.5-coder-1.5b of the catalogue
LLB_DATA = Path(os.environ.get("MEMRL_BENCH_LLB_DIR") or ROOT.parent / "shared" / "data" / "llb")
needs_data = pytest.mark.skipif(
    not (LLB_DATA / "db_val.json").is_file(), reason=f"LifelongAgentBench data missing at {LLB_DATA} (../shared/data/llb)"
)


def readme() -> str:
    return (ROOT / "README.md").read_text()


def run_cli(args: list[str], cwd: Path, module: str = "memrl_bench") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *(["-m", module] if module else []), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MEMRL_BENCH_LLB_DIR": str(LLB_DATA)},
    )


def episodes(folder: Path) -> list[dict]:
    return [strip_measured(json.loads(line)) for line in (folder / "episodes.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """A copy of the shipped study at results/llb_db below a scratch folder."""
    root = tmp_path_factory.mktemp("shipped")
    shutil.copytree(SHIPPED, root / "results" / "llb_db", ignore=shutil.ignore_patterns("report"))
    return root


def test_the_shipped_llb_db_study_is_whole():
    runs = sorted(p.parent for p in SHIPPED.rglob("manifest.json"))
    assert len(runs) == 6 and all((r / "COMPLETE").exists() and (r / "transcripts.jsonl.gz").exists() for r in runs)
    assert {json.loads((r / "manifest.json").read_text())["model"]["model_sha256"] for r in runs} == {MODEL_SHA256}
    for run in runs:
        logged = episodes(run)
        assert len(logged) == 160 and sum(e["phase"] == "test" for e in logged) == 100, run
    assert (SHIPPED / "report" / "report.html").exists() and (SHIPPED / "report" / "episodes" / "index.html").exists()


@needs_data
def test_the_readme_command_rerenders_the_llb_db_findings_with_no_server(copy):
    assert f"\n{RERENDER}\n" in readme() and f"\n{RERENDER}\n" in (SHIPPED / "README.md").read_text()
    result = run_cli(shlex.split(RERENDER)[1:], cwd=copy)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (result.stderr + result.stdout).count("is complete; nothing to do") == 6
    assert (copy / "results" / "llb_db" / "findings.md").read_text() == (SHIPPED / "findings.md").read_text()


def test_the_readme_table_beside_memrls_paper_is_the_shipped_runs():
    """README's table (between its llb-db-paper markers) is what scripts/llb_db_tables.py prints for the shipped runs."""
    result = run_cli([str(ROOT / "scripts" / "llb_db_tables.py"), str(SHIPPED)], cwd=ROOT, module="")
    assert result.returncode == 0, result.stderr
    block = readme().split("<!-- llb-db-paper:start -->\n", 1)[1].split("<!-- llb-db-paper:end -->", 1)[0].strip()
    assert block and result.stdout.startswith(block + "\n")
    assert "| MemRL ε=0.01 (the official LLB preset) |" in block and "| 0.960 / 0.972 | 0.942 |" in block


@pytest.mark.slow
@needs_data
def test_the_exploring_arm_run_afresh_from_the_cache_gives_the_shipped_episodes(copy, tmp_path):
    """MemRL epsilon = 0.1 (the arm whose choices differ most from the others'), run into an empty folder from the shipped
    cache alone: every completion and token count comes from it (a miss would stop the run), and the log equals the shipped one."""
    cache = copy / "results" / "llb_db" / "llm_cache.sqlite"
    args = [
        "+experiment=llb_db_explore",
        f"results_dir={tmp_path}",
        "llm.cache_mode=read_only",
        f"llm.cache_path={cache}",
        "progress=false",
    ]
    result = run_cli(args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    name = "method.epsilon=0.1,task_order_seed=0"
    assert episodes(tmp_path / "llb_db" / "explore" / name) == episodes(SHIPPED / "explore" / name)


def test_the_gpu_command_composes_every_job_of_the_study():
    """README's command for an OpenAI-compatible server (vLLM with a 7B model): each of the study's jobs composes with the
    server's settings and passes the config checks; nothing else in the presets changes."""
    from omegaconf import OmegaConf

    from memrl_bench.cli.hydra_support import compose, composing
    from memrl_bench.cli.study import study_jobs
    from memrl_bench.core.config import validate_config

    words = readme_command(readme(), GPU_COMMAND_START)[1:]
    overrides = [w for w in words if not w.startswith("+experiment=")]
    with composing():
        presets = list(compose(["+experiment=llb_db"]).study.presets)
    jobs = study_jobs(presets, ["results_dir=runs", *overrides])
    assert len(jobs) == 6
    with composing():
        for job in jobs:
            cfg = OmegaConf.to_container(compose(job), resolve=True)
            assert cfg["env"]["name"] == "llb_db" and cfg["llm"]["name"] == "openai" and cfg["protocol"]["max_tasks"]["test"] == 50
            validate_config(cfg)


@pytest.mark.slow
def test_the_readme_report_command_writes_the_report_and_the_viewer(copy):
    """`memrl-bench-report results/llb_db`, as README gives it, on a copy: the report page and the episode viewer."""
    assert "\nmemrl-bench-report results/llb_db\n" in readme()
    result = run_cli(["results/llb_db"], cwd=copy, module="memrl_bench.report")
    assert result.returncode == 0, result.stderr[-3000:]
    report = copy / "results" / "llb_db" / "report"
    assert (report / "episodes" / "index.html").exists()
    assert "REAL MODEL qwen2.5-coder-1.5b on env llb_db" in (report / "report.html").read_text()
