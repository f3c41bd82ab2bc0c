"""The memrl-bench command: runs, sweeps into folders named from overrides, and clear errors."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["env.tasks.train=24", "env.tasks.validation=8", "env.tasks.test_in_distribution=8", "env.tasks.test_out_of_distribution=8", "protocol.epochs=2", "protocol.batch_size=8"]


def memrl_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memrl_bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_run_prints_its_table_and_writes_a_complete_folder(tmp_path):
    out = memrl_bench(f"results_dir={tmp_path}", *SMALL)
    assert out.returncode == 0, out.stderr
    assert "SR" in out.stdout and "synthetic" in out.stdout
    (folder,) = (tmp_path / "default").iterdir()
    assert "env.tasks.train=24" in folder.name and "protocol.epochs=2" in folder.name
    for name in ("manifest.json", "episodes.jsonl", "metrics.json", "COMPLETE", ".hydra/config.yaml", "memory/epoch_1/items.jsonl", "memory/final/items.jsonl"):
        assert (folder / name).exists(), name


def test_a_sweep_lands_in_folders_named_from_overrides_and_reruns_resume(tmp_path):
    args = ["-m", f"results_dir={tmp_path}", "experiment_name=sweep", "method=none,memrl", "seed=0,1", *SMALL[:4], "protocol.epochs=1"]
    assert memrl_bench(*args).returncode == 0
    names = sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert len(names) == 4 and any("method=none" in n and "seed=1" in n for n in names)
    again = memrl_bench(*args)
    assert again.returncode == 0 and again.stdout.count("is complete; nothing to do") == 4


@pytest.mark.parametrize(
    "override, message",
    [
        ("method=memrll", "memrll"),
        ("env=nope", "nope"),
        ("method.epsilon=-0.5", "method.epsilon"),
        ("protocol.batch_size=0", "protocol.batch_size"),
        ("method.k_select=zero", "method.k_select"),
        ("protocol.epochs=-1", "protocol.epochs"),
        ("env.n_types=0", "env.n_types"),
        ("+env.colour=blue", "env.colour"),
        ("+method.alpah=0.3", "method.alpah"),
        ("llm.finetuned_on=synthetic", "llm.finetuned_on"),
        ("env.roles.test=[nosuchsplit]", "nosuchsplit"),
        ("+sed=3", "'sed'"),
        ("seed=abc", "seed"),
        ("protocol.eval_samples=0", "protocol.eval_samples"),
        ("protocol.poison_share=1.5", "protocol.poison_share"),
        ("method=rag", None),
        ("protocol=nosuch", "nosuch"),
    ],
)
def test_bad_input_gets_one_clear_error_and_leaves_no_run_folder(tmp_path, override, message):
    if message is None:  # a valid override, as a control: the others fail for their value only
        assert memrl_bench(f"results_dir={tmp_path}", *SMALL, override).returncode == 0
        return
    out = memrl_bench(f"results_dir={tmp_path}", *SMALL, override)
    assert out.returncode != 0
    assert message in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not list(tmp_path.rglob("episodes.jsonl")) and not list(tmp_path.rglob("manifest.json"))


def test_malformed_yaml_in_a_config_dir_names_the_file(tmp_path):
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "broken.yaml").write_text("# @package _global_\nprotocol: {epochs: [1, 2\n")
    out = memrl_bench(f"results_dir={tmp_path}", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "+experiment=broken")
    assert out.returncode != 0 and "broken" in out.stderr


def test_a_corrupt_log_line_is_refused_with_its_line_number(tmp_path):
    assert memrl_bench(f"results_dir={tmp_path}", *SMALL).returncode == 0
    (folder,) = (tmp_path / "default").iterdir()
    (folder / "COMPLETE").unlink()
    lines = (folder / "episodes.jsonl").read_text().splitlines(keepends=True)
    lines[3] = "{not json\n"
    (folder / "episodes.jsonl").write_text("".join(lines))
    out = memrl_bench(f"results_dir={tmp_path}", *SMALL)
    assert out.returncode == 2 and "line 4 is not valid JSON" in out.stderr


def test_a_corrupt_manifest_is_refused(tmp_path):
    assert memrl_bench(f"results_dir={tmp_path}", *SMALL).returncode == 0
    (folder,) = (tmp_path / "default").iterdir()
    (folder / "manifest.json").write_text('{"config_hash": ')
    out = memrl_bench(f"results_dir={tmp_path}", *SMALL)
    assert out.returncode == 2 and "manifest.json is not valid JSON" in out.stderr


def test_help_describes_the_harness_and_its_examples_compose():
    """--help has a description, the config groups and examples; each example composes (--cfg job)."""
    out = memrl_bench("--help")
    assert out.returncode == 0, out.stderr
    assert "powered by Hydra" not in out.stdout and "fair protocol" in out.stdout
    assert "method: " in out.stdout and "env: " in out.stdout
    examples = [line.split("#")[0].split() for line in out.stdout.splitlines() if line.strip().startswith("memrl-bench ")]
    examples = [words[1:] for words in examples if "<overrides>" not in words]
    assert len(examples) >= 5
    for args in examples:
        # --cfg does not combine with -m: a sweep is checked on its first value of each key
        args = [a.split(",")[0] for a in args if a != "-m"]
        composed_job = memrl_bench(*args, "--cfg", "job")
        assert composed_job.returncode == 0, f"{args}: {composed_job.stderr[-2000:]}"
