"""BigCodeBench (MemRL's "bcb" tasks): write one Python function; the task's unittests decide.

Single turn. The prompt is the task's instruct prompt (config `prompt: complete` for the
docstring-completion form); the answer is code. The solution run is the completion when it defines
the entry point (`def task_func(`), else the task's code_prompt followed by the completion (a
function body). The program is the solution, then the code prompt's imports and the task's tests:
no marker, no runner. A trusted runner (envs/bigcodebench_runner.py, given to Python with -c) imports it and writes each
test's outcome as it happens, every line signed with a fresh secret that only the runner was
given; success needs those lines to show each test this module finds in the task's test code
started once, run and ended well, and the runner's last line. A solution shares the process with
the tests, so tampering is also looked for (the patterns of `tampering_patterns` in the
completion; replaced test machinery, memory scans, frame inspection, C reached through ctypes, an
exit before the report, other tests run than written, in the run): such an episode ends with
status "tampered" and scores 0. The runner is given the task's libraries: ctypes is not loaded at
all for a task whose libraries are all standard. It runs in `memrl_bench.envs.sandbox.CodeRunner`:
by default a fresh sandbox per program (time limit, memory and process caps, no network, own
folder, nothing written to the host).

Subsets: `stdlib` (the 327 tasks whose libs are all standard library), `hard` (MemRL's hard
split file, 148 tasks), `full` (1140). Splits come from MemRL's split files
(full_seed123.json for full and stdlib, hard_seed42.json for hard): train = train_ids;
val_ids are split into validation / test by a fixed hash of the task id. Tasks whose
canonical solution fails here (a package the tests import is missing, the time limit) are
excluded; that is checked once per task and cached under
${MEMRL_BENCH_CACHE:-~/.cache/memrl-bench}/bigcodebench/.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import hmac
import importlib.metadata
import json
import re
import secrets
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from memrl_bench import prompts
from memrl_bench.core.config import MAX_SECONDS
from memrl_bench.core.schema import Task
from memrl_bench.envs.base import (
    DataFileError,
    DataMissingError,
    DataRecord,
    Env,
    EnvBrokenError,
    data_bytes,
    data_dir,
    hash_fraction,
    read_data_file,
)
from memrl_bench.envs.gold import GoldFilter, gold_failure
from memrl_bench.envs.sandbox import DEFAULT_HIDDEN_PATHS, CodeRunner, Limits
from memrl_bench.envs.settings import SandboxLimits

_FETCH = "python scripts/fetch_data.py bigcodebench"
_DATA_FILE = "BigCodeBench.jsonl.gz"
_SPLIT_FILES = {"full": "full_seed123.json", "stdlib": "full_seed123.json", "hard": "hard_seed42.json"}


_RUNNER = Path(__file__).with_name("bigcodebench_runner.py").read_text()
RUNNER_CANNOT_REPORT = 86  # the runner's exit when an emitter failed (its CANNOT_REPORT): the program broke the report


class BigCodeBenchRecord(DataRecord):
    """One line of BigCodeBench.jsonl.gz."""

    task_id: str
    code_prompt: str
    canonical_solution: str
    test: str
    entry_point: str
    instruct_prompt: str
    complete_prompt: str
    libs: str  # a Python list of module names, as text

    @field_validator("libs")
    @classmethod
    def _module_list(cls, libs: str) -> str:
        try:
            names = ast.literal_eval(libs)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            names = None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"must be a Python list of module names, got {libs[:60]!r}")
        return libs


class BigCodeBenchSplits(DataRecord):
    """MemRL's split file (full_seed123.json, hard_seed42.json)."""

    train_ids: list[str]
    val_ids: list[str]


def is_stdlib_only(libs: list[str]) -> bool:
    return all(lib.split(".")[0] in sys.stdlib_module_names for lib in libs)


