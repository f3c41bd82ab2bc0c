"""Bad input: one line naming the key, file or value, exit code 2, no traceback, and no
folder left that was not there before.

Most inputs are checked in-process: the config is composed by Hydra from conf/ as the
command composes it, run by the runner into a folder that does not exist yet, and the
error mapped to its line and exit code by the command's own `_outcome`. Inputs that
fail before the runner (Hydra composition, the results folder's name or place, a full
or read-only disk) run the real command in a subprocess.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memrl_bench.cli.main import _outcome
from memrl_bench.core.runfolder import RunFolder
from memrl_bench.core.schema import strip_measured
from memrl_bench.runner.loop import run
from tests.helpers import composed

ROOT = Path(__file__).resolve().parents[2]
SMALL = (
    "env.tasks.train=16",
    "env.tasks.validation=8",
    "env.tasks.test_in_distribution=8",
    "env.tasks.test_out_of_distribution=8",
    "protocol.epochs=2",
    "protocol.batch_size=8",
    "progress=false",
)
OTHER_ENV = ("protocol.epochs=2", "protocol.batch_size=8", "progress=false")  # SMALL without the synthetic env's keys
MISSING = "/nonexistent/memrl-bench-data"


def outcome_of(overrides: tuple[str, ...], run_dir: Path) -> tuple[str, int]:
    """(the command's line, its exit code) for a run of these overrides; fails the test on a bug."""
    try:
        cfg = composed(*overrides)
        run(cfg, run_dir)
    except BaseException as err:  # noqa: BLE001 - what the command would catch
        outcome = _outcome(err, run_dir)
        assert outcome is not None, f"no known error for {overrides}: {type(err).__name__}: {err}"
        return outcome
    raise AssertionError(f"{overrides} ran")


# (overrides, a part of the message). Each is one distinct bad input.
CONFIG_INPUTS = [
    (("method.epsilon=-0.5",), "method.epsilon"),
    (("protocol.batch_size=0",), "protocol.batch_size"),
    (("method.k_select=zero",), "method.k_select"),
    (("protocol.epochs=-1",), "protocol.epochs"),
    (("env.n_types=0",), "env.n_types"),
    (("+env.colour=blue",), "env.colour"),
    (("+method.alpah=0.3",), "method.alpah"),
    (("+sed=3",), "'sed'"),
    (("method.name=1",), "method.name: must name a method (got 1)"),  # the thirty-sixth round: a TypeError traceback
    (("method.name=[1]",), "method.name: must name a method (got [1])"),
    (("seed=abc",), "seed: Input should be a valid integer (got 'abc')"),
    # sizes past what a run can hold (twentieth independent round: a segfault, an abort, a MemoryError traceback), and an
    # integer past 64 bits (the run completed, then its own readers refused its manifest)
    (("protocol.epochs=2147483648",), "protocol.epochs: Input should be less than or equal to 10000"),
    (("protocol.eval_samples=99999999",), "protocol.eval_samples: Input should be less than or equal to 1000"),
    (("env.tasks.train=100000000000",), "env.tasks: tasks.train must be in 0..1,000,000, got 100000000000"),
    (("protocol.epochs=10000", "env.tasks.train=2000"), "a run holds at most 10,000,000: fewer epochs or tasks"),
    (("seed=999999999999999999999999",), "seed: must be a whole number that fits in 64 bits (got one of 80 bits)"),
    (("protocol.eval_samples=0",), "protocol.eval_samples"),
    (("protocol=poison", "protocol.poison_share=1.5"), "protocol.poison_share"),
    (("+env.roles={train:train,test:[nosuchsplit]}",), "env.roles.test: split 'nosuchsplit' does not exist"),
    (("llm.finetuned_on=synthetic",), "llm.finetuned_on"),
    (("method.lambda=2",), "method.lambda"),
    (("method.k_select=0",), "method.k_select"),
    (("+env.roles={train:train,validation:train}",), "split 'train' plays both 'train' and 'validation'; the splits overlap"),
    (("seed=-1",), "seed: Input should be greater than or equal to 0 (got -1)"),
    (("task_order_seed=-5",), "task_order_seed: Input should be greater than or equal to 0 (got -5)"),
    (("llm=local", "llm.max_concurrency=0"), "llm.max_concurrency: Input should be greater than or equal to 1"),
    (("llm=local", "llm.cache_mode=bogus"), "llm.cache_mode: Input should be 'read_write', 'read_only' or 'off' (got 'bogus')"),
    (("llm=local", "llm.timeout_s=-1"), "llm.timeout_s: Input should be greater than 0"),
    (("llm=local", "llm.model=null"), "llm.model is required for llm=local"),
    (("llm=openai",), "llm.model is required for llm=openai"),
    (("memory_llm=openai",), "memory_llm.model is required for memory_llm=openai"),
    (("memory_llm=local", "memory_llm.max_tokens=0"), "memory_llm.max_tokens: Input should be greater than or equal to 1"),
    # one completion of 500,000 tokens alone outgrew an episode's log line, and the run could never finish (45b)
    (("llm=openai", "llm.model=m", "llm.max_tokens=500000"), "llm.max_tokens: Input should be less than or equal to 131072"),
    (("method=skillbank", "method.max_tokens=500000"), "method.max_tokens: Input should be less than or equal to 131072"),
    (("method=selfrag", "method.max_tokens=500000"), "method.max_tokens: Input should be less than or equal to 131072"),
    (("embedder=minilm", "embedder.max_tokens=1"), "embedder.max_tokens: Input should be greater than or equal to 2 (got 1)"),  # 47b
    (("method=selfrag", "method.mode=sometimes"), "method.mode: Input should be 'adaptive_retrieval' or 'always_retrieve'"),
    (("llm=local", "llm.temperature=banana"), "llm.temperature: Input should be a valid number (got 'banana')"),
    (("llm=local", "llm.max_retries=-3"), "llm.max_retries: Input should be greater than or equal to 0"),
    (("llm=openai", "llm.model=m", "llm.base_url=localhost:8000"), "llm.base_url: must be an http(s) URL"),
    (
        ("llm=openai", "llm.model=m", "llm.base_url=http://127.0.0.1:99999/v1"),
        "llm.base_url: the port must be a number in 1-65535 (got 'http://127.0.0.1:99999/v1')",
    ),  # not exit 3 (a server down)
    (
        ("embedder=openai", "embedder.base_url=http://127.0.0.1:0/v1"),
        "embedder.base_url: the port must be a number in 1-65535 (got 'http://127.0.0.1:0/v1')",
    ),
    (("llm=openai", "llm.model=m", "llm.base_url='http://user:pa/ss@127.0.0.1:8000/v1'"), "llm.base_url: its host is ambiguous"),
    # 52b: what only the HTTP client refused, at the first request (a traceback): an IPv6 host with more after its bracket
    (("llm=openai", "llm.model=m", "llm.base_url='http://[::1]]:9/v1'"), "llm.base_url: the HTTP client cannot read its host or port"),
    (("embedder=openai", "embedder.base_url='http://[::1]x:9/v1'"), "embedder.base_url: the HTTP client cannot read its host or port"),
    (("method.epsilon='0.1'",), "method.epsilon: Input should be a valid number (got '0.1')"),
    (("env=null",), "Config group override must be a string or a list"),  # Hydra's ValueError (second independent round)
    # past what the worker's limits and SQLite's integers hold (sixth independent round: every episode env_error, or a traceback)
    (("env=llb_db", "env.worker_memory_mb=100000000000000"), "env.worker_memory_mb: Input should be less than or equal to 1048576"),
    (("env=llb_db", "env.max_answer_rows=100000000000000000"), "env.max_answer_rows: Input should be less than or equal to 10000000"),
    (("method=null",), "Config group override must be a string or a list"),
    (("method=rag", "method.top_k='3'"), "method.top_k: Input should be a valid integer (got '3')"),
    (("+protocol.max_tasks.train=0",), "protocol.max_tasks: train must be null (all tasks) or >= 1, got 0"),
    (("+protocol.max_tasks.train=-1",), "protocol.max_tasks: train must be null (all tasks) or >= 1, got -1"),
    (("+protocol.max_tasks.tests=3",), "protocol.max_tasks.tests"),
    (("+protocol.skip_tasks.train=-2",), "protocol.skip_tasks: train must be >= 0, got -2"),
    (("protocol=poison", "protocol.poison_epoch=3"), "protocol.poison_epoch=3 is after the last epoch (protocol.epochs=2)"),
    (("protocol.epoch_order_seeds=[1,2,3]",), "protocol.epoch_order_seeds has 3 entries for 2 epochs"),
    (("protocol=streaming",), "protocol=streaming is a single pass: set protocol.epochs=1 (got 2)"),
    (("+protocol.replay_every=5",), "protocol.replay_every: not a setting of protocol=held_out; it belongs to protocol=replay"),
    (("protocol=repair", "protocol.corrupt_epochs=2"), "protocol.corrupt_share>0 needs a repair phase"),
    (("+protocol.corrupt_share=0.3",), "protocol.corrupt_share: not a setting of protocol=held_out; it belongs to protocol=repair"),
    (("protocol=transfer",), "protocol.transfer_from is required for protocol=transfer"),
    (
        ("protocol=transfer", "protocol.epochs=0", "protocol.transfer_from=/nonexistent-source"),
        "protocol.transfer_from: /nonexistent-source is not a folder",
    ),
    (
        ("protocol=transfer", "protocol.transfer_from=/tmp"),
        "protocol=transfer tests a source run's memory frozen, with no training here: needs protocol.epochs=0",
    ),
    (("protocol.epochs=0",), "protocol.epochs=0 trains nothing: only protocol=transfer tests memory learned elsewhere"),
    (("+env.task_types=[0,9]",), "env.task_types must be distinct types in 0..7"),
    (("protocol.checkpoint_interval_s=-1",), "protocol.checkpoint_interval_s"),
    (("env.harmful_share=2",), "env.harmful_share: Input should be less than or equal to 1 (got 2)"),
    # the thirty-first round: a traceback each (faiss' OverflowError mid-run and at every resume, ZeroDivisionError, MemoryError)
    (("method=memrl", "method.index.kind=hnsw", "method.index.ef_search=3000000000"), "method.index.ef_search: Input should be less"),
    (("method=rag", "method.index.kind=hnsw", "method.index.ef_construction=3000000000"), "method.index.ef_construction: Input"),
    (("env.n_ood_types=0",), "env.n_ood_types=0 leaves test_out_of_distribution no type"),
    (("env.n_types=100000000",), "env.n_types: Input should be less than or equal to 10000"),
    (("env.intent_dim=100000000",), "env.intent_dim: Input should be less than or equal to 65536"),
    # the thirty-second round: tracebacks and a SIGSEGV (threads), caps past the machine accepted as no caps
    (("embedder=minilm", "embedder.threads=100000"), "embedder.threads: Input should be less than or equal to 256"),
    (("llm=local", "llm.threads=2147483647"), "llm.threads: Input should be less than or equal to 256"),
    (("llm=local", "llm.parallel=100000"), "llm.parallel: Input should be less than or equal to 256"),
    (("env=llb_os", "env.gold_workers=100000"), "env.gold_workers: Input should be less than or equal to 256"),
    (("env=llb_os", f"env.memory_mb={2**63 - 1}"), "env.memory_mb: more MiB than this machine's memory"),
    (("env=bigcodebench", f"env.disk_mb={2**40}"), "env.disk_mb: more MiB than this machine's memory"),
    (("env.intent_noise=1e39",), "env.intent_noise: Input should be less than or equal to 1000"),  # an IndexError mid-run (33rd)
    (("env.outcome_temperature=-1",), "env.outcome_temperature: Input should be greater than or equal to 0 (got -1)"),
    (("+env.type_logit_range=[0,-1]",), "env.type_logit_range: must be [low, high] with low <= high"),
    (("method.softmax_temperature=inf",), "method.softmax_temperature: must be a finite number (got inf)"),
    (("method.alpha=nan",), "method.alpha: must be a finite number (got nan)"),
    (("progress=abc",), "progress: Input should be a valid boolean (got 'abc')"),
    (("transcripts=2",), "transcripts: Input should be a valid boolean"),
    (("method=none", "+method.k=1"), "method.k: method 'none' has no settings"),
    (("embedder=minilm", "embedder.batch_size=0"), "embedder.batch_size"),
    (("actor.max_steps=0",), "actor.max_steps"),
    (("actor.fuzzy_cutoff=1.5",), "actor.fuzzy_cutoff"),
    (("+actor.generation.top_p=0",), "actor.generation.top_p"),
    (("env=textworld_express", "env.tasks_per_split=0"), "env.tasks_per_split"),
    (("env=mmlu", "env.tasks_per_split=-2"), "env.tasks_per_split"),
    (("env=alfworld", f"env.data_dir={MISSING}"), "scripts/fetch_alfworld.sh"),
    (("env=llb_os", f"env.data_dir={MISSING}"), "fetch_data.py llb"),
    (("env=llb_db", f"env.data_dir={MISSING}"), "fetch_data.py llb"),
    (("env=bigcodebench", f"env.data_dir={MISSING}"), "fetch_data.py bigcodebench"),
    (("env=mmlu", f"env.data_dir={MISSING}"), "fetch_data.py mmlu"),
]


@pytest.mark.parametrize("overrides, message", CONFIG_INPUTS, ids=lambda x: ",".join(x) if isinstance(x, tuple) else None)
def test_a_bad_config_value_is_one_line_naming_it(tmp_path, overrides, message):
    base = OTHER_ENV if any(o.startswith("env=") for o in overrides) else SMALL
    line, code = outcome_of((*base, *overrides), tmp_path / "results" / "default" / "run")
    assert code == 2 and message in line and "\n" not in line, line
    assert not list(tmp_path.iterdir())  # the folders this start created are gone


def test_a_process_cap_past_the_hosts_limit_is_one_line_naming_it(tmp_path):
    """env.max_processes above the host's hard RLIMIT_NPROC: every command failed to start, each episode an env error, and
    the run ended COMPLETE with exit 0 (the thirty-second round)."""
    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    if hard == resource.RLIM_INFINITY:
        pytest.skip("this machine sets no process limit (RLIMIT_NPROC is unlimited): no cap can be past it")
    line, code = outcome_of((*OTHER_ENV, "env=llb_os", f"env.max_processes={hard + 1}"), tmp_path / "run")
    assert code == 2 and f"env.max_processes: above this machine's process limit (RLIMIT_NPROC {hard})" in line, line


def _minilm_dir(tmp_path: Path, damage: str) -> Path:
    """A copy of the catalogue's MiniLM folder with one file damaged (`file:how`), or a folder that is none."""
    from memrl_bench.llm import catalogue

    if damage == "empty":
        (tmp_path / "empty").mkdir(parents=True)
    if damage in ("missing", "empty", "/dev/null"):
        return {"missing": tmp_path / "nowhere", "empty": tmp_path / "empty", "/dev/null": Path("/dev/null")}[damage]
    folder = tmp_path / "minilm"
    shutil.copytree(catalogue.ensure("minilm-l6-int8"), folder)
    name, how = damage.split(":")
    data = (folder / name).read_bytes()
    (folder / name).write_bytes(data[: len(data) // 3] if how == "cut" else os.urandom(5000))
    return folder


@pytest.mark.parametrize(
    "damage, message",
    [
        ("missing", "has no model.onnx"),
        ("empty", "has no model.onnx"),
        ("/dev/null", "has no model.onnx"),
        ("model.onnx:random", "model.onnx: not an ONNX model onnxruntime loads"),
        ("model.onnx:cut", "model.onnx: not an ONNX model onnxruntime loads"),
        ("tokenizer.json:random", "tokenizer.json: not a tokenizer the tokenizers package reads"),
        ("tokenizer.json:cut", "tokenizer.json: not a tokenizer the tokenizers package reads"),
    ],
)
def test_a_bad_embedder_model_dir_is_one_line_naming_it(tmp_path, damage, message):
    """The thirty-fourth round: each of these ended in a traceback and exit 1 (FileNotFoundError, onnxruntime's
    InvalidProtobuf, the tokenizers package's bare Exception)."""
    folder = _minilm_dir(tmp_path / "model", damage)
    line, code = outcome_of((*SMALL, "method=rag", "embedder=minilm", f"embedder.model_dir={folder}"), tmp_path / "run")
    assert code == 2 and message in line and "embedder.model_dir unset" in line and "\n" not in line, line


@pytest.mark.parametrize("env", ["mmlu", "llb_db", "llb_os", "bigcodebench", "alfworld"])
def test_a_data_dir_whose_links_loop_is_one_line_naming_it(tmp_path, env):
    """The thirty-fourth round: `ln -s loop loop` as env.data_dir ended in pathlib's RuntimeError, a traceback, exit 1."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    line, code = outcome_of((*OTHER_ENV, f"env={env}", f"env.data_dir={loop}"), tmp_path / "run")
    assert code == 2 and f"{loop}: its symbolic links lead back to themselves" in line and "\n" not in line, line


def test_the_key_itself_given_as_api_key_env_is_refused_without_being_echoed(tmp_path):
    key = "sk-proj-0123456789abcdefABCDEF"
    line, code = outcome_of((*SMALL, "llm=local", f"llm.api_key_env={key}"), tmp_path / "run")
    assert code == 2 and "llm.api_key_env: must be the NAME of the environment variable" in line and key not in line


@pytest.mark.parametrize(
    "url, secret",
    [
        ("http://user:pa'SECRETPW@127.0.0.1:9/v1", "SECRETPW"),  # a quote ends a URL for redaction
        ("http://127.0.0.1:9/v1?api_key=ab'SECRETKEY", "SECRETKEY"),
        ("http://127.0.0.1:9/v1?api_key=SECRETKEY2x://y", "SECRETKEY2"),  # a second '://'
        ("http://127.0.0.1:9:9/v1", "9:9"),  # httpx's InvalidURL traceback
        ("http://[::1/v1", "[::1"),
        ("http://127.0.0.1:99999/v1", "99999"),  # exit 3, as if a server were down
    ],
    ids=["quote-in-password", "quote-in-key", "second-scheme", "two-ports", "broken-ipv6", "port-99999"],
)
def test_an_embeddings_url_from_the_environment_is_checked_as_a_configs(tmp_path, monkeypatch, capfd, url, secret):
    """embedder=openai with no embedder.base_url takes $OPENAI_BASE_URL (the openai package's default), which was neither checked
    nor remembered for redaction (the thirtieth round: the secret on stderr, a traceback, exit 3)."""
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    line, code = outcome_of((*SMALL, "embedder=openai"), tmp_path / "run")
    printed = capfd.readouterr()
    assert code == 2 and "$OPENAI_BASE_URL" in line and "\n" not in line, line
    assert secret not in line + printed.out + printed.err


def test_a_valid_config_runs(tmp_path):
    """The control: the inputs above fail for their value, not for the base they share."""
    assert run(composed(*SMALL), tmp_path / "run")["episodes"] > 0


# ---- a run folder in a bad state -------------------------------------------------------


def finished(folder: Path) -> Path:
    run(composed(*SMALL), folder)
    return folder


def crashed(folder: Path) -> Path:
    """A run stopped by a crash while it wrote its epoch-2 snapshot (its checkpoint is at the end of epoch 1)."""
    real = RunFolder.save_snapshot

    def save_snapshot(self, name, *args, **kwargs):
        if name == "epoch_2":
            raise KeyboardInterrupt("simulated crash")
        return real(self, name, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch, contextlib.suppress(KeyboardInterrupt):
        patch.setattr(RunFolder, "save_snapshot", save_snapshot)
        run(composed(*SMALL), folder)
    return folder


def corrupt_log_line(folder: Path) -> None:
    lines = (folder / "episodes.jsonl").read_text().splitlines(keepends=True)
    lines[3] = "{not json\n"
    (folder / "episodes.jsonl").write_text("".join(lines))


def edit_manifest(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["config"]["method"]["name"], manifest["config"]["seed"] = "rag", 7  # the hash kept
    (folder / "manifest.json").write_text(json.dumps(manifest))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


FOLDER_INPUTS = [
    (crashed, corrupt_log_line, (), "episodes.jsonl line 4 is not valid JSON"),
    (finished, lambda f: (f / "manifest.json").write_text('{"config_hash": '), (), "manifest.json is not valid JSON"),
    (finished, edit_manifest, (), "its config_hash does not match its config"),
    (finished, lambda f: None, ("method.alpha=0.5",), "refusing to mix them"),
    (finished, lambda f: (f / "episodes.jsonl").unlink(), (), "is marked COMPLETE, but it has no episodes.jsonl"),
    (finished, lambda f: (f / "episodes.jsonl").write_text((f / "episodes.jsonl").read_text() * 2), (), "episode ids more than once"),
    (finished, lambda f: truncate(f / "memory" / "final" / "items.jsonl"), (), "final/items.jsonl does not match its checksum"),
    (crashed, lambda f: truncate(f / "memory" / "checkpoint" / "items.jsonl"), (), "checkpoint/items.jsonl does not match its checksum"),
    (crashed, lambda f: (f / "memory" / "epoch_1" / "keys.npy").unlink(), (), "epoch_1/keys.npy is missing"),
]


@pytest.mark.parametrize(
    "make, damage, overrides, message",
    FOLDER_INPUTS,
    ids=[
        "log_line",
        "manifest_json",
        "manifest_edited",
        "other_config",
        "complete_no_log",
        "duplicate_ids",
        "final_snapshot",
        "checkpoint",
        "snapshot_file",
    ],
)
def test_a_damaged_run_folder_is_one_line_naming_the_file(tmp_path, make, damage, overrides, message):
    folder = make(tmp_path / "run")
    damage(folder)
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    line, code = outcome_of((*SMALL, *overrides), folder)
    assert code == 2 and message in line and "\n" not in line, line
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before  # nothing of it removed


def test_a_run_folder_in_use_is_refused_naming_the_holder(tmp_path):
    folder = crashed(tmp_path / "run")
    with RunFolder(folder).lock():  # another writer: an open file description of its own
        line, code = outcome_of(SMALL, folder)
    assert code == 2 and f"{folder} is in use by another memrl-bench process (PID {os.getpid()})" in line


# ---- the response cache ------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"SQLite format 3\x00" + b"\x01" * 90,
        b"\x93garbled" * 500,
        # a real cache with 200 bytes flipped: SQLite's message quotes bytes that are not UTF-8, and Python's sqlite3 raised
        # UnicodeDecodeError building it (the thirty-first round: 5 of 10 randomly damaged caches)
        (ROOT / "tests/fixtures/damaged_caches/response_cache_message_not_utf8.sqlite").read_bytes(),
    ],
    ids=["truncated", "garbled", "message-not-utf8"],
)
def test_an_unreadable_response_cache_is_one_line_naming_the_file(tmp_path, monkeypatch, content):
    from tests.fault_server import FaultServer

    if not Path("../shared/data/mmlu").exists() and not (ROOT.parent / "shared/data/mmlu").exists():
        pytest.skip("needs the MMLU data in ../shared/data/mmlu")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-a-secret")
    cache = tmp_path / "cache.sqlite"
    cache.write_bytes(content)
    with FaultServer() as server:
        overrides = (
            "env=mmlu",
            "env.tasks_per_split=2",
            "method=none",
            "llm=openai",
            f"llm.base_url={server.base_url}",
            "llm.model=m",
            f"llm.cache_path={cache}",
            "protocol.epochs=1",
        )
        line, code = outcome_of(overrides, tmp_path / "results" / "run")
    assert code == 2 and f"{cache}: the LLM response cache cannot be used" in line
    # nothing else left but SQLite's own -wal and -shm beside a cache whose header it could read
    assert {p.name for p in tmp_path.iterdir()} - {"cache.sqlite-wal", "cache.sqlite-shm"} == {"cache.sqlite"}
    with pytest.raises((sqlite3.DatabaseError, UnicodeDecodeError)):  # the file is left as it was
        sqlite3.connect(cache).execute("SELECT * FROM responses").fetchall()


# ---- inputs the command refuses before the runner: one subprocess each ----------------------


def command(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memrl_bench", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def tree(path: Path) -> list[Path]:
    return sorted(path.rglob("*"))


COMMAND_INPUTS = [
    (("method=memrll",), "Could not find 'method/memrll'; Available options in 'method': awm"),
    (("env=nope",), "Could not find 'env/nope'"),
    (("protocol=nosuch",), "Could not find 'protocol/nosuch'"),
    (("llm.max_concurrency=2",), "Could not override 'llm.max_concurrency'"),
    (("experiment_name=" + "x" * 300,), "experiment_name: a folder name has at most 255 bytes, got one of 300"),
    (("experiment_name=../../x",), "experiment_name: must be a relative folder name inside results_dir, without '..'"),
    (("-m", "experiment_name=/abs", "seed=0,1"), "experiment_name: must be a relative folder name inside results_dir"),
    (("results_dir={tmp}/a_file",), "results_dir: {tmp}/a_file is a file, not a folder"),
    (("results_dir={tmp}/a_file/below",), "results_dir: {tmp}/a_file is a file, not a folder"),
    (("results_dir=/proc/memrl-bench",), "/proc/memrl-bench"),
]


@pytest.mark.parametrize(
    "args, message",
    COMMAND_INPUTS,
    ids=["method", "env", "protocol", "struct", "long_name", "dotdot", "absolute_sweep", "file", "below_file", "proc"],
)
def test_the_command_refuses_bad_input_before_it_runs(tmp_path, args, message):
    (tmp_path / "a_file").write_text("not a folder\n")
    args = tuple(a.replace("{tmp}", str(tmp_path)) for a in args)
    if not any(a.startswith("results_dir=") for a in args):
        args = (*(a for a in args if a.startswith("-")), f"results_dir={tmp_path / 'results'}", *(a for a in args if not a.startswith("-")))
    out = command(*args)
    assert out.returncode == 2, out.stderr
    assert message.replace("{tmp}", str(tmp_path)) in out.stderr and "Traceback" not in out.stderr and out.stderr.count("\n") == 1, (
        out.stderr
    )
    assert tree(tmp_path) == [tmp_path / "a_file"]
    assert not Path("/proc/memrl-bench").exists()


def test_malformed_yaml_in_a_config_dir_names_the_file(tmp_path):
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "broken.yaml").write_text("# @package _global_\nprotocol: {epochs: [1, 2\n")
    before = tree(tmp_path)
    out = command(f"results_dir={tmp_path / 'results'}", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "+experiment=broken")
    assert out.returncode == 2 and "broken.yaml" in out.stderr and "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert tree(tmp_path) == before


CONFIG_FILE_VALUES = {  # 50b: what only a config file carries, or what Hydra cannot take in: a traceback, exit 1
    "nul": ('env: {data_dir: "/var/x\\0y"}', ("env=mmlu",), "env.data_dir: holds a NUL byte or a lone surrogate"),
    "surrogate": ('llm: {cache_path: "/tmp/c\\ud800.sqlite"}', (), "llm.cache_path: holds a NUL byte or a lone surrogate"),
    "surrogate folder": ('results_dir: "/tmp/r\\ud800"', (), "could not be read: 'utf-8' codec can't encode"),
    "5,000 digits": ("seed: 1" + "0" * 5000, (), "could not be read: Exceeds the limit (4300 digits)"),
    "nested 3,000 deep": ("env: {seed: " + "[" * 3000 + "]" * 3000 + "}", (), "odd.yaml: nested more than 64 deep"),
    "nested 200 deep on the command line": ("", ("seed=" + "[" * 200 + "]" * 200,), "could not be read: values nested too deep"),
    # 56b: OmegaConf's merge into a node that is None (its own AttributeError, AssertionError): a traceback, exit 1
    "a mapping for the sweeper's params": ("", ("hydra.sweeper.params={x:1}",), "full_key: hydra.sweeper.params"),
    "a key added under the sweeper's params": ("", ("+hydra.sweeper.params.x=1",), "could not be read: Unexpected type for root"),
    # 53b: a key that is no text: "TypeError: keywords must be strings", a traceback
    "an int key": ("llm: {1: 2}", (), "llm: a setting's name is text (got the key 1 of type int)"),
    "a float key": ("env: {1.5: 2}", ("env=mmlu",), "env: a setting's name is text (got the key 1.5 of type float)"),
    "a bool key": ("llm: {true: 2}", (), "llm: a setting's name is text (got the key True of type bool)"),
    # 54b: Hydra's defaults tree takes time growing with the square of a list's length (500 entries: 49 s, no output)
    "a defaults list of 500": (
        "defaults:\n" + "\n".join(f"  - /llm@x{i}: none" for i in range(500)),
        (),
        "odd.yaml: a defaults list of 500 entries, more than 100",
    ),
    # 53b: 11 lines whose aliases expand to 10^7 nodes: minutes of composing, gigabytes, no output
    "an alias bomb": (
        "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]),
        (),
        "odd.yaml: more than 100000 nodes once its aliases are expanded",
    ),
}


@pytest.mark.parametrize("name", CONFIG_FILE_VALUES)
def test_a_value_a_config_file_or_hydra_cannot_take_is_one_line(tmp_path, name):
    text, overrides, message = CONFIG_FILE_VALUES[name]
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "odd.yaml").write_text(f"# @package _global_\n{text}\n")
    chosen = ("+experiment=odd",) if text else ()
    results = () if text.startswith("results_dir") else (f"results_dir={tmp_path / 'results'}",)
    out = command(*results, f"hydra.searchpath=[file://{tmp_path / 'conf'}]", *chosen, *overrides, cwd=tmp_path)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr[
        -500:
    ]
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").iterdir())


SWEEPS_NOT_EXPANDABLE = {  # 51b: a traceback, or (endless) gigabytes with no output, before any job or folder
    "-m range of nan": (("-m",), "seed=range(0,nan)", "not a sweep Hydra can expand (a bound or step that is no finite number)"),
    "-m endless range": (("-m",), "seed=range(0,1e400)", "seed=range(0,1e400): more than 10000 values"),
    # 56b: an override only a job resolves made the check raise, which Hydra turned into a warning, skipping the count
    "-m endless range beside a job's own value": (("-m", "task_order_seed=${hydra:job.num}"), "seed=range(0,1e400)", "more than 10000"),
    "-m range of no value": (("-m",), "seed=range(0,1,-inf)", "a sweep of no value"),
    "-m 20,000 jobs": (("-m",), "seed=range(0,20000)", "more than 10000 values"),  # Hydra's own sweeper ran it
    "study grid of nan": (("+experiment=critique_study", "study.workers=1"), "+study.grids=['seed=range(0,nan)']", "no finite number"),
    "study grid nested 600 deep": (("+experiment=critique_study",), f"+study.grids=['seed={'[' * 600}{']' * 600}']", "nested too deep"),
    "study grid Hydra cannot parse": (("+experiment=critique_study",), "+study.grids=['seed=[']", "no viable alternative at input"),
    "study of no worker": (("+experiment=critique_study",), "study.workers=0", "study.workers: Input should be greater than or equal to 1"),
    "study of no preset": (("+experiment=families_study",), "study.presets=[]", "study.presets: List should have at least 1 item"),
}


@pytest.mark.parametrize("name", SWEEPS_NOT_EXPANDABLE)
def test_a_sweep_hydra_cannot_expand_is_one_line_and_leaves_no_folder(tmp_path, name):
    command_args, sweep, message = SWEEPS_NOT_EXPANDABLE[name]
    out = command(*command_args, "env=synthetic", "method=none", sweep, f"results_dir={tmp_path / 'results'}")
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr[
        -500:
    ]
    assert not (tmp_path / "results").exists(), tree(tmp_path)  # the study's folder too, made by Hydra before the grid was read


def in_a_mount_namespace(script: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`script` (bash) in a private mount namespace, so that it can mount tmpfs folders of its own."""
    if shutil.which("unshare") is None:
        pytest.skip("needs util-linux unshare")
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"needs a private mount namespace (root): unshare says {probe.stderr.strip()}")
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_a_read_only_results_dir_is_one_line(tmp_path):
    (tmp_path / "ro").mkdir()
    script = (
        f"mount -t tmpfs -o ro,size=1m tmpfs {tmp_path}/ro && {sys.executable} -m memrl_bench results_dir={tmp_path}/ro/results "
        f"{' '.join(SMALL)}"
    )
    out = in_a_mount_namespace(script, tmp_path)
    assert out.returncode == 2 and f"{tmp_path}/ro/results: Read-only file system" in out.stderr and "Traceback" not in out.stderr, (
        out.stderr
    )


def test_a_full_disk_stops_with_one_line_and_the_same_command_resumes(tmp_path):
    """ENOSPC in the middle of a run: one line, exit 2; with space again the run finishes
    with the log of a run that never lacked it."""
    reference = tmp_path / "reference"
    run(composed(*SMALL, "protocol.epochs=4"), reference)
    (tmp_path / "disk").mkdir()
    cmd = (
        f"{sys.executable} -m memrl_bench results_dir={tmp_path}/disk/results hydra.run.dir={tmp_path}/disk/run {' '.join(SMALL)} "
        "protocol.epochs=4"
    )
    script = (
        f"mount -t tmpfs -o size=160k tmpfs {tmp_path}/disk && {cmd} 2>{tmp_path}/full.err; echo $? > {tmp_path}/full.rc; "
        f"cat {tmp_path}/disk/run/episodes.jsonl | wc -l > {tmp_path}/partial.count; "
        f"mount -o remount,size=64m {tmp_path}/disk && {cmd} && cp {tmp_path}/disk/run/episodes.jsonl {tmp_path}/resumed.jsonl"
    )
    out = in_a_mount_namespace(script, tmp_path)
    full_err = (tmp_path / "full.err").read_text()
    assert (tmp_path / "full.rc").read_text().strip() == "2", full_err
    assert "No space left on device; free some space and re-run the same command to resume" in full_err and "Traceback" not in full_err, (
        full_err
    )
    assert out.returncode == 0, out.stderr
    assert (
        0 < int((tmp_path / "partial.count").read_text()) < len((reference / "episodes.jsonl").read_text().splitlines())
    )  # stopped mid-run

    def stripped(path: Path) -> list[dict]:
        return [strip_measured(json.loads(line)) for line in path.read_text().splitlines()]

    assert stripped(tmp_path / "resumed.jsonl") == stripped(reference / "episodes.jsonl")


def small_run(folder: Path) -> Path:
    run(composed(*SMALL), folder)
    return folder


def test_a_report_on_a_full_disk_is_one_line(tmp_path):
    """60b: a write that fails on a full disk names no file, and the report re-raised such an OSError: a traceback."""
    run_dir = small_run(tmp_path / "results" / "run")
    (tmp_path / "disk").mkdir()
    script = (
        f"mount -t tmpfs -o size=16k tmpfs {tmp_path}/disk && "
        f"{sys.executable} -m memrl_bench.report.cli {run_dir} --out {tmp_path}/disk/report"
    )
    out = in_a_mount_namespace(script, tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr[-800:]
    assert out.stderr.startswith(f"memrl-bench-report: error: {tmp_path}/disk/report") and "No space left on device" in out.stderr


FULL_CACHE = """
import os, random, sqlite3, sys
from memrl_bench.llm.cache import CacheError, CachedResponse, ResponseCache
path = sys.argv[1] + "/cache.sqlite"
cache = ResponseCache(path)
cache.put("k" * 64, CachedResponse("kept", "stop", 1, 1))
with open(sys.argv[1] + "/fill", "wb") as fill:  # the disk filled by another writer
    try:
        while True:
            fill.write(b"0" * 65536)
    except OSError:
        pass
try:
    for n in range(64):
        cache.put(f"{n:064d}", CachedResponse(random.randbytes(65536).hex(), "stop", 1, 1))
    print("WROTE")
except CacheError as err:
    print(err)
cache.close()
os.remove(sys.argv[1] + "/fill")
again = ResponseCache(path)
print(len(again), again.get("k" * 64).text, sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0])
"""


def test_a_cache_on_a_full_disk_is_not_called_unusable(tmp_path):
    """61b: the response cache on a full disk was "cannot be used (disk I/O error); move it away to start a new one":
    intact, it worked again once space was freed, and following the advice threw it away. A full disk's error says so,
    keeps the file, and the cache holds what it held."""
    (tmp_path / "disk").mkdir()
    script = f"mount -t tmpfs -o size=1m tmpfs {tmp_path}/disk && {sys.executable} -c '{FULL_CACHE}' {tmp_path}/disk"
    out = in_a_mount_namespace(script, tmp_path)
    assert out.returncode == 0, out.stderr[-800:]
    refusal, reopened = out.stdout.splitlines()
    assert refusal.startswith(f"{tmp_path}/disk/cache.sqlite: the LLM response cache could not be written or read"), refusal
    assert "is its disk full?" in refusal and "move it away" not in refusal
    assert reopened == "1 kept ok"


@pytest.mark.parametrize(
    "module, extra",
    [("memrl_bench.report.cli", ("--out", "report")), ("memrl_bench.findings", ()), ("memrl_bench.core.export", ("--out", "export"))],
)
def test_a_standard_output_that_cannot_be_written_is_one_line(tmp_path, module, extra):
    """60b: each command's last output (the report's path, the findings, the exported files) on a full device ended in a
    traceback (or Python's "Exception ignored" at exit)."""
    run_dir = small_run(tmp_path / "results" / "run")
    args = [str(tmp_path / arg) if arg in ("report", "export") else arg for arg in extra]
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", module, str(run_dir), *args], cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True, timeout=600
        )
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr[-800:]
    assert out.stderr.endswith("error: the standard output: No space left on device\n"), out.stderr


def test_a_results_folder_whose_path_is_not_utf8_is_one_line(tmp_path):
    """60b: the report held each run's path as text, and a results folder named in bytes that are not UTF-8 (its run
    folders named as usual) ended in pyarrow's traceback."""
    named = Path(os.fsdecode(bytes(tmp_path) + b"/p\xff"))
    small_run(named / "run")
    out = subprocess.run(
        [sys.executable, "-m", "memrl_bench.report.cli", named, "--out", tmp_path / "report"], cwd=ROOT, capture_output=True, timeout=600
    )
    stderr = out.stderr.decode(errors="replace")
    assert out.returncode == 2 and stderr.count("\n") == 1 and "its path is not UTF-8; rename it" in stderr, stderr[-800:]
    assert b"/p\\xff" in out.stderr  # named as it can be shown


def test_an_embeddings_server_refusing_the_key_is_one_line():
    import httpx
    import openai

    response = httpx.Response(401, request=httpx.Request("POST", "http://127.0.0.1:9/v1/embeddings"))
    refused = openai.AuthenticationError("Error code: 401 - Incorrect API key provided: sk-abcdefgh12345", response=response, body=None)
    line, code = _outcome(refused)
    assert code == 2 and "a server refused the API key" in line and "embedder.api_key_env" in line and "sk-abcdefgh12345" not in line


def test_a_password_in_an_embeddings_url_from_the_environment_is_redacted(tmp_path, monkeypatch, capfd):
    """The control of the test above: a URL the check accepts is used, and its password is redacted like a config's."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:envpass-canary-4711@127.0.0.1:9/v1")
    try:
        run(composed(*SMALL, "embedder=openai"), tmp_path / "run")
    except BaseException as err:  # noqa: BLE001 - what the command would catch
        line, code = _outcome(err, tmp_path / "run")
    printed = capfd.readouterr()
    assert code == 3 and "http://127.0.0.1:9/v1" in line, line  # no server there: an outage, resumed later
    assert "envpass-canary-4711" not in line + printed.out + printed.err + "".join(
        path.read_text(errors="replace") for path in (tmp_path / "run").rglob("*") if path.is_file()
    )
