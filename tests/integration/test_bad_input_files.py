"""Bad files, as tests/integration/test_bad_input.py does bad config values: one line naming the file (or the
name given), exit code 2, no traceback, and no folder left that was not there before.

The model of llm=local (a name, a path, a GGUF file damaged in every way the adversarial pass
found), the data files of LLB DB, LLB OS, MMLU and BigCodeBench, the gold-check cache, the
report's --out and a sweep's multirun.yaml; and a server answering 4 MB per completion, which
the harness stores cut at its stated cap.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memrl_bench.core.schema import Task
from memrl_bench.envs.gold import GoldFilter
from memrl_bench.llm import MIN_COMPLETION_CHARS
from memrl_bench.llm.catalogue import CATALOGUE
from memrl_bench.llm.gguf import GGUFError, check_file
from memrl_bench.runner.loop import run
from tests.fault_server import FaultServer
from tests.helpers import composed, tiny_mmlu
from tests.integration.test_bad_input import outcome_of

ROOT = Path(__file__).resolve().parents[2]
QUICK = ("protocol.epochs=1", "protocol.batch_size=4", "progress=false")


def one_line_exit_2(line: str, code: int, message: str) -> None:
    assert code == 2 and message in line and "\n" not in line and "Traceback" not in line, line


# ---- llm=local: the model -------------------------------------------------------------------


def _string(text: str) -> bytes:
    return struct.pack("<Q", len(text.encode())) + text.encode()


def gguf_bytes(metadata: dict[str, int | str] | None = None, tensors: int = 2, values: int = 64) -> bytes:
    """A whole GGUF v3 file: u32 / string metadata, then `tensors` F32 tensors of `values` values, aligned data."""
    metadata = {"general.architecture": "llama", "llama.context_length": 512, **(metadata or {})}
    head = b"GGUF" + struct.pack("<IQQ", 3, tensors, len(metadata))
    head += b"".join(
        _string(k) + (struct.pack("<I", 8) + _string(v) if isinstance(v, str) else struct.pack("<II", 4, v)) for k, v in metadata.items()
    )
    head += b"".join(
        _string(f"t{i}") + struct.pack("<IQIQ", 1, values, 0, i * values * 4) for i in range(tensors)
    )  # 1 dimension, F32, offset
    head += b"\0" * (-len(head) % 32)
    return head + b"\1" * (tensors * values * 4)


def test_a_whole_gguf_passes_the_check_and_a_cut_one_does_not(tmp_path):
    whole = tmp_path / "whole.gguf"
    whole.write_bytes(gguf_bytes())
    check_file(whole)  # the control: the builder below makes valid files
    whole.write_bytes(gguf_bytes()[:-1])
    with pytest.raises(GGUFError, match="is truncated: tensor 't1' ends at byte"):
        check_file(whole)


MODEL_INPUTS: list[tuple[str, Callable[[Path], str], str]] = [
    ("random_bytes", lambda d: _file(d / "m.gguf", bytes(range(256)) * 40), "m.gguf is not a GGUF file (no GGUF magic number)"),
    ("truncated_tensors", lambda d: _file(d / "m.gguf", gguf_bytes()[:-100]), "m.gguf is truncated: tensor 't1'"),
    ("truncated_header", lambda d: _file(d / "m.gguf", gguf_bytes()[:40]), "m.gguf: the GGUF header is damaged"),
    ("a_folder", lambda d: str((d / "folder.gguf").mkdir() or d / "folder.gguf"), "folder.gguf is a folder"),
    ("missing", lambda d: str(d / "missing.gguf"), "missing.gguf does not exist"),
    ("a_device", lambda d: "/dev/null", "model file /dev/null is no regular file"),  # the thirty-sixth round: "does not exist"
    ("a_read_that_fails", lambda d: "/proc/self/mem", "/mem: cannot read the model file (Input/output error)"),  # a traceback
    ("unknown_name", lambda d: "no-such-model", f"unknown model 'no-such-model'; known: {', '.join(sorted(CATALOGUE))}, or a path"),
    (
        "string_of_2^40_bytes",
        lambda d: _file(d / "m.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**40) + b"k" * 64),
        "a length of 1099511627776 bytes at byte 32 runs past the end",
    ),
    (
        "array_of_2^62_values",
        lambda d: _file(
            d / "m.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _string("a") + struct.pack("<IIQ", 9, 10, 2**62) + b"\0" * 64
        ),
        "4611686018427387904 array values",
    ),
    (
        "array_of_2^62_strings",
        lambda d: _file(
            d / "m.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _string("a") + struct.pack("<IIQ", 9, 8, 2**62) + b"\0" * 64
        ),
        "4611686018427387904 array values",
    ),
    (
        "2^62_entries",
        lambda d: _file(d / "m.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 2**62) + b"\0" * 64),
        "4611686018427387904 metadata entries",
    ),
    (
        "2^62_tensors",
        lambda d: _file(d / "m.gguf", b"GGUF" + struct.pack("<IQQ", 3, 2**62, 0) + b"\0" * 64),
        "4611686018427387904 tensor descriptions",
    ),
    # values the header's lengths do not check (the twenty-first independent round: each a traceback)
    ("alignment_a_string", lambda d: _file(d / "m.gguf", gguf_bytes({"general.alignment": "x"})), "general.alignment must be"),
    (
        "5000_nested_arrays",
        lambda d: _file(
            d / "m.gguf",
            b"GGUF"
            + struct.pack("<IQQ", 3, 0, 1)
            + _string("a")
            + struct.pack("<I", 9)
            + struct.pack("<IQ", 9, 1) * 5000
            + struct.pack("<IQ", 4, 0),
        ),
        "arrays nested deeper than 8",
    ),
    (
        "no_attention_heads",
        lambda d: _file(d / "m.gguf", gguf_bytes({"llama.block_count": 1, "llama.attention.head_count": 0, "llama.embedding_length": 8})),
        "lacks the context or attention shape of architecture 'llama' (attention.head_count: 0)",
    ),
    (  # a whole header llama.cpp then refuses to load
        "a_model_llama_cpp_cannot_load",
        lambda d: _file(d / "m.gguf", gguf_bytes({"llama.block_count": 1, "llama.attention.head_count": 1, "llama.embedding_length": 8})),
        "m.gguf exited with code",
    ),
]


def _file(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("make, message", [(m, msg) for _, m, msg in MODEL_INPUTS], ids=[name for name, _, _ in MODEL_INPUTS])
def test_a_bad_local_model_is_one_line_naming_it(tmp_path, make, message):
    models = tmp_path / "models"
    models.mkdir()
    model = make(models)
    overrides = ("env=mmlu", f"env.data_dir={tiny_mmlu(tmp_path / 'mmlu')}", "method=none", "llm=local", f"llm.model={model}", *QUICK)
    before = sorted(tmp_path.rglob("*"))
    one_line_exit_2(*outcome_of(overrides, tmp_path / "results" / "run"), message)
    assert sorted(tmp_path.rglob("*")) == before  # no folder made, no server's log left


# ---- the data files of the environments -------------------------------------------------------

LLB_DB_TASK = {
    "instruction": "How many rows?",
    "answer_info": {"direct": [[1]], "md5": None, "sql": "SELECT COUNT(*) FROM t"},
    "table_info": {"name": "t", "column_info_list": [{"name": "a", "type": "INT"}], "row_list": [[1]]},
}
LLB_OS_TASK = {
    "instruction": "Create /tmp/x.",
    "initialization_command_item": {"command_name": "bash", "script": ""},
    "evaluation_info": {"evaluation_command_item": {"script": "test -e /tmp/x"}, "ground_truth_command_item": {"script": "touch /tmp/x"}},
}
BCB_TASK = {
    "task_id": "BigCodeBench/0",
    "code_prompt": "def task_func():\n",
    "canonical_solution": "    return 1\n",
    "test": "import unittest\n",
    "entry_point": "task_func",
    "instruct_prompt": "Return 1.",
    "complete_prompt": "def task_func():\n",
    "libs": "['math']",
}


def llb_data(folder: Path) -> Path:
    """LLB DB and OS files: tasks 1-2 to train, 10-19 validated (split by a hash into validation and test)."""
    folder.mkdir()
    for kind, task in (("db", LLB_DB_TASK), ("os_interaction", LLB_OS_TASK)):
        (folder / f"{kind}_train.json").write_text(json.dumps({str(i): task for i in (1, 2)}))
        (folder / f"{kind}_val.json").write_text(json.dumps({str(i): task for i in range(10, 20)}))
    return folder


def bcb_data(folder: Path) -> Path:
    """BigCodeBench: tasks 0-1 to train, 10-19 validated."""
    folder.mkdir()
    ids = [f"BigCodeBench/{i}" for i in (0, 1, *range(10, 20))]
    (folder / "BigCodeBench.jsonl.gz").write_bytes(
        gzip.compress("".join(json.dumps({**BCB_TASK, "task_id": i}) + "\n" for i in ids).encode())
    )
    (folder / "full_seed123.json").write_text(json.dumps({"train_ids": ids[:2], "val_ids": ids[2:]}))
    return folder


def without(record: dict, *path: str) -> dict:
    out = json.loads(json.dumps(record))
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out


NOT_UTF8 = b'{"1": {"instruction": "caf\xe9"}}'
# (env, data folder maker, file, its new content, message)
DATA_INPUTS = [
    (
        "mmlu",
        tiny_mmlu,
        "dev.jsonl",
        b'{"id": "d/0", "question": "caf\xe9"}\n',
        "dev.jsonl is not UTF-8 text (byte 30: invalid continuation byte)",
    ),
    ("mmlu", tiny_mmlu, "dev.jsonl", b"", "dev.jsonl is empty"),
    ("mmlu", tiny_mmlu, "dev.jsonl", b'["d/0", "q", ["a", "b", "c", "d"], "B"]\n', "dev.jsonl: line 1 must be a JSON object, not a list"),
    (
        "mmlu",
        tiny_mmlu,
        "dev.jsonl",
        b'{"id": "d/0", "subject": "s", "question": "q", "choices": ["a", "b", "c", "d"]}\n',
        "dev.jsonl: line 1: answer: Field required",
    ),
    (
        "mmlu",
        tiny_mmlu,
        "test.jsonl",
        b'{"id": "t/0", "subject": "s", "question": "q", "choices": ["a", "b"], "answer": "B"}\n',
        "test.jsonl: line 1: choices: List should have at least 4 items",
    ),
    ("mmlu", tiny_mmlu, "validation.jsonl", b'{"id": "v/0"\n', "validation.jsonl: line 1 is not valid JSON"),
    (
        "mmlu",
        tiny_mmlu,
        "validation.jsonl",
        b'{"id": ' + b"1" * 5000 + b"}\n",
        "validation.jsonl: line 1 is not valid JSON (Exceeds the limit (4300 digits)",
    ),
    ("llb_db", llb_data, "db_train.json", NOT_UTF8, "db_train.json is not UTF-8 text"),
    (
        "llb_db",
        llb_data,
        "db_val.json",
        b"[" * 100_000 + b"]" * 100_000,
        "db_val.json: the file is not valid JSON (arrays or objects nested too deeply to read)",
    ),
    (
        "llb_db",
        llb_data,
        "db_train.json",
        json.dumps([LLB_DB_TASK]).encode(),
        "db_train.json must hold a JSON object of tasks keyed by id, not a list",
    ),
    (
        "llb_db",
        llb_data,
        "db_val.json",
        json.dumps({"first": LLB_DB_TASK}).encode(),
        "db_val.json: the task ids (the object's keys) must be integers, got 'first'",
    ),
    ("llb_db", llb_data, "db_train.json", b"  \n", "db_train.json is empty"),
    (  # a cell past SQLite's 64 bits: an OverflowError traceback before (the sixth independent round)
        "llb_db",
        llb_data,
        "db_train.json",
        json.dumps({"1": {**LLB_DB_TASK, "table_info": {**LLB_DB_TASK["table_info"], "row_list": [[2**70]]}}}).encode(),
        "db_train.json: task 1: table_info.row_list: the integer 1180591620717411303424 does not fit SQLite's 64-bit INTEGER",
    ),
    (
        "llb_db",
        llb_data,
        "db_train.json",
        json.dumps({"1": without(LLB_DB_TASK, "answer_info", "sql")}).encode(),
        "db_train.json: task 1: answer_info.sql: Field required",
    ),
    ("llb_os", llb_data, "os_interaction_train.json", NOT_UTF8, "os_interaction_train.json is not UTF-8 text"),
    (
        "llb_os",
        llb_data,
        "os_interaction_train.json",
        json.dumps([LLB_OS_TASK]).encode(),
        "os_interaction_train.json must hold a JSON object of tasks keyed by id, not a list",
    ),
    (
        "llb_os",
        llb_data,
        "os_interaction_val.json",
        json.dumps({"x1": LLB_OS_TASK}).encode(),
        "os_interaction_val.json: the task ids (the object's keys) must be integers, got 'x1'",
    ),
    (  # a digit to str.isdigit, not to int() (the twenty-first independent round: a traceback)
        "llb_os",
        llb_data,
        "os_interaction_val.json",
        json.dumps({"\u00b2": LLB_OS_TASK}).encode(),
        "os_interaction_val.json: the task ids (the object's keys) must be integers, got '\u00b2'",
    ),
    (
        "llb_db",
        llb_data,
        "db_val.json",
        json.dumps({"--2": LLB_DB_TASK}).encode(),
        "db_val.json: the task ids (the object's keys) must be integers, got '--2'",
    ),
    ("llb_os", llb_data, "os_interaction_val.json", b"", "os_interaction_val.json is empty"),
    (
        "llb_os",
        llb_data,
        "os_interaction_train.json",
        json.dumps({"1": without(LLB_OS_TASK, "evaluation_info", "evaluation_command_item")}).encode(),
        "task 1: evaluation_info.evaluation_command_item: Field required",
    ),
    (
        "bigcodebench",
        bcb_data,
        "BigCodeBench.jsonl.gz",
        gzip.compress(b'{"task_id": "BigCodeBench/0"}\n' * 50)[:-30],
        "BigCodeBench.jsonl.gz is not a readable gzip file",
    ),
    ("bigcodebench", bcb_data, "BigCodeBench.jsonl.gz", b"not gzip at all", "BigCodeBench.jsonl.gz is not a readable gzip file"),
    (
        "bigcodebench",
        bcb_data,
        "BigCodeBench.jsonl.gz",
        gzip.compress(json.dumps({**BCB_TASK, "libs": "math, os"}).encode()),
        "BigCodeBench.jsonl.gz: line 1: libs: must be a Python list of module names, got 'math, os'",
    ),
    (
        "bigcodebench",
        bcb_data,
        "full_seed123.json",
        json.dumps({"train_ids": ["BigCodeBench/9"], "val_ids": []}).encode(),
        "full_seed123.json: task 'BigCodeBench/9' is not in",
    ),
    (
        "bigcodebench",
        bcb_data,
        "full_seed123.json",
        json.dumps({"train_ids": "BigCodeBench/0", "val_ids": []}).encode(),
        "full_seed123.json: train_ids: Input should be a valid list",
    ),
]


@pytest.mark.parametrize(
    "env, make, name, content, message", DATA_INPUTS, ids=[f"{e}-{n}-{i}" for i, (e, _, n, _, _) in enumerate(DATA_INPUTS)]
)
def test_a_bad_data_file_is_one_line_naming_it(tmp_path, env, make, name, content, message):
    folder = make(tmp_path / "data")
    no_gold_check = ("env.exclude_gold_failures=false",) if env in ("llb_os", "bigcodebench") else ()  # no sandbox needed
    overrides = (
        f"env={env}",
        f"env.data_dir={folder}",
        *no_gold_check,
        "method=none",
        "llm=openai",
        "llm.model=m",
        "llm.base_url=http://127.0.0.1:9/v1",
        *QUICK,
    )
    line, code = outcome_of(overrides, tmp_path / "results" / "run")  # the control: the env loads, and the run stops at the server (down)
    assert code == 3 and "cannot reach the LLM server" in line, line
    (folder / name).write_bytes(content)
    before = sorted(tmp_path.rglob("*"))
    line, code = outcome_of(overrides, tmp_path / "results" / "run")
    one_line_exit_2(line, code, message)
    assert str(folder / name) in line  # the file, by its whole path
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
@pytest.mark.parametrize(
    "env, make, name",
    [
        ("mmlu", tiny_mmlu, "dev.jsonl"),
        ("llb_db", llb_data, "db_train.json"),
        ("llb_os", llb_data, "os_interaction_val.json"),
        ("bigcodebench", bcb_data, "BigCodeBench.jsonl.gz"),
        ("bigcodebench", bcb_data, "full_seed123.json"),
    ],
)
def test_a_data_file_that_is_no_regular_file_is_one_line_naming_it(tmp_path, env, make, name, kind):
    """The thirty-fifth round: a data file made a FIFO hung the run with no output; a link to /dev/zero grew it to a
    MemoryError traceback (8 of 8 files)."""
    folder = make(tmp_path / "data")
    (folder / name).unlink()
    os.mkfifo(folder / name) if kind == "fifo" else (folder / name).symlink_to("/dev/zero")
    no_gold_check = ("env.exclude_gold_failures=false",) if env in ("llb_os", "bigcodebench") else ()
    overrides = (f"env={env}", f"env.data_dir={folder}", *no_gold_check, "method=none", "llm=openai", "llm.model=m", *QUICK)
    line, code = outcome_of((*overrides, "llm.base_url=http://127.0.0.1:9/v1"), tmp_path / "results" / "run")
    one_line_exit_2(line, code, f"{folder / name} is not a regular file")


def test_the_shipped_data_files_pass_their_checks():
    """The models of the records refuse none of the real data (the benchmark data in ../shared/data)."""
    from memrl_bench.envs.base import read_data_file
    from memrl_bench.envs.bigcodebench import BigCodeBenchRecord, BigCodeBenchSplits
    from memrl_bench.envs.llb_db import LLBDBRecord
    from memrl_bench.envs.llb_os import LLBOSRecord
    from memrl_bench.envs.mmlu import MMLURecord

    shared = ROOT.parent / "shared" / "data"
    if not shared.exists():
        pytest.skip("needs the benchmark data in ../shared/data")
    files = {
        "mmlu/dev.jsonl": (MMLURecord, False),
        "mmlu/validation.jsonl": (MMLURecord, False),
        "mmlu/test.jsonl": (MMLURecord, False),
        "llb/db_train.json": (LLBDBRecord, True),
        "llb/db_val.json": (LLBDBRecord, True),
        "llb/os_interaction_train.json": (LLBOSRecord, True),
        "llb/os_interaction_val.json": (LLBOSRecord, True),
        "bigcodebench/BigCodeBench.jsonl.gz": (BigCodeBenchRecord, False),
        "bigcodebench/full_seed123.json": (BigCodeBenchSplits, False),
        "bigcodebench/hard_seed42.json": (BigCodeBenchSplits, False),
    }
    sizes = {name: len(read_data_file(shared / name, model, by_id=by_id)) for name, (model, by_id) in files.items()}
    assert sizes["mmlu/test.jsonl"] == 14042 and sizes["llb/db_train.json"] == 361 and sizes["bigcodebench/BigCodeBench.jsonl.gz"] == 1140


@pytest.mark.parametrize(
    "content",
    [
        b'{"llb_os/1": ',
        b"\xff\xfe garbage",
        b'["llb_os/1"]',
        b'{"llb_os/1": 3}',
        b'{"llb_os/1": ' + b"1" * 5000 + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"llb_os/0": "", "llb_os/1": "", "llb_os/2": ""}',  # before the digest
        "EDITED",  # 43b: a reason edited, the file still JSON: the task set changed without a word
    ],
    ids=["truncated", "not_utf8", "a_list", "not_reasons", "number_of_5000_digits", "nested_100000_deep", "no_digest", "edited"],
)
def test_a_damaged_gold_cache_is_a_warning_and_the_gold_is_checked_again(tmp_path, monkeypatch, capsys, content):
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    tasks = {"train": [Task(id=f"llb_os/{i}", split="train", description="d") for i in range(3)]}
    checked: list[str] = []

    def run_gold(task: Task) -> str:
        checked.append(task.id)
        return "" if task.id != "llb_os/1" else "gold fails"

    GoldFilter("llb_os", ["key"], tasks, run_gold, needs_sandbox=False).tasks("train")  # writes the cache
    path = next((tmp_path / "cache" / "llb_os").glob("gold_*.json"))
    path.write_bytes(path.read_bytes().replace(b'"gold fails"', b'""') if content == "EDITED" else content)
    checked.clear()
    kept = GoldFilter("llb_os", ["key"], tasks, run_gold, needs_sandbox=False).tasks("train")
    assert [t.id for t in kept] == ["llb_os/0", "llb_os/2"] and checked == ["llb_os/0", "llb_os/1", "llb_os/2"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"memrl-bench: warning: {path}: the gold check cache is damaged" in err
    assert json.loads(path.read_text())["results"] == {"llb_os/0": "", "llb_os/1": "gold fails", "llb_os/2": ""}  # rewritten whole


def _gold_cache_fifo(path: Path) -> None:
    import os

    os.mkfifo(path)


def _gold_cache_sparse(path: Path) -> None:
    import os

    path.write_bytes(b"")
    os.truncate(path, 20 << 30)


@pytest.mark.parametrize(
    "replace, problem",
    [
        (_gold_cache_fifo, "is not a regular file"),
        (lambda path: path.symlink_to("/dev/zero"), "is not a regular file"),
        (_gold_cache_sparse, "is larger than 16777216 bytes"),
    ],
    ids=["fifo", "symlink_to_dev_zero", "sparse_20_gb"],
)
def test_a_gold_cache_that_is_no_regular_file_or_too_large_is_a_warning_and_the_gold_is_checked_again(
    tmp_path, monkeypatch, capsys, replace, problem
):
    """gold14.py: a FIFO blocked the read forever, /dev/zero read without end (MemoryError)."""
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    tasks = {"train": [Task(id=f"llb_os/{i}", split="train", description="d") for i in range(2)]}
    GoldFilter("llb_os", ["key"], tasks, lambda task: "", needs_sandbox=False).tasks("train")  # writes the cache
    path = next((tmp_path / "cache" / "llb_os").glob("gold_*.json"))
    path.unlink()
    replace(path)
    checked: list[str] = []
    GoldFilter("llb_os", ["key"], tasks, lambda task: checked.append(task.id) or "", needs_sandbox=False).tasks("train")
    err = capsys.readouterr().err
    assert (
        checked == ["llb_os/0", "llb_os/1"]
        and err.count("\n") == 1
        and f"memrl-bench: warning: {path}: the gold check cache is damaged" in err
        and problem in err
    ), err
    assert (
        path.is_file() and not path.is_symlink() and json.loads(path.read_text())["results"] == {"llb_os/0": "", "llb_os/1": ""}
    )  # replaced by a cache


# ---- the commands: the report and the models ---------------------------------------------------


def command(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A sweep's folder of one run (synthetic), with the multirun.yaml Hydra wrote."""
    root = tmp_path_factory.mktemp("report")
    out = command(
        "memrl_bench",
        "-m",
        f"results_dir={root}",
        "env.tasks.train=16",
        "env.tasks.validation=8",
        "env.tasks.test_in_distribution=8",
        "env.tasks.test_out_of_distribution=8",
        "seed=0",
        *QUICK,
    )
    assert out.returncode == 0, out.stderr
    return root


