"""What a GGUF model file says about itself: its training context and the size of its KV cache.

Reads the header's metadata (GGUF v2 / v3, little-endian) without loading any tensor:
`<arch>.context_length` is the context the model was trained with, and the attention
shape (`block_count`, `attention.head_count_kv`, the key and value lengths) gives the
bytes llama.cpp's f16 KV cache holds per token, from which the local server's context
is sized to the memory it may take (memrl_bench.llm.local_server.context_size).

No length in the header is trusted before it is checked against the bytes left in the
file: a string, an array or a count of entries that could not fit is a damaged header
(GGUFError naming the file), never a read of 2^40 bytes or a loop over 2^62 values.
`check_file` also reads the tensor table and checks that every tensor's data lies inside
the file, so a truncated model is refused before a server is started on it.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from memrl_bench.core.config import InputError

_MAGIC = b"GGUF"
# value type -> struct format of its fixed-size scalar (8: string, 9: array are read apart)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
# the fewest bytes an entry takes: a bound on how many of them the bytes left can hold
_MIN_ENTRY_BYTES = 8 + 4 + 1  # a key-value entry: key length, value type, the smallest value (a u8)
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8  # name length, dimensions, type, offset
DEFAULT_ALIGNMENT = 32  # of the tensor data, unless general.alignment says otherwise
MAX_ARRAY_NESTING = 8  # arrays of arrays in a header (the vocabulary is one level)
# ggml type -> (values per block, bytes per block), as gguf-py's GGML_QUANT_SIZES; other types: only their offset is checked
_BLOCKS = {
    0: (1, 4),
    1: (1, 2),
    2: (32, 18),
    3: (32, 20),
    6: (32, 22),
    7: (32, 24),
    8: (32, 34),
    9: (32, 40),
    10: (256, 84),
    11: (256, 110),
    12: (256, 144),
    13: (256, 176),
    14: (256, 210),
    15: (256, 292),
    16: (256, 66),
    17: (256, 74),
    18: (256, 98),
    19: (256, 50),
    20: (32, 18),
    21: (256, 110),
    22: (256, 82),
    23: (256, 136),
    24: (1, 1),
    25: (1, 2),
    26: (1, 4),
    27: (1, 8),
    28: (1, 8),
    29: (256, 56),
    30: (1, 2),
    34: (256, 54),
    35: (256, 66),
}
KV_CACHE_BYTES_PER_VALUE = 2  # llama.cpp's default KV cache type is f16


class GGUFError(InputError, ValueError):
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

        def count(name: str, default: int | None = None) -> int:
            """A shape value: a whole number >= 1 (an f32 infinity or a zero head count ended the run in a traceback)."""
            value = metadata.get(f"{arch}.{name}", default)
            if type(value) is not int or value < 1:
                shape = f"the context or attention shape of architecture {arch!r}"
                raise GGUFError(f"{path}: the GGUF metadata lacks {shape} ({name}: {value!r})")
            return value

        layers, heads, context = count("block_count"), count("attention.head_count"), count("context_length")
        kv_heads = count("attention.head_count_kv", heads)
        head_dim = count("embedding_length") // heads
        key_length, value_length = count("attention.key_length", head_dim), count("attention.value_length", head_dim)
        return cls(str(arch), context, layers * kv_heads * (key_length + value_length) * KV_CACHE_BYTES_PER_VALUE)


class _Reader:
    """Reads a GGUF header, each length checked against the bytes left in the file."""

    def __init__(self, f: BinaryIO, size: int):
        self.f, self.size = f, size

    def left(self) -> int:
        return self.size - self.f.tell()

    def read(self, n: int) -> bytes:
        if n > self.left():
            raise EOFError(f"a length of {n} bytes at byte {self.f.tell()} runs past the end of the file ({self.size} bytes)")
        return self.f.read(n)

    def unpack(self, fmt: str) -> Any:
        values = struct.unpack(fmt, self.read(struct.calcsize(fmt)))
        return values[0] if len(values) == 1 else values

    def count(self, n: int, each_bytes: int, what: str) -> int:
        """`n` items of at least `each_bytes` each, if the rest of the file can hold them."""
        if n * each_bytes > self.left():
            raise EOFError(f"{n} {what} at byte {self.f.tell()} cannot fit in the {self.left()} bytes left")
        return n

    def string(self) -> str:
        return self.read(self.unpack("<Q")).decode()

    def value(self, kind: int, depth: int = 0) -> Any:
        if depth > MAX_ARRAY_NESTING:  # 5,000 nested arrays ended the run in a RecursionError
            raise GGUFError(f"arrays nested deeper than {MAX_ARRAY_NESTING} at byte {self.f.tell()}")
        if kind in _SCALARS:
            return self.unpack(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item_kind, length = self.unpack("<IQ")
            if item_kind in _SCALARS:
                width = struct.calcsize(_SCALARS[item_kind])
                self.skip(self.count(length, width, "array values") * width)
            else:  # strings (the tokenizer's vocabulary) or nested arrays: read past them one by one
                for _ in range(self.count(length, 8, "array values")):
                    self.value(item_kind, depth + 1)
            return length
        raise GGUFError(f"unknown GGUF value type {kind}")

    def skip(self, n: int) -> None:
        if n > self.left():
            raise EOFError(f"{n} bytes at byte {self.f.tell()} run past the end of the file ({self.size} bytes)")
        self.f.seek(n, os.SEEK_CUR)


def _open(path: str | Path) -> tuple[BinaryIO, int]:
    file = Path(path)
    if file.is_dir():
        raise GGUFError(f"{path} is a folder, not a GGUF model file")
    try:
        f = open(file, "rb")  # noqa: SIM115 - closed by the caller's with
    except OSError as err:
        raise GGUFError(f"{path}: cannot read the model file ({err.strerror or err})") from None
    return f, os.fstat(f.fileno()).st_size


def _header(reader: _Reader, path: str | Path) -> tuple[int, dict[str, Any]]:
    """(the number of tensors, the key-value metadata) of an open GGUF file."""
    if reader.f.read(4) != _MAGIC:
        raise GGUFError(f"{path} is not a GGUF file (no GGUF magic number)")
    version, tensors, count = reader.unpack("<IQQ")
    if version < 2:
        raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
    metadata = {
        reader.string(): reader.value(reader.unpack("<I")) for _ in range(reader.count(count, _MIN_ENTRY_BYTES, "metadata entries"))
    }
    return reader.count(tensors, _MIN_TENSOR_INFO_BYTES, "tensor descriptions"), metadata


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The header's key-value metadata; arrays are skipped (their value is their length)."""
    f, size = _open(path)
    with _reading(path), f:
        return _header(_Reader(f, size), path)[1]


