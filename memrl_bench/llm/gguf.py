"""What a GGUF model file says about itself: its training context and the size of its KV cache.

Reads the header's metadata (GGUF v2 / v3, little-endian) without loading any tensor:
`<arch>.context_length` is the context the model was trained with, and the attention
shape (`block_count`, `attention.head_count_kv`, the key and value lengths) gives the
bytes llama.cpp's f16 KV cache holds per token, from which the local server's context
is sized to the memory it may take (memrl_bench.llm.local_server.context_size).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

_MAGIC = b"GGUF"
# value type -> struct format of its fixed-size scalar (8: string, 9: array are read apart)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
KV_CACHE_BYTES_PER_VALUE = 2  # llama.cpp's default KV cache type is f16


class GGUFError(ValueError):
    """The file is not a readable GGUF model; the message names it."""


@dataclass(frozen=True)
class GGUFModel:
    architecture: str
    context_length: int  # tokens the model was trained with
    kv_bytes_per_token: int  # K and V of every layer for one token, f16

    @classmethod
    def read(cls, path: str | Path) -> GGUFModel:
        metadata = read_metadata(path)
        arch = metadata.get("general.architecture")
        try:
            layers = int(metadata[f"{arch}.block_count"])
            heads = int(metadata[f"{arch}.attention.head_count"])
            kv_heads = int(metadata.get(f"{arch}.attention.head_count_kv", heads))
            head_dim = int(metadata[f"{arch}.embedding_length"]) // heads
            key_length = int(metadata.get(f"{arch}.attention.key_length", head_dim))
            value_length = int(metadata.get(f"{arch}.attention.value_length", head_dim))
            context = int(metadata[f"{arch}.context_length"])
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
            raise GGUFError(f"{path}: the GGUF metadata lacks the context or attention shape of architecture {arch!r} ({err})") from None
        return cls(str(arch), context, layers * kv_heads * (key_length + value_length) * KV_CACHE_BYTES_PER_VALUE)


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The header's key-value metadata; arrays are skipped (their value is their length)."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != _MAGIC:
                raise GGUFError(f"{path} is not a GGUF file (no GGUF magic number)")
            version, _tensors, count = struct.unpack("<IQQ", _read(f, 20))
            if version < 2:
                raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
            return {_string(f): _value(f, struct.unpack("<I", _read(f, 4))[0]) for _ in range(count)}
    except (struct.error, UnicodeDecodeError, EOFError) as err:
        raise GGUFError(f"{path}: the GGUF header is damaged ({err})") from None


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise EOFError("the file ends inside the header")
    return data


def _string(f: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", _read(f, 8))
    return _read(f, length).decode()


def _value(f: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item_kind, length = struct.unpack("<IQ", _read(f, 12))
        if item_kind in _SCALARS:
            f.seek(struct.calcsize(_SCALARS[item_kind]) * length, 1)
        else:  # strings (the tokenizer's vocabulary) or nested arrays: read past them one by one
            for _ in range(length):
                _value(f, item_kind)
        return length
    raise GGUFError(f"unknown GGUF value type {kind}")
