"""No secret written anywhere: a canary key passed through every channel (the environment,
URL userinfo, a server's error text) is found in no file of the run folder, its .hydra/,
the sweep's record, the response and embedding caches, nor in what the command prints."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memrl_bench.config import run_name
from memrl_bench.llm.fault_server import Fault, FaultServer
from memrl_bench.redaction import REDACTED, redact_server_text, remember_secret, scrub

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-canary-0123456789abcdefXYZ"  # in $OPENAI_API_KEY
URL_USER, URL_PASSWORD = "canaryuser", "urlpass-canary-987"  # in llm.base_url and embedder.base_url
CANARIES = (KEY, URL_PASSWORD, URL_USER)


def memrl_bench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memrl_bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def files_holding_a_canary(*roots: Path) -> list[str]:
    found = []
    for root in roots:
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            if path.is_file():
                data = path.read_bytes()
                found += [f"{path}: {c}" for c in CANARIES if c.encode() in data]
    return found


@pytest.fixture
def environment(monkeypatch) -> dict[str, str]:
    import os

    if not (ROOT.parent / "shared" / "data" / "mmlu").exists():
        pytest.skip("needs the MMLU data in ../shared/data/mmlu")
    return {**os.environ, "OPENAI_API_KEY": KEY}


def test_a_canary_key_through_every_channel_is_written_nowhere(tmp_path, environment):
    results, caches = tmp_path / "results", tmp_path / "caches"
    with FaultServer(reply=lambda messages: "Answer: B") as server:
        url = server.base_url.replace("http://", f"http://{URL_USER}:{URL_PASSWORD}@")
        leak = f"invalid request with key {KEY} for {url} (Authorization: Bearer {KEY})"
        server.script(*[Fault.http_error(500, message=leak)] * 2)  # one call's attempts: an llm_error episode with that text
        out = memrl_bench(
            "-m", f"results_dir={results}", "env=mmlu", "env.tasks_per_split=2", "method=rag", "llm=openai", f"llm.base_url={url}",
            "llm.model=fault-server-model", "llm.max_retries=1", "llm.backoff_base_s=0.01", "llm.max_concurrency=1", f"llm.cache_path={caches}/llm.sqlite",
            "embedder=openai", f"embedder.base_url={url}", "embedder.model=fault-server-embed", f"embedder.cache_path={caches}/embed.sqlite",
            "protocol.epochs=1", "seed=0", env=environment,
        )
        assert out.returncode == 0, out.stderr
        (folder,) = [p for p in (results / "default").iterdir() if p.is_dir()]
        errors = [json.loads(line).get("error") for line in (folder / "episodes.jsonl").read_text().splitlines()]
        assert any(e and REDACTED in e for e in errors)  # the server's text reached the log, redacted
        assert (folder / ".hydra" / "config.yaml").exists() and (results / "default" / "multirun.yaml").exists()

        server.script(Fault.http_error(401, message=f"Incorrect API key provided: {KEY}"))  # the key refused, mid-run
        refused = memrl_bench(
            f"results_dir={results}", "experiment_name=refused", "env=mmlu", "env.tasks_per_split=2", "method=none", "llm=openai",
            f"llm.base_url={url}", "llm.model=fault-server-model", "llm.cache_mode=off", "embedder=openai", f"embedder.base_url={url}",
            "embedder.model=fault-server-embed", "protocol.epochs=1", env=environment,
        )
    # stderr is not a terminal here: a progress line tells that the run started, then the one error line
    lines = [line for line in refused.stderr.splitlines() if not re.match(r"\[\d\d:\d\d:\d\d\] ", line)]
    assert refused.returncode == 2 and "Traceback" not in refused.stderr and len(lines) == 1, refused.stderr
    assert "refused the key in $OPENAI_API_KEY (HTTP 401" in refused.stderr and "set a valid key in OPENAI_API_KEY" in refused.stderr
    (stopped,) = (results / "refused").iterdir()
    assert not (stopped / "episodes.jsonl").exists() or not (stopped / "episodes.jsonl").read_text()  # nothing logged
    assert files_holding_a_canary(results, caches) == []
    for printed in (out.stdout, out.stderr, refused.stdout, refused.stderr):
        assert not [c for c in CANARIES if c in printed], printed


def test_userinfo_never_reaches_a_run_name():
    name = run_name(f"embedder=openai,llm.base_url=http://{URL_USER}:{URL_PASSWORD}@host:8000/v1,llm.model=m")
    assert name == "embedder=openai,llm.base_url=http:__host:8000_v1,llm.model=m"
    assert run_name("llm.base_url=http://host:8000/v1,llm.model=m") == "llm.base_url=http:__host:8000_v1,llm.model=m"


@pytest.mark.parametrize(
    "text, redacted",
    [
        ("Incorrect API key provided: sk-proj-AbCdEf123456.", "Incorrect API key provided: [redacted]."),
        ("Authorization: Bearer abc.def-ghi", "Authorization: [redacted]"),
        ('{"api_key": "k-123456"}', '{"api_key": "[redacted]"}'),
        ("token=tok123 rest", "token=[redacted] rest"),
        ("session 6f1c2b3a4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90 expired", "session [redacted] expired"),
        ("connect to http://u:p@10.0.0.1:80/v1 failed", "connect to http://10.0.0.1:80/v1 failed"),
        ("HTTP 500: scripted 500", "HTTP 500: scripted 500"),  # nothing key-like: unchanged
    ],
)
def test_server_texts_lose_what_looks_like_a_key(text, redacted):
    assert redact_server_text(text) == redacted


def test_a_remembered_secret_is_scrubbed_from_any_text():
    remember_secret("correct-horse-battery")
    assert scrub("the password correct-horse-battery was sent") == f"the password {REDACTED} was sent"