@contextlib.contextmanager
def _reading(path: str | Path) -> Iterator[None]:
    """GGUFError naming `path` for what reading it raises: a damaged header, or a read that fails (EIO; /proc/self/mem
    ended a run in a traceback: the thirty-sixth round)."""
    try:
        yield
    except (struct.error, UnicodeDecodeError, EOFError) as err:
        raise GGUFError(f"{path}: the GGUF header is damaged ({err})") from None
    except OSError as err:
        raise GGUFError(f"{path}: cannot read the model file ({err.strerror or err})") from None


def check_file(path: str | Path) -> None:
    """GGUFError naming the file unless it is a whole GGUF model: a readable header and every
    tensor's data (by its type's block size, or at least its offset) inside the file."""
    f, size = _open(path)
    with _reading(path), f:
        reader = _Reader(f, size)
        tensors, metadata = _header(reader, path)
        extents = []
        for _ in range(tensors):
            name = reader.string()
            dims = reader.unpack("<I")
            shape = [reader.unpack("<Q") for _ in range(reader.count(dims, 8, "tensor dimensions"))]
            kind, offset = reader.unpack("<IQ")
            values = 1
            for n in shape:
                values *= n
            per_block, block_bytes = _BLOCKS.get(kind, (1, 0))
            extents.append((name, offset + -(-values // per_block) * block_bytes))
        alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if type(alignment) is not int or alignment < 1:  # a u32 (a string or an f32 infinity ended in a traceback)
            raise GGUFError(f"{path}: general.alignment must be a whole number >= 1, got {alignment!r}"[:300])
        data_start = -(-f.tell() // alignment) * alignment
    for name, end in extents:
        if data_start + end > size:
            raise GGUFError(f"{path} is truncated: tensor {name!r} ends at byte {data_start + end}, the file has {size} bytes")