@pytest.mark.parametrize(
    "out, message",
    [
        ("/dev/null/x", "/dev/null/x: /dev/null is a file, not a folder"),
        ("{results}/default/multirun.yaml/report", "multirun.yaml is a file, not a folder"),
    ],
    ids=["below_dev_null", "below_a_file"],
)
def test_a_report_out_below_a_file_is_one_line(results, out, message):
    out = out.replace("{results}", str(results))
    before = sorted(results.rglob("*"))
    done = command("memrl_bench.report", str(results), "--out", out)
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert sorted(results.rglob("*")) == before


@pytest.mark.parametrize(
    "html",
    ["/dev/null/x.html", "{results}", "/no/such/folder/x.html", ""],
    ids=["below_dev_null", "a_folder", "missing_folder", "empty"],
)
def test_findings_html_that_cannot_be_written_is_one_line(results, html):
    """The eleventh independent round: `python -m memrl_bench.findings RESULTS --html /dev/null/x.html` (or a folder) ended
    in a traceback; the twenty-first: `--html ""` (pathlib's ValueError)."""
    html = html.replace("{results}", str(results))
    before = sorted(results.rglob("*"))
    done = command("memrl_bench.findings", str(results), "--html", html)
    assert done.returncode == 2 and f"{Path(html)}: " in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stdout == "" and sorted(results.rglob("*")) == before


