"""The README's families study command, run as written (results_dir aside), gives the README's synthetic verdicts:
the study is deterministic, so every interval the README quotes comes back to the last digit."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
COMMAND = "memrl-bench +experiment=families_study"


def test_the_families_study_gives_the_readmes_synthetic_verdicts(tmp_path):
    readme = README.read_text()
    assert f"\n{COMMAND}   # 48 runs" in readme
    args = [*COMMAND.split()[1:], f"results_dir={tmp_path}", "progress=false"]
    subprocess.run([sys.executable, "-m", "memrl_bench", *args], check=True, capture_output=True, text=True, timeout=900)
    findings = (tmp_path / "families" / "findings.md").read_text()
    assert "SYNTHETIC (simulation, not LLM results)" in findings
    for cell in ("0.133 [0.033, 0.233] (n=20)", "0.042 [-0.038, 0.121] (n=20)", "0.028 [-0.039, 0.095] (n=6)"):
        assert cell in findings and cell in readme, cell
    assert "**Verdict: supported.**" in findings.split("Step-level retrieval (SLEA-RL")[1].split("###")[0]
