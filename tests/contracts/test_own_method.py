"""The README's "Evaluate your own memory method", run as written from a folder outside the
repository: its files are written from the section's code blocks (each opening with
`# <path>`), its bash blocks run in bash, in order, from that folder.

The package is installed beside memrl-bench without touching the project's environment:
`pip install -e .` runs as `pip install --no-deps --target <tmp>/site .` (the package alone;
pip builds it in an isolated environment with setuptools from the package index, as for any
install: the only thing fetched, and CI is offline but for the package registries), and every
command runs with <tmp>/site on PYTHONPATH, where Python finds the package's entry points in
its dist-info. `python`, `memrl-bench` and `memrl-bench-report` are this interpreter on this
source tree; run in the package's folder, they import the package from there, as after
`pip install -e .`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Evaluate your own memory method"


def section() -> str:
    return (ROOT / "README.md").read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), re.S)


def files() -> dict[str, str]:
    """path -> text of every code block whose first line is `# <path>`."""
    found = {}
    for language in ("python", "yaml", "toml"):
        for block in blocks(language):
            path = re.fullmatch(r"# (\S+\.\w+)", block.splitlines()[0])
            if path:
                found[path[1]] = block
    return found


def shims(folder: Path, site: Path) -> Path:
    """Commands as the README names them, running this interpreter; pip only as `pip install -e .`."""
    python = sys.executable
    commands = {
        "python": f'exec "{python}" "$@"',
        "memrl-bench": f'exec "{python}" -m memrl_bench "$@"',
        "memrl-bench-report": f'exec "{python}" -m memrl_bench.report "$@"',
        "pip": (
            f'[ "$*" = "install -e ." ] || {{ echo "pip: only pip install -e . runs here" >&2; exit 1; }}\nexec "{python}" -m pip install '
            f'-q --no-deps --target "{site}" .'
        ),
    }
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for name, body in commands.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def package_files() -> dict[str, int]:
    """memrl-bench's own files (not caches) and when each last changed."""
    return {str(p): p.stat().st_mtime_ns for p in (ROOT / "memrl_bench").rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def environment(bin_dir: Path, site: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": f"{site}:{ROOT}"}


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """The folder the walk-through ran in, its project folder, its site and the commands' output."""
    before = package_files()
    folder = tmp_path_factory.mktemp("own_method")
    site = folder / "site"
    project = folder / re.search(r"\bcd (\S+)", blocks("bash")[0])[1]
    for path, text in files().items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text)
    bin_dir = shims(folder, site)
    done = subprocess.run(
        ["bash", "-e", "-c", "\n".join(blocks("bash"))],
        cwd=folder,
        env=environment(bin_dir, site),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert package_files() == before  # no file of memrl-bench written
    return folder, project, site, done.stdout


def test_the_readme_walk_through_installs_checks_sweeps_and_reports_a_method_of_ones_own(walked):
    folder, project, site, output = walked
    assert (site / "my_memory" / "conf" / "method" / "last_k.yaml").exists() and list(
        site.glob("my_memory-0.1.0.dist-info/entry_points.txt")
    )
    assert (
        "method last_k keeps its contract (check_interface, check_retrieval_changes_no_state, check_learn_replays, "
        "check_snapshot_restores, check_items)" in output
    )
    runs = {p.name: p for p in (project / "results" / "mine").iterdir() if p.is_dir() and p.name != "report"}
    assert set(runs) == {"method=none,env=synthetic,protocol.epochs=1", "method=last_k,env=synthetic,protocol.epochs=1"}
    assert all((run / "COMPLETE").exists() for run in runs.values())
    manifest = json.loads((runs["method=last_k,env=synthetic,protocol.epochs=1"] / "manifest.json").read_text())
    assert manifest["config"]["method"] == {"name": "last_k", "k": 3}  # the settings of the package's own YAML
    report = project / "results" / "mine" / "report"
    variants = [row.split(" | ")[2] for row in (report / "tables" / "runs.md").read_text().splitlines() if row.startswith("| method=")]
    assert sorted(variants) == ["last_k", "none"] and "last_k" in (report / "report.html").read_text()


def test_a_method_breaking_its_contract_fails_the_check_with_the_promised_line(walked):
    folder, project, site, _ = walked
    (promised,) = blocks("text")
    broken = folder / "broken"  # the package's folder, edited as the README supposes; run there, it is the package imported
    shutil.copytree(project, broken, ignore=shutil.ignore_patterns("results"))
    source = broken / "my_memory" / "last_k.py"
    retrieve = "    def retrieve(self, query: Query) -> Retrieval:  # changes no state: the contract checks it\n"
    assert retrieve in source.read_text()
    source.write_text(source.read_text().replace(retrieve, retrieve + "        self.last_query = query\n"))
    done = subprocess.run(
        [sys.executable, "-m", "memrl_bench.cli.contracts", "method", "last_k"],
        cwd=broken,
        env=environment(folder / "bin", site),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and done.stderr == promised


def test_the_method_runs_named_as_module_and_class_without_its_yaml(walked):
    folder, project, site, _ = walked
    (command,) = re.findall(r"`(memrl-bench method=none method\.name=\S+)`", section())
    assert "+method.k=5" in section()
    arguments = [*command.split()[1:], "+method.k=5", "protocol.epochs=1", "experiment_name=direct"]
    done = subprocess.run(
        [sys.executable, "-m", "memrl_bench", *arguments],
        cwd=project,
        env=environment(folder / "bin", site),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = (project / "results" / "direct").iterdir()
    assert (run / "COMPLETE").exists()
    assert json.loads((run / "manifest.json").read_text())["config"]["method"] == {"name": "my_memory.last_k:LastKSuccesses", "k": 5}
