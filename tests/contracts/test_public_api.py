"""The package root is the public API: every name of `__all__` resolves, and importing the package
loads nothing heavy (each name is imported on first use)."""

from __future__ import annotations

import subprocess
import sys

import memrl_bench


def test_all_names_the_api_table_and_every_name_resolves():
    assert set(memrl_bench.__all__) == {"__version__", *memrl_bench._API}
    for name in memrl_bench.__all__:
        assert getattr(memrl_bench, name) is not None, name
    assert memrl_bench.read_run.__module__ == "memrl_bench.core.records"
    assert issubclass(memrl_bench.MemoryMethod, object) and memrl_bench.claim.__module__ == "memrl_bench.findings.claim"


def test_an_unknown_name_is_an_attribute_error():
    try:
        memrl_bench.no_such_thing  # noqa: B018
    except AttributeError as err:
        assert "no_such_thing" in str(err)
    else:
        raise AssertionError("no AttributeError")


def test_importing_the_package_loads_neither_pandas_nor_hydra():
    code = "import sys, memrl_bench; print(sorted(m for m in ('pandas', 'hydra', 'numpy', 'pydantic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
