"""The rules that keep the BigCodeBench runner's verdict out of the program's reach, checked on its source.

The program shares the runner's process: whatever a runner function looks up when it runs (a global, a builtin, a
module attribute, a closure cell) the program can rebind first. Rebinding `types.FunctionType` once blinded the audit
hook's guard of `__defaults__`, and a wrong answer passed (2026-12-05).
"""

from __future__ import annotations

import ast
import dis
import inspect
import types
from pathlib import Path

from memrl_bench.envs.bigcodebench import RUNNER_CANNOT_REPORT

RUNNER = Path(__file__).resolve().parents[2] / "memrl_bench" / "envs" / "bigcodebench_runner.py"
COMPREHENSIONS = {"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"}
LOOKUPS = {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_CLASSDEREF"}


def runner_function_codes() -> list[types.CodeType]:
    """Every function and lambda defined inside `_memrl_runner` (at any depth, class bodies passed through), with the
    comprehensions inside them: what may run once the program does."""
    script = compile(RUNNER.read_text(), str(RUNNER), "exec")
    prepare = next(code for code in script.co_consts if getattr(code, "co_name", "") == "_memrl_runner")
    found: list[types.CodeType] = []

    def walk(code: types.CodeType, inside_a_function: bool) -> None:
        for constant in code.co_consts:
            if not isinstance(constant, types.CodeType):
                continue
            class_body = not constant.co_flags & inspect.CO_OPTIMIZED
            function = not class_body and constant.co_name not in COMPREHENSIONS
            if not class_body and (inside_a_function or function):
                found.append(constant)
            walk(constant, (inside_a_function or function) and not class_body)

    walk(prepare, False)
    return found


def test_no_runner_function_looks_up_a_global_a_builtin_or_a_closure_when_it_runs():
    codes = runner_function_codes()
    assert len(codes) > 40 and {"report", "flag", "outcome", "from_the_entry", "audit", "look", "run", "finish"} <= {
        c.co_name for c in codes
    }
    offenders = {
        code.co_qualname: sorted({i.argval for i in dis.get_instructions(code) if i.opname in LOOKUPS})
        + [f"free: {name}" for name in (code.co_freevars if code.co_name not in COMPREHENSIONS else ())]
        for code in codes
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_tag_and_report_are_held_by_the_emitters_alone():
    tree = ast.parse(RUNNER.read_text())
    holders: dict[str, set[str]] = {"tag": set(), "report": set()}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
                for name in (n.id for n in ast.walk(default) if isinstance(n, ast.Name)):
                    if name in holders:
                        holders[name].add(node.name)
    emitters = {"flag", "failed", "part_run", "part_ended", "outcome", "from_the_entry", "ready"}
    assert holders == {"tag": {"report"}, "report": emitters}
    # the positive lines (start, good, stop by `outcome`, end, result) are signed by the three emitters that check their callers
    writers = {
        node.name: {
            c.args[0].value
            for c in ast.walk(node)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "_report" and isinstance(c.args[0], ast.Constant)
        }
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name in holders["report"]
    }
    assert writers == {
        "flag": {b"tampering"},
        "failed": {b"bad"},
        "part_run": {b"part"},
        "part_ended": {b"end"},
        "outcome": set(),
        "from_the_entry": {b"result"},
        "ready": {b"ready"},  # the first line, before the program runs: called again later, it says nothing
    }


def test_the_emitters_keep_the_collector_off_and_let_no_exception_out():
    """48a: a collection an emitter's allocation started ran the program's __del__ in the emitter's frame, which holds
    `report`. Each emitter's first two statements switch the collector off (no allocation before them), and its `finally`
    switches it back on."""
    tree = ast.parse(RUNNER.read_text())
    emitters = {"flag", "failed", "part_run", "part_ended", "outcome", "from_the_entry", "ready"}
    seen = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in emitters:
            body = node.body[1:] if ast.get_docstring(node) else node.body
            assert [ast.unparse(statement) for statement in body[:2]] == ["on = _collector[0]()", "_collector[1]()"], node.name
            assert len(body) == 3 and isinstance(body[2], ast.Try), node.name
            assert ast.unparse(body[2].finalbody[0]) == "if on:\n    _collector[2]()", node.name
            # 49a: nor does an exception leave one (its traceback holds the frame): the process ends, saying so
            assert [ast.unparse(handler) for handler in body[2].handlers] == ["except _c.BaseException:\n    _leave(_cannot_report)"], (
                node.name
            )
            seen.add(node.name)
    assert seen == emitters
    constant = next(n for n in ast.walk(tree) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "CANNOT_REPORT")
    assert ast.literal_eval(constant.value) == RUNNER_CANNOT_REPORT  # what the harness reads as `breaks_the_report`