def prompt_imports(code_prompt: str) -> str:
    """The code prompt's import lines. The tests use the names they bind without importing them (BigCodeBench's harness
    runs prompt, solution and tests as one module): run again at the top of the tests' part, so those names are the
    import system's modules, not what the answer bound them to (views or stand-ins whose asserts do nothing: 30th round)."""
    return "".join(line + "\n" for line in code_prompt.split("\n") if re.match(r"(import |from \S+ import )", line))


def prompt_constants(code_prompt: str) -> str:
    """The code prompt's constants (a name bound at its top level to a literal), run again in the tests' part after its
    imports: the tests read them as the task defines them, not as the answer left them (`KEYS = []` made a test's loop
    over the task's keys check nothing: 44a). A class the prompt defines is still the answer's: a fresh one would not be
    the class the answer's objects are made of."""
    tree = _syntax(code_prompt + "    pass\n")  # the prompt ends at `def task_func(...):`, its body to come
    kept = []
    for node in tree.body if tree is not None else []:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if value is None:
            continue
        try:
            ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        kept.append(ast.get_source_segment(code_prompt, node) + "\n")
    return "".join(kept)


def solution_code(completion: str, code_prompt: str, entry_point: str) -> str:
    """The completion if it defines the entry point, else code_prompt + completion (a body)."""
    if re.search(rf"^\s*(async\s+)?def\s+{re.escape(entry_point)}\s*\(", completion, re.MULTILINE):
        return completion
    return code_prompt + completion


