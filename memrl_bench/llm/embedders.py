"""Text embeddings: one small interface, an offline MiniLM, an OpenAI-compatible client, a cache.

Every embedder returns float32 rows of unit length, so cosine similarity is a dot
product, and names itself in `identity` (written into the manifest and used as the
cache key, so vectors from two models never mix).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import threading
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from memrl_bench.core.config import MAX_SECONDS, MAX_THREADS, InputError, Settings, named_part, validated
from memrl_bench.core.errors import refuse_a_foreign_schema, sqlite_errors_as, table_forms
from memrl_bench.core.redaction import redact_server_text, strip_url_secrets, url_host
from memrl_bench.core.vector_index import unit_rows
from memrl_bench.llm.settings import api_key, checked_key_env, checked_url, url_from_env


class EmbedderSettings(Settings):
    """The embedder group (conf/embedder/*.yaml): the embedder's name, then its own keys, which
    make_embedder passes to its class (all but `cache_path`: an SQLite cache of its vectors, when the model has one)."""

    name: str


class MiniLMSettings(EmbedderSettings):
    name: Literal["minilm"]
    model_dir: str | None = Field(None, description="Folder with model.onnx + tokenizer.json (null: the catalogue's).")
    threads: int = Field(1, ge=1, le=MAX_THREADS, description="onnxruntime intra-op threads.")
    batch_size: int = Field(32, ge=1, description="Texts per forward pass.")
    max_tokens: int = Field(256, ge=2, description="Longer texts are truncated (at least [CLS] and [SEP]).")
    cache_path: str | None = Field(None, description="SQLite file caching vectors (null: no cache).")


class OpenAIEmbedderSettings(EmbedderSettings):
    name: Literal["openai"]
    model: str = Field("text-embedding-3-small", min_length=1, description="The embeddings model.")
    base_url: str | None = Field(None, description="null: the openai package default (or $OPENAI_BASE_URL).")
    api_key_env: str = Field("OPENAI_API_KEY", description="The environment variable holding the key.")
    batch_size: int = Field(64, ge=1, description="Texts per request.")
    dim: int | None = Field(None, ge=1, description="null: learned from the first response.")
    timeout_s: float = Field(60.0, gt=0, le=MAX_SECONDS, description="Seconds per request.")
    cache_path: str | None = Field(None, description="SQLite file caching vectors (null: no cache).")

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        return checked_url(url)

    @field_validator("api_key_env")
    @classmethod
    def _key_env(cls, name: str) -> str:
        return checked_key_env(name)


class Embedder(ABC):
    """Texts -> float32 matrix of unit-norm rows, one per text."""

    Settings: ClassVar[type[EmbedderSettings]] = (
        EmbedderSettings  # its config group's model; its keys but name and cache_path are its constructor's
    )

    @property
    @abstractmethod
    def dim(self) -> int:
        """Length of one vector."""

    @property
    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """What produces the vectors (model, file checksum, settings); no secrets."""

    @abstractmethod
    def embed(self, texts: list[str]) -> np.ndarray:
        """Shape (len(texts), dim), float32, unit-norm rows."""


def _check_texts(texts: list[str]) -> None:
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("embed() takes a list of strings")


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class EnvIntent(Embedder, ABC):
    """embedder=env_intent, no text embedder: each task carries its key vector (the synthetic env's
    intents). Never built: make_embedder gives None for it."""

    class Settings(EmbedderSettings):
        name: Literal["env_intent"]


class EmbedderModelError(InputError, RuntimeError):
    """embedder.model_dir holds no MiniLM export the embedder can load (missing, damaged, another model's)."""


_CATALOGUES = "; leave embedder.model_dir unset to use the catalogue's copy (checked against its sha256)"


class MiniLMOnnxEmbedder(Embedder):
    """all-MiniLM-L6-v2 with int8 weights on onnxruntime (no torch), as sentence-transformers runs it.

    WordPiece tokens truncated to `max_tokens`, the transformer's last hidden state
    mean-pooled over the attention mask, then L2-normalised.
    """

    Settings = MiniLMSettings

    MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
    DIM = 384

    def __init__(self, model_dir: str | Path | None = None, threads: int = 1, batch_size: int = 32, max_tokens: int = 256):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if model_dir is None:
            from memrl_bench.llm import catalogue as models

            model_dir = models.ensure("minilm-l6-int8")
        model_dir = Path(model_dir).expanduser()
        model_path, tokenizer_path = model_dir / "model.onnx", model_dir / "tokenizer.json"
        for required in (model_path, tokenizer_path):
            if not required.is_file():
                raise EmbedderModelError(f"embedder.model_dir {str(model_dir)!r} has no {required.name}{_CATALOGUES}")
        if threads < 1 or batch_size < 1 or max_tokens < 2:
            raise ValueError(f"embedder: threads, batch_size must be >= 1 and max_tokens >= 2 (got {threads}, {batch_size}, {max_tokens})")

        self.batch_size = batch_size
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as err:  # the tokenizers package raises a bare Exception for a file it cannot parse
            raise EmbedderModelError(f"{tokenizer_path}: not a tokenizer the tokenizers package reads ({err}){_CATALOGUES}") from None
        self._tokenizer.enable_truncation(max_length=max_tokens)
        # Pad to the longest text of a batch (the shipped tokenizer pads to a fixed 128).
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime's errors (InvalidProtobuf, Fail...) share no base of its own
            raise EmbedderModelError(f"{model_path}: not an ONNX model onnxruntime loads ({err}){_CATALOGUES}") from None
        self._input_names = {i.name for i in self._session.get_inputs()}
        outputs = self._session.get_outputs()
        if outputs[0].shape[-1] != self.DIM or len(outputs[0].shape) != 3:
            raise EmbedderModelError(
                f"{model_path}: expected a last_hidden_state output of shape [batch, sequence, {self.DIM}], got {outputs[0].name} "
                f"{outputs[0].shape}{_CATALOGUES}"
            )
        self._identity = {
            "kind": "minilm",
            "model": self.MODEL_NAME,
            "model_sha256": _sha256_file(model_path),
            "tokenizer_sha256": _sha256_file(tokenizer_path),
            "dim": self.DIM,
            "max_tokens": max_tokens,
            "pooling": "mean",
            "normalized": True,
        }

    @property
    def dim(self) -> int:
        return self.DIM

    @property
    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def embed(self, texts: list[str]) -> np.ndarray:
        _check_texts(texts)
        out = np.zeros((len(texts), self.DIM), dtype=np.float32)
        # Batches of similar length waste less work on padding; a text's vector does
        # not depend on its batch (the padding is masked out).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        attention_mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(None, feeds)[0]
        weights = attention_mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return unit_rows(pooled)


class OpenAIEmbedder(Embedder):
    """An OpenAI-compatible /v1/embeddings endpoint (OpenAI, llama.cpp, vLLM, ...)."""

    Settings = OpenAIEmbedderSettings

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        batch_size: int = 64,
        dim: int | None = None,
        timeout_s: float = 60.0,
    ):
        import openai

        from memrl_bench.llm.http import body_cap, capped_client

        if not model:
            raise ValueError("embedder.model is required for the openai embedder")
        # Local servers take any key; a hosted API fails on its own with a clear message.
        key = api_key(api_key_env) or "none"
        base_url = base_url or url_from_env("OPENAI_BASE_URL")  # what the openai package would read unchecked
        # an answer's body is read under a cap in bytes and time: a hostile server cannot exhaust memory
        self._client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s, http_client=capped_client(body_cap(), timeout_s))
        self.model = model
        self.batch_size = batch_size
        self._dim = dim
        host = url_host(str(self._client.base_url))  # no user:password@ in the identity
        self._identity = {"kind": "openai", "model": model, "host": host, "normalized": True}

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._request(["dimension probe"])  # its answer sets the size
        return self._dim

    @property
    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def _request(self, texts: list[str]) -> np.ndarray:
        import openai

        from memrl_bench.llm import LLMOutageError

        try:
            response = self._client.embeddings.create(model=self.model, input=texts)
        except (openai.APIConnectionError, openai.APIStatusError) as err:
            if getattr(err, "status_code", None) in (401, 403):
                raise  # a refused key: the CLI's one line naming the variable
            # The openai package has already retried: the run stops here and resumes later
            # (a 404 too: a wrong base_url or a server without embeddings, fixed before a re-run).
            raise LLMOutageError(
                f"the embeddings server at {strip_url_secrets(str(self._client.base_url))} failed: {redact_server_text(str(err))}"
            ) from err
        except (AttributeError, TypeError, ValueError):  # the openai package's own reading of an answer that is no embeddings
            response = None
        # An answer is read as vectors of finite numbers, one per text, or not at all; its text is never quoted (a cell
        # quoting the key HTML-escaped reached stderr through numpy's error, twentieth probe round).
        try:
            rows = sorted(response.data, key=lambda d: d.index) if response is not None else []
            vectors = np.array([r.embedding for r in rows], dtype=np.float32)
            whole = len(rows) == len(texts) and vectors.ndim == 2 and vectors.shape[1] > 0 and bool(np.isfinite(vectors).all())
        except (AttributeError, TypeError, ValueError):
            whole = False
        if not whole:
            raise LLMOutageError(
                f"the embeddings server at {strip_url_secrets(str(self._client.base_url))} answered {len(texts)} texts with something "
                "that is not one vector of finite numbers each (is embedder.base_url an OpenAI-compatible embeddings endpoint?)"
            )
        # one memory's vectors come from one model: a size other than embedder.dim's, or than the first answer's, stops the run
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            raise EmbeddingSizeError(
                f"the embeddings server at {strip_url_secrets(str(self._client.base_url))} answered vectors of {vectors.shape[1]} "
                f"numbers where embedder.dim (or its first answer) has {self._dim}: serve one embedding model for the whole run"
            )
        return unit_rows(vectors)

    def embed(self, texts: list[str]) -> np.ndarray:
        _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate([self._request(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)])


class EmbeddingSizeError(InputError, RuntimeError):
    """An embeddings server answered vectors of another size than the run's (embedder.dim or its first answer)."""


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS embeddings (identity TEXT NOT NULL, text_sha256 TEXT NOT NULL, vector BLOB NOT NULL, checksum TEXT, "
    "PRIMARY KEY (identity, text_sha256))"
)
_ADD_CHECKSUM = "ALTER TABLE embeddings ADD COLUMN checksum TEXT"  # a cache written before entries had checksums
# what a cache any version wrote holds: the table as made now, and the first made then given checksums
_TABLES = table_forms(
    (_SCHEMA,),
    (
        "CREATE TABLE embeddings (identity TEXT NOT NULL, text_sha256 TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (identity, "
        "text_sha256))",
        _ADD_CHECKSUM,
    ),
)
_REMEDY = "unset embedder.cache_path"


class EmbeddingCacheError(InputError, RuntimeError):
    """The embedding cache file cannot be used; the message names it."""


def _vector_checksum(identity_key: str, text_hash: str, blob: bytes) -> str:
    """The sha256 of an entry's key and vector."""
    return hashlib.sha256(f"{identity_key}\n{text_hash}\n".encode() + blob).hexdigest()


class CachedEmbedder(Embedder):
    """Any embedder behind an SQLite cache keyed by (embedder identity, text).

    A call looks every text up at once and embeds the misses in one batch. WAL mode
    lets several runs share one cache file. Each entry carries the sha256 of its key and
    vector, checked on every read: an entry that was edited or damaged (a vector of
    another length or other bytes) is one warning naming the file and is embedded again,
    never used; entries from before checksums are embedded again (one warning per file).
    A file that is not a readable SQLite cache raises EmbeddingCacheError naming it.
    """

    _LOOKUP_CHUNK = 500  # below SQLite's bound-parameter limit

    def __init__(self, inner: Embedder, path: str | Path):
        self.inner = inner
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._identity_key = hashlib.sha256(json.dumps(inner.identity, sort_keys=True).encode()).hexdigest()
        self._lock = threading.Lock()
        self._warned_unchecked = False
        self._size: int | None = None  # the length of the vectors this cache has returned
        refuse_a_foreign_schema(self.path, _TABLES, EmbeddingCacheError, "the embedding cache", _REMEDY)
        with self._named_errors():
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            if "checksum" not in {
                row[1] for row in self._db.execute("PRAGMA table_info(embeddings)")
            }:  # a cache written before entries had checksums
                try:
                    self._db.execute(_ADD_CHECKSUM)
                except sqlite3.OperationalError as err:
                    if "duplicate column" not in str(err):  # another process added it meanwhile
                        raise
            self._db.commit()
        self.hits = 0  # texts served from the cache
        self.misses = 0  # texts that had to be embedded (damaged entries included)

    def _named_errors(self) -> AbstractContextManager[None]:
        return sqlite_errors_as(EmbeddingCacheError, self.path, "the embedding cache", _REMEDY)

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def identity(self) -> dict[str, Any]:
        return self.inner.identity

    def embed(self, texts: list[str]) -> np.ndarray:
        _check_texts(texts)
        hashes = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        with self._lock:
            found = self._lookup(sorted(set(hashes)))
            missing = {h: t for h, t in zip(hashes, texts) if h not in found}
            misses = sum(h in missing for h in hashes)
            self.misses += misses
            self.hits += len(texts) - misses
            if missing:
                vectors = self.inner.embed(list(missing.values()))
                blobs = [np.asarray(v, dtype=np.float32).tobytes() for v in vectors]
                rows = [(self._identity_key, h, blob, _vector_checksum(self._identity_key, h, blob)) for h, blob in zip(missing, blobs)]
                with self._named_errors():
                    self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)  # replaces a damaged entry
                    self._db.commit()
                found.update(zip(missing, vectors))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # entries that pass their checksums yet disagree with each other or with this run's earlier vectors: written so on
        # purpose, or by another model served under the same name
        lengths = {len(found[h]) for h in hashes} | ({self._size} if self._size is not None else set())
        if len(lengths) > 1:
            raise EmbeddingCacheError(
                f"{self.path}: vectors of {sorted(lengths)} dimensions for one embedder; move the cache away to start a new one"
            )
        self._size = lengths.pop()
        return np.stack([found[h] for h in hashes]).astype(np.float32)

    def _lookup(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """The cached vectors of these text hashes that pass their checksums."""
        found: dict[str, np.ndarray] = {}
        damaged = unchecked = 0
        for start in range(0, len(hashes), self._LOOKUP_CHUNK):
            chunk = hashes[start : start + self._LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT text_sha256, vector, checksum FROM embeddings WHERE identity = ? AND text_sha256 IN ({marks})"
            with self._named_errors():
                rows = self._db.execute(query, [self._identity_key, *chunk]).fetchall()
            for text_hash, blob, checksum in rows:
                if checksum is None:
                    unchecked += 1
                elif (
                    not isinstance(blob, bytes)
                    or not blob
                    or len(blob) % 4
                    or checksum != _vector_checksum(self._identity_key, text_hash, blob)
                ):
                    damaged += 1
                else:
                    found[text_hash] = np.frombuffer(blob, dtype=np.float32)
        if damaged:
            print(
                f"memrl-bench: warning: {self.path}: {damaged} cached vector(s) do not match their checksums (edited or damaged); "
                "embedding them again",
                file=sys.stderr,
            )
        if unchecked and not self._warned_unchecked:
            self._warned_unchecked = True
            print(f"memrl-bench: warning: {self.path}: vectors cached before entries had checksums are embedded again", file=sys.stderr)
        return found

    def close(self) -> None:
        with self._lock:
            self._db.close()


def make_embedder(settings: EmbedderSettings | dict[str, Any]) -> Embedder | None:
    """The embedder the embedder group names (its class found by memrl_bench.core.registry; a mapping
    is checked by the class's `Settings`, typed settings are memrl_bench.core.config.validate_config's);
    None for env_intent (tasks carry their own key vectors).

    `cache_path`, in the settings of an embedder that has one, wraps it in an SQLite cache at that file.
    """
    name = settings.name if isinstance(settings, EmbedderSettings) else settings.get("name")
    cls = named_part("embedder", name, "embedder.name")
    if not isinstance(settings, cls.Settings):
        settings = validated(cls.Settings, dict(settings), "embedder")
    if cls is EnvIntent:
        return None
    embedder: Embedder = cls(**settings.model_dump(exclude={"name", "cache_path"}))
    cache_path = getattr(settings, "cache_path", None)
    return CachedEmbedder(embedder, cache_path) if cache_path else embedder
