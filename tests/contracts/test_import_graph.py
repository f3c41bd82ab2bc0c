"""The import rule (ARCHITECTURE.md): imports run one way, from the front (CLI, study,
report, findings) to the runner to the parts (methods, envs, LLM) to the records and
rules at the bottom, and nothing imports in a circle.

Every import statement of the package counts, inside functions and under TYPE_CHECKING
too: an import deferred to dodge a cycle is still the cycle. Imports by name at run time
(memrl_bench.core.registry) are how the layers below are meant to be reached and do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "memrl_bench"

# The folders are the layers: each top-level folder of the package is one layer, and a module
# may import from its own layer or the layers below. The package root (the public API,
# memrl_bench/__init__.py, and `python -m memrl_bench`) sits above them all.
RULES, PARTS, RUNNER, FRONT, API = 0, 1, 2, 3, 4
LAYERS = {
    "memrl_bench.core": RULES,
    "memrl_bench.prompts": RULES,  # the prompt templates (text files) and their loader
    "memrl_bench.actors": PARTS,
    "memrl_bench.envs": PARTS,
    "memrl_bench.llm": PARTS,
    "memrl_bench.methods": PARTS,
    "memrl_bench.protocols": PARTS,
    "memrl_bench.runner": RUNNER,
    "memrl_bench.cli": FRONT,
    "memrl_bench.findings": FRONT,
    "memrl_bench.report": FRONT,
    "memrl_bench": API,
    "memrl_bench.__main__": API,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_graph() -> dict[str, set[str]]:
    """Module -> the package modules its import statements name."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from a import b` names the module a.b when there is one, else a
                targets |= {
                    f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in files else node.module for alias in node.names
                }
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def layer(module: str, layers: dict[str, int]) -> int:
    """The layer of the longest listed prefix of `module`."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in layers:
            return layers[".".join(parts[:end])]
    raise KeyError(module)


def upward_imports(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    return sorted(
        f"{a} (layer {layer(a, layers)}) imports {b} (layer {layer(b, layers)})"
        for a, targets in graph.items()
        for b in targets
        if layer(b, layers) > layer(a, layers)
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_lives_in_a_layer_folder():
    """No module sits loose at the package root (but the API and __main__): its folder says its layer."""
    loose = [m for m in package_graph() if m.count(".") == 1 and m not in LAYERS]
    assert not loose, (
        f"move these modules into the folder of their layer (ARCHITECTURE.md), or give a new folder a layer in LAYERS: {loose}"
    )


def test_imports_run_one_way():
    assert upward_imports(package_graph(), LAYERS) == []


def test_no_module_imports_itself_through_others():
    assert cycles(package_graph()) == []


@pytest.mark.parametrize(
    "graph, upward, circular",
    [
        (
            {"memrl_bench.core.config": {"memrl_bench.runner.loop"}, "memrl_bench.runner.loop": set()},
            ["memrl_bench.core.config (layer 0) imports memrl_bench.runner.loop (layer 2)"],
            [],
        ),
        (
            {"memrl_bench.cli.main": {"memrl_bench.cli.study"}, "memrl_bench.cli.study": {"memrl_bench.cli.main"}},
            [],
            [["memrl_bench.cli.main", "memrl_bench.cli.study"]],
        ),
        (
            {"memrl_bench.actors.base": {"memrl_bench.envs.base"}, "memrl_bench.envs.base": {"memrl_bench.actors.base"}},
            [],
            [["memrl_bench.actors.base", "memrl_bench.envs.base"]],
        ),
    ],
)
def test_the_checks_find_what_they_look_for(graph, upward, circular):
    assert upward_imports(graph, LAYERS) == upward
    assert cycles(graph) == circular
