"""The trusted runner of a BigCodeBench program: the only code that decides whether its tests passed.

It is not imported by the harness: its source is given to the sandbox's Python as `python -c`
(`CodeRunner.run(launcher=...)`), in the folder where program.py (the solution, then the task's
tests) was written, and it runs as that program's `__main__`. The program file holds no marker
and no runner, so nothing it can read says what success looks like. Before the program is
imported the runner:

- reads the number of its report descriptor (a pipe to the harness, apart from the output),
  its tag and the program's first line of test code from its standard input (the one line the
  harness sends; the tag is in no argv, environment or file), then puts /dev/null there;
- keeps its own references to what it calls;
- notes what the run relies on (every attribute of unittest's modules and classes, the builtins,
  sys.exit, os._exit, os.write, its own result class; numpy's and pandas' top-level names and
  the functions of numpy.testing and pandas.testing and of what their asserts call, imported
  first when the tests name numpy or pandas) to check afterwards that none was replaced, and
  unittest's modules in sys.modules, and the signal handlers;
- installs an audit hook that reports tampering at once, before the call goes on: scanning the
  heap (gc.get_objects / get_referrers / get_referents, ctypes.string_at, /proc/*/mem), taking
  the runner's own frames (sys._getframe, inspect.stack) or any frame from the solution's code
  (a traceback's tb_frame, a generator's gi_frame: f_back leads to the runner's; a trace or
  profile function, handed every frame), replacing the code of a function of unittest, of the
  runner or of the tests;
- replaces signal.signal by one that flags a handler (handed the current frame) installed by
  the program, and checks after the import and the suite that no handler changed.

Before the suite and after it, it checks that unittest's modules in sys.modules are still the
ones it imported (a fake unittest would hand the tests a TestCase that runs nothing), that the
test classes hold nothing of the solution's code and no replacement of TestCase's machinery
(run, _callTestMethod, __init_subclass__ ...) but the tests' own; as each test starts, that its
method is the function the test code defined; after the suite, that no module but the program's
holds a function of the solution's code (a library's function replaced). "The solution's code":
compiled from program.py above the first line of test code.

Then it imports program.py as `__main__`, loads TestCases and runs the suite with a result class
of its own that counts every test's outcome (wasSuccessful() is never asked; a skip is not good), and writes one
line `<tag> result <json>` on the report descriptor (tests started, ended well, ended badly;
what was replaced; the tampering seen). Tampering is written there as `<tag> tampering <pattern>`
when it happens. The
harness (memrl_bench/envs/bigcodebench.py) compares the count with the test methods it counted
in the task's test code itself, and decides.
"""


