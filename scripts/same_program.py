"""Are two trees of Python files the same program? A formatting change must be one.

    python scripts/same_program.py OLD_TREE NEW_TREE

Compares the AST of every .py file of the first tree with the second's; docstrings are compared
with their whitespace collapsed (a formatter may re-wrap them). Exit 1 if any file differs.
"""

import ast
import sys
from pathlib import Path


def normal(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                first.value.value = " ".join(first.value.value.split())
    return ast.dump(tree, include_attributes=False)


old, new = Path(sys.argv[1]), Path(sys.argv[2])
diff = 0
files = sorted(p.relative_to(old) for p in old.rglob("*.py") if ".venv" not in p.parts and "build" not in p.parts)
for rel in files:
    a, b = old / rel, new / rel
    if not b.exists():
        print("missing", rel)
        diff += 1
        continue
    if normal(ast.parse(a.read_text())) != normal(ast.parse(b.read_text())):
        print("differs", rel)
        diff += 1
print(f"{len(files)} files, {diff} differ")
sys.exit(1 if diff else 0)