def _syntax(code: str) -> ast.Module | None:
    """The code's syntax tree (None if it does not parse), without the compiler's warnings about its escapes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(code)
        except (SyntaxError, ValueError):
            return None


def written_test_names(test_code: str) -> frozenset[str]:
    """The test methods unittest's loader finds in the task's TestCases (its own and those of base
    classes the test code defines), named here from the code's syntax, outside the program's reach."""
    tree = _syntax(test_code)
    if tree is None:
        return frozenset()
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def names(class_name: str, seen: frozenset[str]) -> set[str]:
        node = classes.get(class_name)
        if node is None or class_name in seen:
            return set()
        found = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")}
        for base in node.bases:
            if isinstance(base, ast.Name):
                found |= names(base.id, seen | {class_name})
        return found

    return frozenset(names("TestCases", frozenset()))


# What a solution has no business touching, by the tampering pattern it shows (`tampering_patterns`).
_UNITTEST_NAME = re.compile(r"^(unittest|(Base)?Test(Case|Result|Suite|Loader|Program)|TextTest(Result|Runner)|defaultTestLoader)$")
_RESULT_ATTRIBUTES = frozenset(
    {
        "wasSuccessful",
        "addSuccess",
        "addFailure",
        "addError",
        "addSkip",
        "addSubTest",
        "addExpectedFailure",
        "addUnexpectedSuccess",
        "startTest",
        "stopTest",
        "testsRun",
        "_callTestMethod",
        "failureException",
    }
)
_EXITS = frozenset({("sys", "exit"), ("os", "_exit"), ("os", "write")})
_MODULE_TABLE_WRITES = frozenset({"update", "__setitem__", "setdefault", "pop", "popitem", "clear", "__delitem__"})
_FRAME_ATTRIBUTES = frozenset({"f_back", "f_locals", "f_globals", "tb_frame", "gi_frame", "cr_frame", "ag_frame"})
_CALLS = {
    "inspects_frames": frozenset(
        {
            ("sys", "_getframe"),
            ("sys", "_current_frames"),
            ("sys", "settrace"),
            ("sys", "setprofile"),
            ("sys", "addaudithook"),
            ("threading", "settrace"),
            ("inspect", "stack"),
            ("inspect", "trace"),
            ("inspect", "currentframe"),
            ("inspect", "getouterframes"),
            ("inspect", "getinnerframes"),
        }
    ),
    "scans_memory": frozenset(
        {
            *(("gc", name) for name in ("get_objects", "get_referrers", "get_referents", "set_debug")),
            ("ctypes", "string_at"),
            ("ctypes", "wstring_at"),
        }
    ),
}
_PROCESS_FILES = re.compile(r"/proc/(self|thread-self|\d+|\{\})/(fd|mem|environ|maps)|/dev/fd/")


def _chain(node: ast.AST) -> list[str]:
    """The names along an attribute chain, outermost first: `unittest.TestResult.wasSuccessful` ->
    [unittest, TestResult, wasSuccessful]; a call or subscript on the way is looked through."""
    names: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, (ast.Subscript, ast.Call)):
            node = node.value if isinstance(node, ast.Subscript) else node.func
        else:
            if isinstance(node, ast.Name):
                names.append(node.id)
            return names[::-1]


def _patched(chain: list[str]) -> set[str]:
    """The patterns of assigning to (or deleting, or patching) what `chain` names."""
    found = set()
    if any(_UNITTEST_NAME.match(name) for name in chain) or (chain and chain[-1] in _RESULT_ATTRIBUTES):
        found.add("patches_unittest")
    if (chain and chain[0] in ("builtins", "__builtins__")) or tuple(chain[-2:]) in _EXITS:
        found.add("patches_builtins_or_exit")
    if chain and chain[-1] == "__code__":
        found.add("replaces_function_code")
    if chain[:2] == ["sys", "modules"] and len(chain) > 2:  # sys.modules["unittest"] = fake: the tests would import it
        found.add("writes_sys_modules")
    return found


def tampering_patterns(code: str) -> set[str]:
    """Ways of forging a test run that a solution's code shows (checked on the solution, not the tests):
    patching unittest (wasSuccessful, TestResult, TestCase ...), the builtins or the exits; reading
    frames (sys._getframe, inspect.stack, f_back ...) or scanning memory (gc.get_objects, ctypes.string_at)
    to reach the runner; reading /proc/<pid>/fd, mem, environ; replacing a function's code."""
    tree = _syntax(code)
    if tree is None:
        return set()  # it does not run at all
    imported = {
        alias.asname or alias.name: (node.module.split(".")[0], alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in (t for each in targets for t in ast.walk(each)):
                if isinstance(target, (ast.Attribute, ast.Subscript)):
                    chain = _chain(target)
                    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
                        chain = [*chain, target.slice.value]  # sys.modules["unittest"], __builtins__["print"]
                    found |= _patched(chain)
        elif isinstance(node, ast.Call):
            chain = _chain(node.func)
            named = tuple(chain[-2:]) if len(chain) > 1 else imported.get(chain[0], ()) if chain else ()
            found |= {pattern for pattern, calls in _CALLS.items() if named in calls}
            strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if chain[-1:] in (["setattr"], ["delattr"]) and node.args:
                found |= _patched(_chain(node.args[0]) + strings[:1])
            if "patch" in chain:  # mock.patch("unittest.TestResult.wasSuccessful"), patch.object(unittest.TestCase, "run")
                found |= _patched([part for text in strings for part in text.split(".")] + (_chain(node.args[0]) if node.args else []))
            if chain[:2] == ["sys", "modules"] and chain[-1] in _MODULE_TABLE_WRITES:
                found.add("writes_sys_modules")
            if chain[-1:] == ["__subclasses__"] and any(_UNITTEST_NAME.match(name) for name in chain):
                found.add("patches_unittest")
        elif isinstance(node, ast.Attribute) and node.attr in _FRAME_ATTRIBUTES:
            found.add("inspects_frames")
        elif isinstance(node, ast.Attribute) and node.attr == "from_address":
            found.add("scans_memory")
        elif isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            text = (
                node.value
                if isinstance(node, ast.Constant)
                else "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            )
            if isinstance(text, str) and _PROCESS_FILES.search(text):
                found.add("reads_process_files")
    return found


def signed_lines(reported: bytes, tag: str) -> Iterator[bytes]:
    """The bodies of the lines signed with `tag`, in order: the program may write there too, but it cannot sign a line (it
    never sees the tag)."""
    for line in reported.splitlines():
        signature, _, body = line.partition(b" ")
        if hmac.compare_digest(signature, hmac.digest(tag.encode(), body, "sha256").hex().encode()):
            yield body


def runner_started(reported: bytes, tag: str) -> bool:
    """Whether the runner's first signed line is `ready`, which it writes once it is set up, before the program runs:
    without it the runner failed on its own (a host's /dev/null it could not open: the thirty-sixth round scored every
    answer as a plain failure), no answer's doing."""
    return next(signed_lines(reported, tag), None) == b"0 ready "


def judge(reported: bytes, exit_code: int | None, tag: str, expected: frozenset[str]) -> tuple[bool, set[str], str]:
    """(passed, tampering patterns, what went wrong) from the lines the trusted runner signed with `tag`, as they came.

    The runner writes each outcome when it happens (bigcodebench_runner.py): `start <test>`, `part`, `end`,
    `bad`, `good <test>`, `stop <test>`, `tampering <pattern>`, and `result <json>` last, each line
    numbered from 0; it signs a start, a success or a stop only for a test of the real suite, an end only for a part
    unittest's own `with` ended. Passed: the tests written (`expected`, at least one) each started once, ran parts in the
    runner's executor that each ended there, succeeded and stopped, in that order; no `bad` line, no tampering, the
    result last with no error, and the program exited 0. Tampering: what the runner flagged, a gap or a repeat in the
    numbers (the program can stand between the runner and the harness and pass on only some lines), lines out of their
    order (a test started twice or inside another, a success or a stop of a test not running, a line after the result), a
    test with no part run or a part not ended, other tests than written, an exit 0 with no result."""
    tampering: set[str] = set()
    ended: dict[str, bool] = {}  # test: succeeded
    current, parts, ends, good, failing, bad_elsewhere, outcome, sequence = None, 0, 0, False, False, 0, None, 0
    for body in signed_lines(reported, tag):
        number, _, rest = body.decode(errors="replace").partition(" ")
        if number != str(sequence):  # the program passed on only some of the runner's lines, or some twice
            tampering.add("filters_the_report")
        sequence = int(number) + 1 if number.isdigit() and len(number) < 10 else sequence + 1
        kind, _, payload = rest.partition(" ")
        if outcome is not None:  # the runner signs nothing after its result: a copy of it the program forked did
            tampering.add("reports_twice")
        try:
            name = json.loads(payload) if kind in ("start", "good", "stop") else None
        except ValueError:
            name = None
        if kind == "tampering":
            tampering.add(payload.strip())
        elif kind == "bad":  # a part that raised, an outcome not a success; outside a test: a class or module fixture
            failing, bad_elsewhere = failing or current is not None, bad_elsewhere + (current is None)
        elif kind == "part":
            parts += 1
        elif kind == "end":
            ends += 1
        elif kind == "start":
            if current is not None or name in ended:
                tampering.add("forges_a_result")
            current, parts, ends, good, failing = name, 0, 0, False, False
        elif kind == "good":
            if current is None or name != current:
                tampering.add("forges_a_result")
            good = good or name == current
        elif kind == "stop":
            if name != current or current is None:
                tampering.add("forges_a_result")
            else:
                if parts == 0 or ends != parts:  # no part ran in the runner's executor, or one did not end there (its exit
                    tampering.add("skips_the_runners_checks")  # replaced: the thirty-third round swallowed every failure so)
                ended[current] = good and not failing and parts > 0
            current = None
        elif kind == "result":
            try:
                outcome = json.loads(payload)
            except ValueError:
                outcome = {"error": "an unreadable result"}
    if outcome is None:
        if exit_code == 0:
            tampering.add("exit_before_report")
        elif exit_code == RUNNER_CANNOT_REPORT:
            tampering.add("breaks_the_report")
        return False, tampering, "the program ended before its tests were run to the end"
    if current is not None:
        tampering.add("skips_the_runners_checks")  # a test started and never stopped, yet the suite ended
    error = outcome.get("error") if isinstance(outcome, dict) else "an unreadable result"
    failed = sum(not succeeded for succeeded in ended.values())
    if error is None and failed == bad_elsewhere == 0 and set(ended) != expected:
        tampering.add("tests_run_mismatch")
    if error is not None:
        return False, tampering, str(error)
    if failed or bad_elsewhere:
        return False, tampering, f"{failed or 1} of {len(ended)} tests failed"
    passed = set(ended) == expected and len(expected) >= 1 and exit_code == 0 and not tampering
    return passed, tampering, "" if passed else f"{len(ended)} tests ran, {len(expected)} are written"


def _packages_fingerprint() -> str:
    names = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


class BigCodeBenchSettings(SandboxLimits):
    memory_mb: int = Field(2048, ge=64, description="Memory cap of one test program (at least 64 MiB).")
    subset: Literal["stdlib", "hard", "full"] = Field("stdlib", description="Which tasks.")
    prompt: Literal["instruct", "complete"] = Field("instruct", description="A description (MemRL's choice) or a signature with docstring.")
    isolation: Literal["sandbox", "process"] = Field("sandbox", description="A container per program, or a bare subprocess.")
    timeout_s: float = Field(60, gt=0, le=MAX_SECONDS, description="Seconds per test program.")


class BigCodeBenchEnv(Env):
    """One function per task, checked by the task's unittests in a sandbox."""

    name = "bigcodebench"
    grades_in_observation = True
    Settings = BigCodeBenchSettings
    settings: BigCodeBenchSettings
    labels = ("bigcodebench", "code", "sandboxed")
    default_roles: ClassVar[dict[str, Any]] = {"train": "train", "validation": "validation", "test": ["test"]}
    default_actor = "single_turn"

    def __init__(self, settings: BigCodeBenchSettings | Mapping[str, Any], seed: int = 0):
        super().__init__(settings, seed)
        self.subset: str = self.settings.subset
        self.prompt: str = self.settings.prompt
        self.tasks_per_split = self.settings.tasks_per_split
        self.isolation: str = self.settings.isolation
        limits = Limits(
            timeout_s=float(self.settings.timeout_s),
            output_bytes=self.settings.max_output_chars,
            memory_bytes=self.settings.memory_mb << 20,
            max_processes=self.settings.max_processes,
            disk_bytes=self.settings.disk_mb << 20,
        )
        folder = data_dir(self.settings.data_dir, "MEMRL_BENCH_BIGCODEBENCH_DIR", "bigcodebench", _FETCH)
        self.runner = CodeRunner(limits, self.isolation, DEFAULT_HIDDEN_PATHS + (str(folder),))  # the tests must stay unreadable
        self._all, data_hash = self._load(folder)
        key = [
            "bigcodebench v1",
            hashlib.sha256(_RUNNER.encode()).hexdigest(),
            data_hash,
            sys.version,
            repr(limits),
            self.isolation,
            _packages_fingerprint(),
        ]
        enabled, workers = self.settings.exclude_gold_failures, self.settings.gold_workers
        self._gold = GoldFilter(
            self.name, key, self._all, self._gold_failure, self.tasks_per_split, enabled, workers, needs_sandbox=self.isolation == "sandbox"
        )
        self._task: Task | None = None

    def _load(self, folder: Path) -> tuple[dict[str, list[Task]], str]:
        paths = [folder / _DATA_FILE, folder / _SPLIT_FILES[self.subset]]
        for path in paths:
            if not path.exists():
                raise DataMissingError(f"BigCodeBench file {path} is missing; fetch it with: {_FETCH}")
        digest = hashlib.sha256(b"".join(data_bytes(p) for p in paths)).hexdigest()
        records = {r["task_id"]: r for r in read_data_file(paths[0], BigCodeBenchRecord)}
        split_file = read_data_file(paths[1], BigCodeBenchSplits)
        listed: dict[str, list[Task]] = {"train": [], "validation": [], "test": []}
        for source, ids in (("train", split_file["train_ids"]), ("val", split_file["val_ids"])):
            for record_id in ids:
                if record_id not in records:
                    raise DataFileError(f"{paths[1]}: task {record_id!r} is not in {paths[0]}")
                record = records[record_id]
                libs = ast.literal_eval(record["libs"])
                if self.subset == "stdlib" and not is_stdlib_only(libs):
                    continue
                split = "train" if source == "train" else ("validation" if hash_fraction(record_id) < 0.5 else "test")
                data = {
                    "code_prompt": record["code_prompt"],
                    "test": record["test"],
                    "entry_point": record["entry_point"],
                    "libs": libs,
                    "gold": record["code_prompt"] + record["canonical_solution"],
                }
                description = record["instruct_prompt" if self.prompt == "instruct" else "complete_prompt"]
                listed[split].append(Task(id=record_id, split=split, description=description, data=data))
        return listed, digest

    def splits(self) -> dict[str, str]:
        split_file = _SPLIT_FILES[self.subset]
        subset = {"stdlib": "tasks whose libs are all standard library", "hard": "MemRL's hard subset", "full": "all tasks"}[self.subset]
        return {
            "train": f"BigCodeBench, {subset}: train_ids of MemRL's {split_file}, in file order",
            "validation": f"BigCodeBench, {subset}: val_ids of MemRL's {split_file} with hash_fraction(task id) < 0.5",
            "test": f"BigCodeBench, {subset}: val_ids of MemRL's {split_file} with hash_fraction(task id) >= 0.5",
        }

    def tasks(self, split: str) -> list[Task]:
        return self._gold.tasks(split)

    def excluded(self) -> dict[str, str]:
        """Task id -> why it is left out: its canonical solution fails here."""
        return self._gold.excluded()

    def instructions(self) -> str:
        return prompts.load("bigcodebench_instructions")

    def reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._task = task
        return task.description, {"answer_format": "code"}

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        if self._task is None:
            raise RuntimeError(f"{self.name}: step() before reset() or after the episode ended")
        task, self._task = self._task, None
        # Python reads a lone \r as a line end too: made \n here, so the runner knows where the test code starts.
        solution = solution_code(action, task.data["code_prompt"], task.data["entry_point"]).replace("\r\n", "\n").replace("\r", "\n")
        tag = secrets.token_hex(16)
        first_test_line = solution.count("\n") + 3
        libs = (
            ",".join("".join(lib.split()) for lib in task.data["libs"]) or "-"
        )  # the runner lets ctypes load only for tasks whose libraries may need it
        tests = prompt_imports(task.data["code_prompt"]) + prompt_constants(task.data["code_prompt"]) + task.data["test"]
        result = self.runner.run(solution + "\n\n" + tests, launcher=_RUNNER, secret=f"{tag} {first_test_line} {libs}")
        if not runner_started(result.reported, tag):
            raise EnvBrokenError(f"the BigCodeBench runner failed before the program ran: {result.output.strip()[-500:]}")
        passed, tampering, problem = judge(result.reported, result.exit_code, tag, written_test_names(task.data["test"]))
        tampering |= tampering_patterns(solution)
        report = result.output.strip()
        if result.timed_out:
            report = f"killed after the {self.runner.limits.timeout_s:g} s time limit\n{report}"
        elif not report:  # the program printed nothing: say what the runner saw
            report = problem
        info: dict[str, Any] = {"success": passed and not tampering, "detail": report[-300:], "seconds": round(result.seconds, 2)}
        if tampering:
            info.update(status="tampered", tampering=sorted(tampering))
            observation = f"The answer tampered with its tests ({', '.join(sorted(tampering))}); it scores 0."
        else:
            observation = "All tests pass." if passed else f"The tests fail:\n{report[-1500:]}"
        return observation, float(info["success"]), True, info

    def spawn(self) -> BigCodeBenchEnv:
        twin = copy.copy(self)  # shares the loaded tasks and the gold cache, not the episode
        twin._task = None
        return twin

    def _gold_failure(self, task: Task) -> str:
        return gold_failure(self.spawn(), task)


ENV = BigCodeBenchEnv
