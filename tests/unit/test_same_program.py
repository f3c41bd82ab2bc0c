"""scripts/same_program.py tells a reformatting (the same program) from a change."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "same_program.py"


def compare(tmp_path: Path, old: str, new: str) -> subprocess.CompletedProcess:
    for name, text in (("old", old), ("new", new)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.py").write_text(text)
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "old"), str(tmp_path / "new")], capture_output=True, text=True)


def test_a_split_string_and_a_rewrapped_docstring_are_the_same_program(tmp_path):
    old = 'def f(x):\n    """One line of text."""\n    return f"a {x} b" + "cd"\n'
    new = 'def f(x):\n    """One line\n    of text."""\n    return (\n        f"a {x} "\n        "b"\n    ) + "cd"\n'
    done = compare(tmp_path, old, new)
    assert done.returncode == 0 and "1 files, 0 differ" in done.stdout


def test_a_changed_string_is_not(tmp_path):
    done = compare(tmp_path, 'x = "a b"\n', 'x = "a  b"\n')
    assert done.returncode == 1 and "differs m.py" in done.stdout
