"""The import rule (ARCHITECTURE.md): imports run one way, from the front (CLI, study,
report, findings) to the runner to the parts (methods, envs, LLM) to the records and
rules at the bottom, and nothing imports in a circle.

Every import statement of the package counts, inside functions and under TYPE_CHECKING
too: an import deferred to dodge a cycle is still the cycle. Imports by name at run time
(memrl_bench.registry) are how the layers below are meant to be reached and do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memrl_bench"

# Layer of every module, by dotted name or package prefix; higher layers may import lower ones.
RULES, PARTS, RUNNER, FRONT = 0, 1, 2, 3
LAYERS = {
    "memrl_bench": RULES,  # the package itself: CONF_DIR
    "memrl_bench.schema": RULES,
    "memrl_bench.redaction": RULES,
    "memrl_bench.markup": RULES,
    "memrl_bench.config": RULES,
    "memrl_bench.stats": RULES,
    "memrl_bench.records": RULES,
    "memrl_bench.transcripts": RULES,
    "memrl_bench.interrupts": RULES,
    "memrl_bench.export": RULES,
    "memrl_bench.runfolder": RULES,
    "memrl_bench.metrics": RULES,
    "memrl_bench.prompts": RULES,
    "memrl_bench.vector_index": RULES,
    "memrl_bench.envs": PARTS,
    "memrl_bench.methods": PARTS,
    "memrl_bench.protocols": PARTS,
    "memrl_bench.llm": PARTS,
    "memrl_bench.actors": PARTS,
    "memrl_bench.agent": PARTS,
    "memrl_bench.embed": PARTS,
    "memrl_bench.sandbox": PARTS,
    "memrl_bench.memrl_alfworld": PARTS,
    "memrl_bench.models": PARTS,
    "memrl_bench.registry": PARTS,
    "memrl_bench.runner": RUNNER,
    "memrl_bench.progress": RUNNER,
    "memrl_bench.cli": FRONT,
    "memrl_bench.__main__": FRONT,
    "memrl_bench.study": FRONT,
    "memrl_bench.findings": FRONT,
    "memrl_bench.sensitivity": FRONT,
    "memrl_bench.report": FRONT,
    "memrl_bench.summary": FRONT,
    "memrl_bench.hydra_support": FRONT,
    "memrl_bench.contracts": FRONT,
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
                targets |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in files else node.module for alias in node.names}
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
    return sorted(f"{a} (layer {layer(a, layers)}) imports {b} (layer {layer(b, layers)})" for a, targets in graph.items() for b in targets if layer(b, layers) > layer(a, layers))


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


def test_every_module_has_a_layer():
    unplaced = [m for m in package_graph() if not any(m == p or m.startswith(p + ".") for p in LAYERS)]
    assert not unplaced, f"give these modules a layer in LAYERS (and ARCHITECTURE.md): {unplaced}"


def test_imports_run_one_way():
    assert upward_imports(package_graph(), LAYERS) == []


def test_no_module_imports_itself_through_others():
    assert cycles(package_graph()) == []


@pytest.mark.parametrize(
    "graph, upward, circular",
    [
        ({"memrl_bench.config": {"memrl_bench.runner"}, "memrl_bench.runner": set()}, ["memrl_bench.config (layer 0) imports memrl_bench.runner (layer 2)"], []),
        ({"memrl_bench.cli": {"memrl_bench.study"}, "memrl_bench.study": {"memrl_bench.cli"}}, [], [["memrl_bench.cli", "memrl_bench.study"]]),
        ({"memrl_bench.actors": {"memrl_bench.envs.base"}, "memrl_bench.envs.base": {"memrl_bench.actors"}}, [], [["memrl_bench.actors", "memrl_bench.envs.base"]]),
    ],
)
def test_the_checks_find_what_they_look_for(graph, upward, circular):
    assert upward_imports(graph, LAYERS) == upward
    assert cycles(graph) == circular