@pytest.mark.parametrize(
    "module, args",
    [
        ("memrl_bench.report", ("{loop}",)),
        ("memrl_bench.report", ("{results}", "--out", "{loop}")),
        ("memrl_bench.core.export", ("{results}", "--out", "{loop}")),
        ("memrl_bench.findings", ("{results}", "--html", "{loop}")),
    ],
    ids=["report_results", "report_out", "export_out", "findings_html"],
)
def test_a_path_whose_links_loop_is_one_line_naming_it(results, tmp_path, module, args):
    """The thirty-fourth round: `ln -s loop loop` given as a reader's folder or output ended in pathlib's RuntimeError
    ("Symlink loop"), a traceback and exit 1."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    before = sorted(results.rglob("*"))
    done = command(module, *(a.format(results=results, loop=loop) for a in args))
    assert done.returncode == 2 and f"{loop}: its symbolic links lead back to themselves" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and done.stdout == "" and sorted(results.rglob("*")) == before


def test_folders_too_deep_to_walk_are_passed_over_by_every_reader(results, tmp_path):
    """The twenty-first independent round: beside a run, a chain of folders past the system's path limit ended findings in a
    traceback (pathlib's rglob) and the report in one line reporting nothing; what cannot be walked is not searched."""
    shutil.copytree(results, tmp_path / "results")
    folder = os.open(tmp_path / "results", os.O_RDONLY)
    for _ in range(25):  # 25 x 201 characters: past PATH_MAX (4,096), made relative to an open folder
        os.mkdir("x" * 200, dir_fd=folder)
        inner = os.open("x" * 200, os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = inner
    os.close(folder)
    for module, args, wrote in [
        ("memrl_bench.findings", (), lambda done: "SYNTHETIC" in done.stdout),
        ("memrl_bench.report", ("--out", str(tmp_path / "report")), lambda _: (tmp_path / "report" / "report.html").is_file()),
        ("memrl_bench.core.export", ("--out", str(tmp_path / "export")), lambda _: any((tmp_path / "export").glob("episodes.*"))),
    ]:
        done = command(module, str(tmp_path / "results"), *args)
        assert done.returncode == 0 and "Traceback" not in done.stderr and wrote(done), (module, done.stderr[-2000:])


def _sweep(params: dict[str, str], task: str = "[]") -> bytes:
    lines = "".join(f"      {key}: {value}\n" for key, value in params.items())
    return (
        f"hydra:\n  sweeper:\n    _target_: hydra._internal.core_plugins.basic_sweeper.BasicSweeper\n    params:\n{lines}  overrides:\n    "
        f"task: {task}\n"
    ).encode()


def _alias_bomb() -> bytes:
    """Ten lines whose aliases expand to 9^10 strings (a billion laughs)."""
    text, previous = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n', "a"
    for name in "bcdefghij":
        text += f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
        previous = name
    return text.encode() + _sweep({"seed": "1"}, task="*j")


HOSTILE_SWEEPS = [  # mr11.sh: each ran out of memory, hung or overflowed the stack
    ("range_of_10_8_seeds", _sweep({"seed": "range(0,100000000)"}), "SweepTooLargeError: seed=range(0,100000000): more than 10000 values"),
    (
        "product_of_10_8_jobs",
        _sweep({key: "0,1,2,3,4,5,6,7,8,9" for key in "abcdefgh"}),
        "SweepTooLargeError: 10 x 10 x 10 x 10 x 10 x 10 x 10 x 10 jobs, more than 10000",
    ),
    ("range_of_nan", _sweep({"seed": "range(0,nan)"}), "SweepValueError: seed=range(0,nan): not a sweep Hydra can expand"),  # 51b
    ("step_of_0", _sweep({"seed": "range(0,10,0)"}), "SweepValueError: seed=range(0,10,0): not a sweep Hydra can expand"),
    ("nested_600_deep_in_a_value", _sweep({"seed": "'" + "[" * 600 + "]" * 600 + "'"}), "SweepValueError: seed=[[[[[[[[[["),
    # 52b: parsed in time growing with the square of its length (40,000 items: 166 s, 80,000: 784 s)
    ("a_list_of_40000_items", _sweep({}, task="['+extra=[" + ",".join(["1"] * 40_000) + "]']"), "SweepValueError: an override of 80008"),
    ("alias_bomb", _alias_bomb(), "YAMLTooLargeError: more than 100000 nodes once its aliases are expanded"),
    ("nested_20000_deep", b"hydra: " + b"[" * 20000 + b"]" * 20000 + b"\n", "YAMLTooLargeError: nested more than 64 deep"),
    ("larger_than_1_mib", b"hydra: {sweeper: {}}\n" + b"# padding\n" * 110_000, "YAMLTooLargeError: larger than 1048576 bytes"),
]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"hydra: {sweeper: [1, 2\n", "ParserError: while parsing a flow sequence"),
        (b"\xff\xfe", "UnicodeDecodeError"),
        (b"hydra: 5\n", "TypeError"),
    ]
    + [(c, m) for _, c, m in HOSTILE_SWEEPS],
    ids=["yaml_syntax", "not_utf8", "not_hydras"] + [name for name, _, _ in HOSTILE_SWEEPS],
)
def test_a_damaged_multirun_yaml_is_one_line_naming_it(results, tmp_path, content, message):
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    (copy / "default" / "multirun.yaml").write_bytes(content)
    before = sorted(copy.rglob("*"))
    done = command("memrl_bench.report", str(copy))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{copy / 'default' / 'multirun.yaml'} is not a readable record of a Hydra sweep ({message}" in done.stderr
    assert sorted(copy.rglob("*")) == before  # no report folder left


# ---- run folders: JSON Python cannot hold, files that are not regular files -------------------


HUGE_NUMBER = "1" + "0" * 5000  # past Python's 4,300 digits for int(): json.loads raises ValueError
DEEP_ARRAY = "[" * 100_000 + "]" * 100_000  # past the interpreter's stack: json.loads raises RecursionError


def _first_field(text: str, value: str) -> str:
    return text.replace("{", '{"z": ' + value + ", ", 1)


def _episode_line(line: int, value: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        lines = (run / "episodes.jsonl").read_text().splitlines(keepends=True)
        lines[line] = _first_field(lines[line], value)
        (run / "episodes.jsonl").write_text("".join(lines))

    return damage


def _json_file(name: str, value: str) -> Callable[[Path], None]:
    return lambda run: (run / name).write_text(_first_field((run / name).read_text(), value))


def _link_to_proc(name: str) -> Callable[[Path], None]:
    """`name` replaced by a link to a /proc file (the eighth independent round linked /proc/kmsg: every reader spun forever)."""

    def damage(run: Path) -> None:
        (run / name).unlink()
        (run / name).symlink_to("/proc/self/status")

    return damage


def _nested(name: str, depth: int) -> Callable[[Path], None]:
    """Empty folders nested `depth` deep in `name`."""

    def damage(run: Path) -> None:
        (run / name / "/".join(["a"] * depth)).mkdir(parents=True)

    return damage


def _fifo(name: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        import os

        (run / name).unlink()
        os.mkfifo(run / name)

    return damage


def _sparse(name: str) -> Callable[[Path], None]:
    """`name` made a sparse file of 20 GB (its bytes, then zero bytes without a newline): a reader that read it whole ran out of memory
    (fifo15.sh).
    """

    def damage(run: Path) -> None:
        import os

        os.truncate(run / name, 20 << 30)

    return damage


UNREADABLE_RUN_FILES = [
    (
        "manifest_number_of_5000_digits",
        _json_file("manifest.json", HUGE_NUMBER),
        "manifest.json is not valid JSON (Exceeds the limit (4300 digits) for integer string conversion)",
    ),
    (
        "manifest_nested_100000_deep",
        _json_file("manifest.json", DEEP_ARRAY),
        "manifest.json is not valid JSON (arrays or objects nested too deeply to read)",
    ),
    (
        "episodes_number_in_line_11",
        _episode_line(10, HUGE_NUMBER),
        "episodes.jsonl line 11 is not valid JSON (Exceeds the limit (4300 digits)",
    ),
    ("episodes_nested_in_last_line", _episode_line(-1, DEEP_ARRAY), "is not valid JSON (arrays or objects nested too deeply to read)"),
    (
        "metrics_number_of_5000_digits",
        _json_file("metrics.json", HUGE_NUMBER),
        "metrics.json is not valid JSON (Exceeds the limit (4300 digits)",
    ),
    (
        "metrics_nested_100000_deep",
        _json_file("metrics.json", DEEP_ARRAY),
        "metrics.json is not valid JSON (arrays or objects nested too deeply to read)",
    ),
    ("manifest_is_a_fifo", _fifo("manifest.json"), "manifest.json is not a regular file"),
    ("episodes_is_a_fifo", _fifo("episodes.jsonl"), "episodes.jsonl is not a regular file"),
    ("metrics_is_a_fifo", _fifo("metrics.json"), "metrics.json is not a regular file"),
    ("manifest_of_20_gb", _sparse("manifest.json"), "manifest.json is larger than 16777216 bytes (21474836480 bytes)"),
    ("episodes_of_20_gb", _sparse("episodes.jsonl"), "episodes.jsonl line 41 is longer than 67108864 bytes"),
    ("metrics_of_20_gb", _sparse("metrics.json"), "metrics.json is larger than 16777216 bytes (21474836480 bytes)"),
    ("checksums_of_20_gb", _sparse("memory/final/SHA256SUMS"), "SHA256SUMS is larger than 16777216 bytes (21474836480 bytes)"),
    ("snapshot_of_20_gb", _sparse("memory/final/items.jsonl"), "items.jsonl is larger than 17179869184 bytes (21474836480 bytes)"),
    ("snapshot_links_to_proc", _link_to_proc("memory/final/items.jsonl"), "items.jsonl is a file of a file system with no storage"),
    ("episodes_links_to_proc", _link_to_proc("episodes.jsonl"), "episodes.jsonl is a file of a file system with no storage"),
    # 45b: 990 nested folders in a snapshot ended the readers and a resume in RecursionError (a resume then removes them)
    ("snapshot_nested_65_deep", _nested("memory/final", 65), "is nested more than 64 folders deep in a memory snapshot"),
]


@pytest.mark.parametrize("damage, message", [(d, m) for _, d, m in UNREADABLE_RUN_FILES], ids=[name for name, _, _ in UNREADABLE_RUN_FILES])
def test_an_unreadable_run_file_stops_the_export_with_one_line_naming_it(results, tmp_path, damage, message):
    """JSON that fails with ValueError or RecursionError rather than JSONDecodeError (damage2.py,
    resume6.py), and a FIFO in place of a file (bad11.sh; it hung the readers): one line naming
    the file, exit 2, no traceback, within the timeout."""
    import shutil

    from memrl_bench.core.runfolder import run_folders

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    damage(run_folders(copy)[0])
    done = subprocess.run(
        [sys.executable, "-m", "memrl_bench.core.export", str(copy), "--out", str(tmp_path / "export")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    one_line_exit_2(done.stderr.strip(), done.returncode, message)
    assert done.stderr.count("\n") == 1 and not (tmp_path / "export").exists()


def nest(folder: Path, depth: int) -> Path:
    """`folder` made with `depth` folders nested in it, one at a time (pathlib's mkdir(parents=True) recurses too)."""
    folder.mkdir(parents=True)
    for _ in range(depth):
        folder = folder / "a"
        folder.mkdir()
    return folder


def unnest(deepest: Path, top: Path) -> None:
    """The folders from `deepest` up to `top` removed (shutil.rmtree of Python 3.11 recurses as deep as the tree)."""
    while deepest != top.parent:
        deepest.rmdir()
        deepest = deepest.parent


def test_folders_nested_past_pythons_recursion_limit_beside_a_run_are_walked(results, tmp_path):
    """45b: 1,800 nested folders beside a run ended report, export and findings in RecursionError (os.walk recursed)."""
    import shutil

    from memrl_bench.core.runfolder import run_folders
    from memrl_bench.report.load import scan

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    deepest = nest(copy / "junk", 1500)
    try:
        assert len(run_folders(copy)) == 1
        assert scan(copy)[0] == run_folders(copy)
    finally:
        unnest(deepest, copy / "junk")


def test_a_snapshots_leftover_that_is_a_fifo_is_one_line_naming_it(tmp_path):
    """47b: a FIFO at memory/.final.tmp (or .<name>.old): shutil.rmtree opened it and the resume waited for good, no line."""
    import os

    leftover = tmp_path / "run" / "memory" / ".final.tmp"
    leftover.parent.mkdir(parents=True)
    os.mkfifo(leftover)
    program = (
        "import sys\nfrom pathlib import Path\nfrom memrl_bench.core.runfolder import RunFolder\n"
        "RunFolder(Path(sys.argv[1])).save_snapshot('final', lambda tmp: (tmp / 'items.jsonl').write_text(''))\n"
    )
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path / "run")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "CorruptRunFolderError" in done.stderr and ".final.tmp is a FIFO, a device or a socket" in done.stderr, done.stderr


def test_a_snapshots_leftover_nested_past_what_rmtree_reaches_is_one_line_naming_it(tmp_path):
    """46b: a crash's memory/.final.tmp (or .final.old) holding 3,000 nested folders made every resume a RecursionError
    (shutil.rmtree recurses in Python 3.10-3.11), and the run could never finish."""
    from memrl_bench.core.runfolder import CorruptRunFolderError, RunFolder

    leftover = tmp_path / "run" / "memory" / ".final.tmp"
    deepest = nest(leftover, 1500)
    try:
        with pytest.raises(CorruptRunFolderError, match=r"\.final\.tmp holds folders nested too deep to remove here"):
            RunFolder(tmp_path / "run").save_snapshot("final", lambda tmp: (tmp / "items.jsonl").write_text(""))
    finally:
        unnest(deepest, leftover)


def test_a_fifo_manifest_leaves_the_run_out_of_the_report_with_one_line(results, tmp_path):
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    from memrl_bench.core.runfolder import run_folders

    _fifo("manifest.json")(run_folders(copy)[0])
    done = subprocess.run(
        [sys.executable, "-m", "memrl_bench.report", str(copy), "--out", str(tmp_path / "report")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stderr and "manifest.json is not a regular file" in done.stderr, done.stderr


def test_pulling_an_unknown_model_is_one_line_listing_the_known_ones():
    done = command("memrl_bench.llm.catalogue", "pull", "no-such-model")
    assert (
        done.returncode == 2
        and done.stderr == f"error: unknown model 'no-such-model'; known: {', '.join(sorted(CATALOGUE))}, or a path to a .gguf file\n"
    )


# ---- a server answering megabytes per completion ------------------------------------------------


def test_a_completion_past_the_cap_is_stored_cut_and_the_answer_read_from_what_is_kept(tmp_path):
    """4 MB a completion, 9 episodes: the run folder and the cache hold 64 Ki characters of each,
    the episode says how much was dropped, and the answer at its start is checked (success)."""
    answer = "Answer: B\n" + "x" * 4_000_000
    cache = tmp_path / "llm.sqlite"
    with FaultServer(reply=lambda messages: answer) as server:
        overrides = (
            "env=mmlu",
            f"env.data_dir={tiny_mmlu(tmp_path / 'mmlu', questions=3)}",
            "method=none",
            "llm=openai",
            f"llm.base_url={server.base_url}",
            "llm.model=m",
            "llm.cache_mode=read_write",
            f"llm.cache_path={cache}",
            "embedder=openai",
            f"embedder.base_url={server.base_url}",
            "embedder.model=e",
            *QUICK,
        )
        run(composed(*overrides), tmp_path / "run")
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 9 and all(e["success"] for e in episodes)
    assert {e["info"]["dropped_completion_chars"] for e in episodes} == {len(answer) - MIN_COMPLETION_CHARS}
    assert {len(e["turns"][0]["raw_output"]) for e in episodes} == {MIN_COMPLETION_CHARS} and {
        e["turns"][0]["finish_reason"] for e in episodes
    } == {"length"}
    stored = sum(p.stat().st_size for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert stored < 9 * 2 * MIN_COMPLETION_CHARS  # the log and the transcripts: one kept part each at most
    assert sum(p.stat().st_size for p in tmp_path.glob("llm.sqlite*")) < 9 * 2 * MIN_COMPLETION_CHARS


def test_an_unknown_mmlu_subject_is_one_line_naming_the_valid_ones(tmp_path):
    overrides = (
        "env=mmlu",
        f"env.data_dir={tiny_mmlu(tmp_path / 'mmlu')}",
        "+env.subjects=[virology]",
        "method=none",
        "llm=openai",
        "llm.model=m",
        "llm.base_url=http://127.0.0.1:9/v1",
        *QUICK,
    )
    one_line_exit_2(*outcome_of(overrides, tmp_path / "results" / "run"), "env.subjects: unknown MMLU subject(s) virology; valid: demo")


def test_a_memory_items_line_past_the_cap_is_one_error_naming_it(tmp_path):
    """items.jsonl of a final snapshot, 20 GB sparse: read line by line up to MAX_LINE_BYTES, never whole."""
    import os

    from memrl_bench.core.records import memory_items
    from memrl_bench.core.runfolder import FileTooLargeError

    (tmp_path / "items.jsonl").write_bytes(b"")
    os.truncate(tmp_path / "items.jsonl", 20 << 30)
    with pytest.raises(FileTooLargeError, match=r"items\.jsonl line 1 is longer than 67108864 bytes"):
        memory_items(tmp_path)