def _memrl_runner() -> None:
    import _imp
    import _signal
    import builtins
    import importlib
    import importlib.util
    import json
    import os
    import signal
    import sys
    import sysconfig
    import traceback
    import types
    import unittest
    import unittest.async_case
    import unittest.case
    import unittest.loader
    import unittest.main
    import unittest.mock
    import unittest.result
    import unittest.runner
    import unittest.signals
    import unittest.suite
    import unittest.util
    from importlib.machinery import SourceFileLoader

    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 256)
        if not chunk:
            break
        line += chunk
    descriptor, tag, first, libs = line.split()  # the report descriptor, the tag, the program's first line of test code, the task's libraries
    first_test_line = int(first)
    libraries = {name for name in libs.decode().split(",") if name and name != "-"}
    # ctypes writes memory and calls C with no audit event (memmove, cast, a Union, a foreign function): it is loaded only where the task's libraries may need it.
    c_allowed = "ctypes" in libraries or any(name.split(".")[0] not in sys.stdlib_module_names for name in libraries)
    channel, write, leave = int(descriptor), os.write, os._exit  # the program may replace os.write and os._exit
    os.set_inheritable(channel, False)  # the program's own processes do not get it
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    def report(kind: bytes, payload: str) -> None:
        line = b"%s %s %s\n" % (tag, kind, payload.encode())
        while line:
            line = line[write(channel, line) :]

    watched: dict[tuple[str, str], tuple[object, str, object]] = {}
    codes: dict[int, tuple[types.FunctionType, types.CodeType]] = {}  # the code of each watched function: memory written under it (ctypes) changes it unseen

    def watch(pattern: str, label: str, namespace, keys=None) -> None:
        for key in list(namespace) if keys is None else keys:
            value = namespace[key]
            watched[(pattern, f"{label}.{key}")] = (namespace, key, value)
            function = value.__func__ if type(value) in (staticmethod, classmethod) else value
            if type(function) is types.FunctionType:
                codes[id(function)] = (function, function.__code__)

    for module in (unittest, unittest.case, unittest.loader, unittest.result, unittest.runner, unittest.signals, unittest.suite, unittest.util):
        watch("patches_unittest", module.__name__, vars(module))
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__.startswith("unittest"):
                watch("patches_unittest", f"{value.__module__}.{value.__qualname__}", value.__dict__)
    modules = sys.modules  # the import system's own table, even if sys.modules is rebound
    unittest_modules = {name: module for name, module in modules.items() if name == "unittest" or name.startswith("unittest.")}
    real_case = unittest.case.TestCase
    path = os.path.abspath("program.py")
    with open(path, "rb") as program:
        source = program.read()
    source_text = source.decode(errors="replace")
    test_text = "\n".join(source_text.splitlines()[first_test_line - 1 :])
    # The libraries' assert helpers the tests call: imported first (the tests would import them anyway) so they can be watched.
    for package, helpers in (("numpy", ("numpy.testing", "numpy.testing._private.utils")), ("pandas", ("pandas.testing", "pandas._testing.asserters", "pandas._libs.testing"))):
        if package in test_text and importlib.util.find_spec(package) is not None:
            for name in helpers:
                try:
                    helper = importlib.import_module(name)
                except Exception:  # noqa: S112 - a library that does not import here: the tests will say so
                    continue
                watch("patches_a_library", name, vars(helper), [key for key, value in vars(helper).items() if callable(value) and not isinstance(value, type)])
            watch("patches_a_library", package, vars(importlib.import_module(package)))  # numpy.allclose ...: any name replaced, by whatever callable
    watch("patches_builtins_or_exit", "builtins", vars(builtins))
    watch("patches_builtins_or_exit", "sys", vars(sys), ("exit",))
    watch("patches_builtins_or_exit", "os", vars(os), ("_exit", "write"))

    class Recorder(unittest.runner.TextTestResult):
        """Counts every test's outcome itself; prints as TextTestRunner always did."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.started = self.good = self.bad = 0

        def startTest(self, test):
            self.started += 1
            if not from_the_tests(getattr(getattr(test, getattr(test, "_testMethodName", ""), None), "__func__", None)):
                flag("replaces_a_test")
            super().startTest(test)

        def addSuccess(self, test):
            self.good += 1
            super().addSuccess(test)

        def addSkip(self, test, reason):  # no task's tests skip (gold check): a skip comes from the code under test (SkipTest)
            self.bad += 1
            super().addSkip(test, reason)

        def addExpectedFailure(self, test, err):
            self.good += 1
            super().addExpectedFailure(test, err)

        def addFailure(self, test, err):
            self.bad += 1
            super().addFailure(test, err)

        def addError(self, test, err):  # also a class or module fixture that failed
            self.bad += 1
            super().addError(test, err)

        def addUnexpectedSuccess(self, test):
            self.bad += 1
            super().addUnexpectedSuccess(test)

        def addSubTest(self, test, subtest, err):
            if err is not None:
                self.bad += 1
            super().addSubTest(test, subtest, err)

    watch("patches_the_runner", "Recorder", Recorder.__dict__)
    getframe = sys._getframe
    load, text_runner, stdout, stderr = unittest.defaultTestLoader.loadTestsFromTestCase, unittest.runner.TextTestRunner, sys.stdout, sys.stderr

    frames, armed, seen = set(), [False], set()  # the runner's own frames; their ids stay valid while they run
    frame = sys._getframe()
    while frame is not None:
        frames.add(id(frame))
        frame = frame.f_back
    del frame

    def flag(pattern: str) -> None:
        if pattern not in seen:
            seen.add(pattern)
            report(b"tampering", pattern)

    def from_the_solution(code) -> bool:
        return type(code) is types.CodeType and code.co_filename == path and code.co_firstlineno < first_test_line

    def from_the_tests(function) -> bool:  # a function the test code defined (through its decorators' __wrapped__)
        for _ in range(50):
            if type(function) is not types.FunctionType or function.__code__.co_filename == path:
                break
            function = getattr(function, "__wrapped__", None)
        return type(function) is types.FunctionType and function.__code__.co_filename == path and function.__code__.co_firstlineno >= first_test_line

    def relied_on(function) -> bool:  # unittest's code, the runner's, the tests' (the stdlib changes other code: types.coroutine)
        module, name = getattr(function, "__module__", "") or "", getattr(function, "__qualname__", "") or ""
        return module.startswith("unittest") or name.startswith(("_memrl_runner.", "TestCases."))

    inside = [False]
    folders = sysconfig.get_paths()
    library_folders = tuple({os.path.join(folder, "") for key in ("stdlib", "platstdlib", "purelib", "platlib") for folder in (folders[key], os.path.realpath(folders[key]))})
    import_machinery = {"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>", importlib.__file__, importlib.util.__file__}
    ctypes_folder = os.path.join(os.path.dirname(os.__file__), "ctypes", "")
    never_loaded = {"_testcapi", "_testinternalcapi", "_testbuffer", "_testimportmultiple", "_testmultiphase", "_testsinglephase", "_testclinic", "_ctypes_test", "_xxsubinterpreters", "_xxtestfuzz", "xxlimited", "xxlimited_35"}
    c_events = {"ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.cdata", "ctypes.addressof", "ctypes.PyObj_FromPtr", "ctypes.call_function"}

    def exact(text: str) -> str:
        """A str of the program's as a plain str: none of its class's methods runs (the hook runs no code of the program's)."""
        return text if type(text) is str else "".join((text,))

    def asked_by_a_library() -> bool:
        """The code behind the event, past the import machinery and ctypes itself, is a library's (the stdlib's, site-packages')."""
        frame = getframe(2)  # 0 this function, 1 the hook, 2 the code that raised the event
        while frame is not None:
            name = exact(frame.f_code.co_filename)
            if name in import_machinery or str.startswith(name, ctypes_folder):
                frame = frame.f_back
                continue
            return str.startswith(name, library_folders) or str.startswith(name, "<frozen ")
        return True

    def refused_import(args: tuple) -> tuple[str, bool] | None:
        """Why a module may not be loaded while the program runs, and whether that is tampering whoever asked: ctypes where the
        task's libraries do not need it, CPython's test modules, an extension module from outside the libraries' folders or under
        a built-in module's name (libpython's own _signal: a fresh one)."""
        name = exact(args[0]) if args and issubclass(type(args[0]), str) else ""
        origin = exact(args[1]) if len(args) > 1 and issubclass(type(args[1]), str) else None
        last = name.rpartition(".")[2]
        if last in never_loaded:
            return f"{name}: CPython's test modules are not loaded here", False
        if not c_allowed and (name == "ctypes" or str.startswith(name, "ctypes.") or last == "_ctypes"):
            return f"{name}: ctypes is not loaded for a task whose libraries are all standard and do not include it", False
        if origin is not None and (last in sys.builtin_module_names or not str.startswith(os.path.realpath(origin), library_folders)):
            return f"{name}: an extension module is loaded only from the libraries' folders, never as a built-in module", True
        return None

    def called_by_the_solution() -> bool:
        """The code that raised the event, or what called it (inspect.currentframe, traceback.walk_tb), is the solution's."""
        inside[0] = True  # the events raised here (getframe, f_code) are the runner's own
        try:
            frame = getframe(2)  # 0 this function, 1 the hook, 2 the code that raised the event
            return from_the_solution(frame.f_code) or (frame.f_back is not None and from_the_solution(frame.f_back.f_code))
        finally:
            inside[0] = False

    def audit(event: str, args: tuple) -> None:
        if inside[0]:
            return
        if event == "memrl.signal" and len(args) == 2:  # from the guard that replaced signal.signal: only the hook holds the original
            signalnum, handler = args
            if callable(handler):  # a handler is handed the frame the signal came in: flagged, never installed
                if armed[0]:
                    flag("inspects_frames")
            elif type(signalnum) in (int, signal.Signals) and type(handler) in (int, signal.Handlers):
                install_handler(int(signalnum), int(handler))  # SIG_DFL, SIG_IGN
            else:
                raise TypeError("signal handler must be signal.SIG_IGN, signal.SIG_DFL, or a callable object")
            return
        if not armed[0]:
            return
        if event == "memrl.create_builtin":  # a fresh module of a built-in (a _signal whose signal() is the original)
            flag("recreates_a_builtin_module")
        elif event == "import":
            inside[0], refusal = True, None
            try:
                refusal = refused_import(args)
                if refusal is not None and (refusal[1] or not asked_by_a_library()):
                    flag("calls_c_directly")  # a library's attempt (pandas imports ctypes) just fails
            finally:
                inside[0] = False
            if refusal is not None:
                raise ImportError(refusal[0])
        elif event in c_events and not (event == "ctypes.dlopen" and "ctypes" in libraries):
            inside[0] = True
            try:
                if not asked_by_a_library():
                    flag("calls_c_directly")
            finally:
                inside[0] = False
        elif event in ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "ctypes.string_at", "ctypes.wstring_at"):
            flag("scans_memory")
        elif event in ("sys.settrace", "sys.setprofile"):  # the callback is handed every frame (threading.settrace too, as a thread starts)
            flag("inspects_frames")
        elif event == "sys._current_frames" or (event in ("sys._getframe", "object.__getattr__") and args and id(args[0]) in frames):
            flag("inspects_frames")
        elif (event == "sys._getframe" or (event == "object.__getattr__" and len(args) > 1 and args[1] in ("tb_frame", "gi_frame", "cr_frame", "ag_frame"))) and called_by_the_solution():
            flag("inspects_frames")  # the solution itself takes a frame, from which f_back (not audited) leads to the runner's
        elif event == "object.__setattr__" and len(args) > 1 and args[1] == "__code__" and relied_on(args[0]):
            flag("replaces_function_code")
        elif event == "open" and args and isinstance(args[0], (str, bytes)):
            path = os.fsdecode(args[0])
            if path.startswith("/proc/") and path.endswith("/mem"):
                flag("scans_memory")

    # A signal handler is handed the frame the signal came in, and signal.signal raises no audit event. Its replacement
    # holds nothing (no closure, no original): it asks the audit hook, which installs SIG_DFL or SIG_IGN and flags a handler.
    install_handler, handler_of, signals = _signal.signal, _signal.getsignal, sorted(signal.valid_signals())
    handlers = {number: handler_of(number) for number in signals}

    def guarded_signal(signalnum, handler, _audit=sys.audit, _getsignal=signal.getsignal):
        previous = _getsignal(signalnum)
        _audit("memrl.signal", signalnum, handler)
        return previous

    # A fresh _signal (multi-phase: a new module, its own signal(), the same handlers table) would install past the guard:
    # every built-in module is made now, and _imp.create_builtin (what importlib makes one with) hands back the one made.
    for name in sys.builtin_module_names:
        if name not in modules:
            importlib.import_module(name)
    made = {name: modules[name] for name in sys.builtin_module_names}

    def create_builtin(spec, _audit=sys.audit, _made=made):
        _audit("memrl.create_builtin")
        module = _made.get(getattr(spec, "name", None))
        if module is None:
            raise ImportError(f"no built-in module named {getattr(spec, 'name', None)}")
        return module

    _signal.signal = signal.signal = guarded_signal
    _imp.create_builtin = create_builtin
    sys.addaudithook(audit)  # for good: an audit hook cannot be removed

    def check_the_signals() -> None:
        """No signal handler but the ones there before the program (one installed past guarded_signal); SIG_DFL, SIG_IGN may be set."""
        if any(callable(handler_of(number)) and handler_of(number) is not handlers[number] for number in signals):
            flag("inspects_frames")

    # Only type() and the real __dict__ descriptors below: an attribute read could run the program's code (a property, __getattr__).
    module_dict, class_dict = types.ModuleType.__dict__["__dict__"].__get__, type.__dict__["__dict__"].__get__
    real_classes = {id(value) for module in unittest_modules.values() for value in vars(module).values() if issubclass(type(value), type)}
    machinery = {name for name, value in vars(real_case).items() if callable(value) or type(value) in (staticmethod, classmethod)}

    def function_of(value):
        return value.__func__ if type(value) in (staticmethod, classmethod) else value

    def check_the_modules() -> None:
        """unittest in sys.modules is the one imported here: a fake would hand the tests a TestCase that runs nothing."""
        if sys.modules is not modules or any(modules.get(name) is not module for name, module in unittest_modules.items()):
            flag("replaces_unittest_module")

    def check_the_tests(cases) -> None:
        """The test classes hold the tests' code and unittest's, nothing of the solution's."""
        if type(cases) is not type or real_case not in cases.__mro__:
            flag("replaces_test_machinery")
            return
        for klass in cases.__mro__:
            if id(klass) in real_classes or klass is object:
                continue
            for name, value in class_dict(klass).items():
                function = function_of(value)
                solutions = type(function) is types.FunctionType and from_the_solution(function.__code__)
                if solutions or (name in machinery and not from_the_tests(function)):
                    flag("replaces_test_machinery")

    def check_the_libraries() -> None:
        """No module but the program's holds a function of the solution: it would have replaced a library's (an assert helper)."""
        for module in list(modules.values()):
            if module is main or not issubclass(type(module), types.ModuleType):
                continue
            for value in list(module_dict(module).values()):
                values = [value, *class_dict(value).values()] if issubclass(type(value), type) else [value]
                for each in values:
                    function = function_of(each)
                    if type(function) is types.FunctionType and from_the_solution(function.__code__):
                        flag("patches_a_library")
                        return

    # program.py as python would run it: its __main__ module, its folder first on sys.path
    main = types.ModuleType("__main__")
    main.__file__, main.__builtins__, main.__loader__ = path, builtins, SourceFileLoader("__main__", path)
    sys.modules["__main__"], sys.argv[:], sys.path[0] = main, ["program.py"], os.path.dirname(path)
    result, failure, cases = None, None, None
    armed[0] = True
    try:
        exec(compile(source, path, "exec"), vars(main))
        check_the_modules()
        check_the_signals()
        cases = vars(main)["TestCases"]
        check_the_tests(cases)
        watch("patches_the_tests", "TestCases", cases.__dict__, [key for key, value in vars(cases).items() if callable(value)])
        result = text_runner(stream=sys.stdout, verbosity=1, resultclass=Recorder).run(load(cases))
    except BaseException as error:  # the program's own failure: an exception or SystemExit on import, a suite that broke
        failure = error
    check_the_modules()
    check_the_signals()
    if cases is not None:
        check_the_tests(cases)
    check_the_libraries()
    armed[0] = False
    for stream in (stdout, stderr):
        try:
            stream.flush()
        except Exception:  # noqa: S110 - a closed stream has nothing left to flush
            pass
    if failure is not None and not isinstance(failure, SystemExit):
        traceback.print_exception(type(failure), failure, failure.__traceback__.tb_next, file=stderr)  # without the runner's frame
        stderr.flush()
    replaced: dict[str, list[str]] = {}
    for (pattern, label), (namespace, key, value) in watched.items():
        if namespace.get(key, watched) is not value:
            replaced.setdefault(pattern, []).append(label)
    for function, code in codes.values():
        if function.__code__ is not code:
            replaced.setdefault("replaces_function_code", []).append(exact(function.__qualname__))
    counts = {name: getattr(result, name, 0) for name in ("started", "good", "bad")}
    error = f"{type(failure).__name__}: {failure}"[:300] if failure is not None else None
    report(b"result", json.dumps({**counts, "error": error, "replaced": {k: v[:3] for k, v in replaced.items()}, "tampering": sorted(seen)}))
    leave(0 if error is None and counts["bad"] == 0 and counts["good"] == counts["started"] else 1)


if __name__ == "__main__":
    _memrl_runner()
