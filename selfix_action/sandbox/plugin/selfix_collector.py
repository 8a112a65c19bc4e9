"""pytest plugin that selfix loads into the project's own test process (``-p selfix_collector``).

It must run in whatever environment the project uses, so it needs only the standard library and pytest.
Per-test line coverage comes from coverage.py when the project's environment has it, else from selfix's own line
collector below (``sys.monitoring`` on Python 3.12+, ``sys.settrace`` before): same record, so localization takes
either unchanged. ``SELFIX_LINE_COLLECTOR``: ``fallback`` (default: ours only without coverage.py), ``always``
(ours even with coverage.py, to compare them), ``never`` (without coverage.py, no coverage: the traceback-only
fallback). Results are appended to a JSON-lines file as
each test finishes, so a run that is killed for a timeout still tells which tests finished and which one hung.

``SELFIX_ADD`` (a JSON list of test files) adds files to a whole-suite run's arguments.
``SELFIX_SELECT`` names a JSON file listing the tests (node ids or files) to run: they replace the run's
positional arguments (``config.args``, which collection reads), whatever paths the project's test command names.
Passing them as arguments instead would run the command's own paths beside them, and pytest before 8 refuses
positional arguments after ``--`` once the command has given one.
"""

import json
import os
import sys
import traceback

_OUT = os.environ.get("SELFIX_RESULTS", "")
_WANT_COVERAGE = os.environ.get("SELFIX_COVERAGE") == "1"
_ROOT = os.path.realpath(os.environ.get("SELFIX_ROOT", os.getcwd()))
_LINE_COLLECTOR = os.environ.get("SELFIX_LINE_COLLECTOR", "fallback")

_state: dict = {"cov": None, "lines": None, "phases": {}, "exc": {}, "nodeid": None, "formatting": 0}

# The coverage context of the code a failing test runs only while pytest formats its failure (the reprs of the
# compared values, the assertion's explanation): recorded apart and dropped, so a ``__repr__`` run only to print
# the message is not code the test ran (spectrum localization would rank it first for every such failure).
_FORMATTING = "\x00selfix-formatting"
# pytest's assertion rewriting calls these (as attributes of the module, at failure time) to format a message.
_FORMATTERS = ("_saferepr", "_format_assertmsg", "_call_reprcompare")


class LineCollector:
    """Which lines of the project's own files each test ran: {test: {file: set(lines)}}, files by real path.

    Only files below the project root count (never site-packages, a venv or selfix's plugins). Lines run
    outside a test (imports, collection) belong to no test, as with coverage.py's empty context.
    """

    # Folders below the root that are not the project's source (a venv inside the checkout, caches).
    _FOREIGN = ("site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox", "__pycache__")

    def __init__(self, root):
        self.root = root.rstrip(os.sep) + os.sep
        self.by_test = {}
        self.current = None  # the running test's {file: set(lines)}, None between tests
        self._ours = {}  # co_filename -> real path when it is a project file, else None
        self.kind = ""

    def _project_file(self, filename):
        try:
            return self._ours[filename]
        except KeyError:
            pass
        real = None
        if filename and not filename.startswith("<"):
            path = os.path.realpath(filename)
            parts = path[len(self.root) :].split(os.sep) if path.startswith(self.root) else None
            if parts is not None and not any(part in self._FOREIGN for part in parts):
                real = path
        self._ours[filename] = real
        return real

    def switch(self, nodeid):
        self.current = None if nodeid is None else self.by_test.setdefault(nodeid, {})
        if self.kind == "sys.monitoring":
            sys.monitoring.restart_events()  # lines DISABLEd during the last test count again for this one

    # -- Python 3.12+: sys.monitoring; each (code, line) is reported once per test, then disabled until the next
    def _on_line(self, code, line):
        current = self.current
        if current is not None:
            path = self._project_file(code.co_filename)
            if path is not None:
                current.setdefault(path, set()).add(line)
        return sys.monitoring.DISABLE

    def _on_start(self, code, offset):
        # Line events only in the project's code objects; every other function runs unmonitored.
        if self._project_file(code.co_filename) is not None:
            sys.monitoring.set_local_events(self._tool, code, sys.monitoring.events.LINE)
        return sys.monitoring.DISABLE

    # -- before 3.12: sys.settrace, a local tracer only in project files' frames
    def _global_trace(self, frame, event, arg):
        # Called at every call of every function (pytest's, the stdlib's): as little work as possible. A frame
        # is traced into the test that was running when it started (or resumed: a generator's resume is a call).
        current = self.current
        if current is None:
            return None
        path = self._ours.get(frame.f_code.co_filename, self)
        if path is self:
            path = self._project_file(frame.f_code.co_filename)
        if path is None:
            return None
        lines = current.get(path)
        if lines is None:
            lines = current[path] = set()
        add = lines.add

        def local_trace(frame, event, arg):
            if event == "line":
                add(frame.f_lineno)
            return local_trace

        return local_trace

    def start(self):
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            # coverage.py's id first (it is not running: we only get here without it), the debugger's last.
            order = (monitoring.COVERAGE_ID, monitoring.PROFILER_ID, 3, 4, 5, monitoring.DEBUGGER_ID)
            tool = next((t for t in order if monitoring.get_tool(t) is None), None)
            if tool is not None:
                self._tool = tool
                monitoring.use_tool_id(tool, "selfix")
                events = monitoring.events
                monitoring.register_callback(tool, events.PY_START, self._on_start)
                monitoring.register_callback(tool, events.LINE, self._on_line)
                monitoring.set_events(tool, events.PY_START)
                self.kind = "sys.monitoring"
                return
        import threading

        threading.settrace(self._global_trace)
        sys.settrace(self._global_trace)
        self.kind = "sys.settrace"

    def stop(self):
        if self.kind == "sys.monitoring":
            sys.monitoring.set_events(self._tool, 0)
            sys.monitoring.free_tool_id(self._tool)
        elif self.kind == "sys.settrace":
            import threading

            sys.settrace(None)
            threading.settrace(None)
        return {
            test: {f: sorted(lines) for f, lines in files.items()}
            for test, files in self.by_test.items()
            if not test.endswith(_FORMATTING)
        }


def _emit(record):
    if not _OUT:
        return
    with open(_OUT, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _select(config):
    path = os.environ.get("SELFIX_SELECT", "")
    added = os.environ.get("SELFIX_ADD", "")
    if not path and added:
        # The whole suite plus test files selfix added (a reported error's reproduction test), which the
        # command's own paths may not reach; pytest drops a file named twice.
        config.args = list(config.args) + [a for a in _from_rootdir(config, json.loads(added)) if a not in config.args]
        return
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        wanted = json.load(handle)
    if not isinstance(wanted, list) or not all(isinstance(a, str) for a in wanted):
        raise ValueError(f"SELFIX_SELECT: {path} does not hold a list of test ids")
    config.args = _from_rootdir(config, wanted)


def _from_rootdir(config, ids):
    """Node ids are relative to the rootdir, arguments to the folder pytest started in: where they differ (the
    command names a subfolder whose own configuration file makes it the rootdir, ``pytest packages/api``), each
    id's path is made relative to where pytest started."""
    root = str(getattr(config, "rootpath", None) or config.rootdir)
    params = getattr(config, "invocation_params", None)
    here = str(params.dir) if params is not None else os.getcwd()
    if os.path.abspath(root) == os.path.abspath(here):
        return list(ids)
    moved = []
    for test_id in ids:
        path, sep, rest = test_id.partition("::")
        moved.append(os.path.relpath(os.path.join(root, path), here) + sep + rest)
    return moved


# The seed pytest-randomly gets when the project's configuration does not pin one: every run of a heal (baseline,
# candidates, confirmation) reseeds ``random`` (and Faker, numpy ...) the same way before each test.
RANDOMLY_SEED = 1


# The cache plugin's options (and the stepwise plugin's, which pytest blocks with it): selfix runs pytest with
# ``-p no:cacheprovider`` (no cache written into the scratch copy, no run steered by a former one), which also
# drops their options, so a project whose addopts names one (``--lf``, ``--ff``, ``--nf``, ``--sw``) would be
# refused ("unrecognized arguments"). They are declared here instead, do nothing, and are reported.
_CACHE_OPTIONS = (
    (("--lf", "--last-failed"), "lf", {"action": "store_true"}),
    (("--ff", "--failed-first"), "failedfirst", {"action": "store_true"}),
    (("--nf", "--new-first"), "newfirst", {"action": "store_true"}),
    (("--cache-show",), "cacheshow", {"action": "append", "nargs": "?"}),
    (("--cache-clear",), "cacheclear", {"action": "store_true"}),
    (("--lfnf", "--last-failed-no-failures"), "last_failed_no_failures", {"action": "store"}),
    (("--sw", "--stepwise"), "stepwise", {"action": "store_true"}),
    (("--sw-skip", "--stepwise-skip"), "stepwise_skip", {"action": "store_true"}),
    (("--sw-reset", "--stepwise-reset"), "stepwise_reset", {"action": "store_true"}),
)


def pytest_addoption(parser):
    group = parser.getgroup("selfix")
    for names, dest, kwargs in _CACHE_OPTIONS:
        try:
            group.addoption(*names, dest=dest, default=None, help="(ignored under selfix)", **kwargs)
        except ValueError:  # the cache plugin is active after all: its own options stand
            return


def _cache_overrides(option):
    """The cache options the project's configuration gave, undone (selfix chooses which tests run)."""
    notes = []
    for names, dest, _ in _CACHE_OPTIONS:
        if getattr(option, dest, None):
            notes.append(f"{names[0]} -> ignored (selfix chooses the tests each run runs)")
            setattr(option, dest, None)
    return notes


def _overrides(config):
    """Change what the project's pytest configuration (``addopts`` in any ini file, ``PYTEST_ADDOPTS``, the test
    command) asks of plugins that would make selfix's runs slow or differ from one another; a note for each.

    Only options that exist are touched: an option exists exactly when its plugin is active in this run (installed
    and not blocked with ``-p no:...``), so nothing is assumed about the project's environment, and no flag selfix
    would add on the command line can break the parsing of a run where the plugin is absent."""
    option = config.option
    notes = _cache_overrides(option)
    # pytest-xdist: workers would re-import and re-collect the project in fresh processes on every run, and the
    # controller collects nothing, so the hot worker (plugin/selfix_hotswap.py) would never see a test.
    workers = getattr(option, "numprocesses", None)
    if workers or getattr(option, "tx", None):
        option.numprocesses = 0
        option.dist = "no"
        option.tx = []
        shown = f"-n {workers}" if workers else "--tx"
        notes.append(f"{shown} -> no xdist workers (selfix runs candidates side by side itself)")
    if workers is not None or hasattr(option, "dist"):
        _no_rerun_server()
    # pytest-randomly: a random order and a new seed per run would make the baseline and a candidate's runs differ.
    # It stays active with one seed (it still reseeds random, Faker, numpy before each test) and the file order.
    if hasattr(option, "randomly_seed"):
        seed = option.randomly_seed
        pinned = isinstance(seed, int) and not isinstance(seed, bool)
        if not pinned:
            option.randomly_seed = RANDOMLY_SEED
        changed = []
        if getattr(option, "randomly_reorganize", False):
            option.randomly_reorganize = False
            changed.append("random order -> file order")
        if not pinned:
            changed.append(f"seed {RANDOMLY_SEED} in every run")
        if changed:
            notes.append(f"pytest-randomly: {', '.join(changed)} (every run sees the same order and random state)")
    # A test module that fails to import interrupts pytest before any test runs: the CI report holds that one
    # error, and selfix would have no passing test to guard. The other modules' tests run (said when it happens).
    option.continue_on_collection_errors = True
    # -x / --maxfail: selfix needs every asked test's result (a baseline's, a confirmation's); it asks for the
    # first failure only itself (its own -x, with SELFIX_STOP_FIRST=1).
    if option.maxfail and os.environ.get("SELFIX_STOP_FIRST") != "1":
        notes.append(f"-x/--maxfail={option.maxfail} -> every test runs (selfix needs each test's result)")
        option.maxfail = 0
    # pytest-rerunfailures: a rerun repeats every failing candidate's tests and hides a failure behind a pass.
    if hasattr(option, "reruns"):
        reruns = option.reruns
        if reruns is None:
            try:
                reruns = int(config.getini("reruns"))
            except (TypeError, ValueError, KeyError):
                reruns = 0
        if reruns:
            option.reruns = 0
            notes.append(f"--reruns {reruns} -> --reruns 0 (each test runs once; a failure is a failure)")
        if getattr(option, "force_reruns", None):
            notes.append(f"--force-reruns {option.force_reruns} -> off")
            option.force_reruns = None
    return notes


def _no_rerun_server():
    """pytest-rerunfailures beside pytest-xdist opens a TCP server in pytest_configure (its crash bookkeeping for
    xdist workers), even without workers; where the sandbox allows no TCP socket (the landlock level) the run dies
    there. With selfix there are no workers: its in-process bookkeeping (``StatusDB``) is all it needs."""
    module = sys.modules.get("pytest_rerunfailures")
    if module is not None and isinstance(getattr(module, "StatusDB", None), type):
        if isinstance(getattr(module, "ServerStatusDB", None), type):
            module.ServerStatusDB = module.StatusDB


def pytest_cmdline_main(config):
    """Before any plugin acts on its options (pytest_configure): selfix's overrides, recorded for the report."""
    notes = _overrides(config)
    if notes:
        _emit({"event": "config_overrides", "notes": notes})


def _full_assertions(config):
    """Assertion messages with whole values, as ``-vv`` gives them: at assertion verbosity below 2 pytest
    shortens each compared repr ('git push --f...th-lease') and cuts the explanation, and the engines then read
    (and the offline templates build literals from) text that is not in the program. pytest 8 and up read the
    ``verbosity_assertions`` level through ``config.get_verbosity``: only that level is raised, so the terminal
    output keeps the project's verbosity. Older pytest reads ``config.option.verbose`` for both. Which tests run
    does not change."""
    get_verbosity = getattr(config, "get_verbosity", None)
    kind = getattr(type(config), "VERBOSITY_ASSERTIONS", None)
    if get_verbosity is not None and kind is not None:

        def verbosity(verbosity_type=None):
            level = get_verbosity(verbosity_type)
            return max(level, 2) if verbosity_type == kind else level

        config.get_verbosity = verbosity
        return
    verbose = getattr(config.option, "verbose", 0)
    if isinstance(verbose, int) and verbose < 2:
        config.option.verbose = 2


class _Formatting:
    """While pytest formats a test's failure, coverage is recorded in the test's formatting context."""

    def __enter__(self):
        nodeid = _state["nodeid"]
        _state["formatting"] += 1
        if nodeid is not None and _state["formatting"] == 1:
            _switch(nodeid + _FORMATTING)

    def __exit__(self, *exc):
        _state["formatting"] -= 1
        nodeid = _state["nodeid"]
        if nodeid is not None and _state["formatting"] == 0:
            _switch(nodeid)
        return False


def _switch(context):
    cov = _state["cov"]
    if cov is not None:
        cov.switch_context(context)
    if _state["lines"] is not None:
        _state["lines"].switch(context)


def _formatted(function):
    def formatting(*args, **kwargs):
        with _Formatting():
            return function(*args, **kwargs)

    formatting._selfix_formatting = True
    return formatting


def _record_formatting_apart():
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    for name in _FORMATTERS:
        function = getattr(rewrite, name, None)
        if callable(function) and not getattr(function, "_selfix_formatting", False):
            setattr(rewrite, name, _formatted(function))


def pytest_configure(config):
    _select(config)
    _full_assertions(config)
    if not _WANT_COVERAGE:
        return
    _record_formatting_apart()
    try:
        if _LINE_COLLECTOR == "always":
            raise ImportError("selfix's line collector was asked for")
        import coverage
    except ImportError:
        if _LINE_COLLECTOR == "never":
            _emit({"event": "coverage_unavailable", "reason": "coverage.py is not installed in the test environment"})
            return
        lines = LineCollector(_ROOT)
        lines.start()
        _state["lines"] = lines
        return
    cov = coverage.Coverage(data_file=None, source=[_ROOT], config_file=False)
    cov.start()
    _state["cov"] = cov


def _plugin_names(config):
    names = set()
    try:
        pairs = config.pluginmanager.list_plugin_distinfo()
    except Exception:  # an old or odd pluggy: no names, nothing else lost
        return []
    for _plugin, dist in pairs:
        name = getattr(dist, "project_name", None)
        if not name:
            try:
                name = dist.metadata["name"]
            except Exception:
                name = None
        if name:
            names.add(str(name))
    return sorted(names)


def _root_fixtures(session):
    """Fixtures a test module at the repository's root sees: pytest's own, the plugins', the root conftest's."""
    manager = session._fixturemanager
    # The registry's name changed over the years; only its keys (the fixture names) are read.
    names = {}
    for attr in ("_arg2node2fixturedefs", "_arg2nodeid2fixturedefs", "_arg2fixturedefs"):
        names = getattr(manager, attr, None) or names
    found = {}
    for name in list(names):
        if name.startswith("_") or name == "request":
            continue
        try:
            defs = manager.getfixturedefs(name, session)  # pytest >= 8: a node
        except (TypeError, AttributeError):
            defs = manager.getfixturedefs(name, "")  # older: a node id
        if not defs:
            continue  # defined deeper (a test folder's conftest.py, a test module): not visible at the root
        module = getattr(getattr(defs[-1], "func", None), "__module__", "") or ""
        if module.startswith("_pytest") or module == "pytest":
            origin = "pytest"
        elif module == "conftest" or module.endswith("conftest"):
            origin = "conftest.py"
        else:
            origin = module.split(".")[0]
        found[name] = origin
    return sorted(found.items())


def pytest_collection_finish(session):
    if not _OUT:
        return
    try:
        fixtures = _root_fixtures(session)
        plugins = _plugin_names(session.config)
    except Exception:  # never fail a run over what is only a hint for the prompt
        return
    python = sys.version.split()[0]  # the interpreter the tests run on: the prompts state it
    _emit({"event": "test_environment", "plugins": plugins, "fixtures": fixtures, "python": python})


def pytest_runtest_logstart(nodeid, location):
    _emit({"event": "start", "nodeid": nodeid})
    _state["nodeid"] = nodeid
    _switch(nodeid)


_LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost", "0.0.0.0", "::")


def _loopback_address(frame_locals):
    """``host:port`` when the frame holds a loopback socket address (a tuple, or ``host`` and ``port``)."""
    pairs = [value for value in frame_locals.values() if isinstance(value, tuple) and len(value) in (2, 4)]
    pairs.append((frame_locals.get("host"), frame_locals.get("port")))
    for pair in pairs:
        host, port = pair[0], pair[1]
        if isinstance(host, str) and host in _LOOPBACK_HOSTS and type(port) is int and 0 < port < 65536:
            return f"{host}:{port}"
    return ""


def _connect_address(value):
    """The loopback address a failed connection was aimed at: found in the locals of the traceback's frames
    (``socket.create_connection``'s ``address``, a client's ``(host, port)``), innermost first, of the first
    OSError in the exception's chain; "" when there is none. A ``ConnectionRefusedError`` names no port, and
    ``repair.services`` needs it to say which service was missing."""
    try:
        seen = 0
        while value is not None and not isinstance(value, OSError) and seen < 5:
            value = value.__cause__ or value.__context__
            seen += 1
        if not isinstance(value, OSError):
            return ""
        frames = []
        tb = value.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        for frame in reversed(frames[-20:]):
            found = _loopback_address(frame.f_locals)
            if found:
                return found
    except Exception:  # only a hint: never fail a run over it
        return ""
    return ""


def _notes(value):
    """The exception's notes (PEP 678), as Python prints them after its message: where Hypothesis puts the shrunk
    "Falsifying example:" of a property test (on an exception group, its first exception's too)."""
    try:
        notes = list(getattr(value, "__notes__", None) or ())
        inner = getattr(value, "exceptions", None)
        if inner:
            notes += list(getattr(inner[0], "__notes__", None) or ())
        return "".join("\n" + str(note) for note in notes[:10])
    except Exception:  # only more text: never fail a run over it
        return ""


def pytest_runtest_makereport(item, call):
    # Keep the real exception (type, message, frames); pytest's text rendering varies with --tb and version.
    excinfo = call.excinfo
    if excinfo is None or item.nodeid in _state["exc"]:
        return
    value = excinfo.value
    if type(value).__name__ in ("Skipped", "XFailed"):
        return
    frames = []
    for entry in traceback.extract_tb(value.__traceback__):
        frames.append({"file": entry.filename, "line": entry.lineno, "function": entry.name, "code": entry.line or ""})
    message = str(value) + _notes(value)
    _state["exc"][item.nodeid] = {
        "exc_type": type(value).__name__,
        "message": message[:4000],
        "frames": frames[-60:],
        "phase": call.when,
        "address": _connect_address(value),
    }


def pytest_runtest_logreport(report):
    phases = _state["phases"].setdefault(report.nodeid, {})
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "skipped" if report.skipped else "failed"
    phases[report.when] = (outcome, report.duration)


def _status(phases):
    setup = phases.get("setup", ("passed", 0))[0]
    call = phases.get("call", ("passed", 0))[0]
    teardown = phases.get("teardown", ("passed", 0))[0]
    if setup == "failed":
        return "error"
    if setup == "skipped" or call == "skipped":
        return "skipped"
    if call == "failed":
        return "failed"
    if teardown == "failed":
        return "error"
    return "passed"


def pytest_runtest_logfinish(nodeid, location):
    _state["nodeid"] = None
    cov = _state["cov"]
    if cov is not None:
        cov.switch_context("")
    if _state["lines"] is not None:
        _state["lines"].switch(None)
    phases = _state["phases"].pop(nodeid, {})
    record = {
        "event": "result",
        "nodeid": nodeid,
        "status": _status(phases),
        "duration": sum(duration for _, duration in phases.values()),
    }
    record.update(_state["exc"].pop(nodeid, {}))
    _emit(record)


def pytest_collectreport(report):
    if report.failed:
        if not _state.get("collection_error_noted"):
            _state["collection_error_noted"] = True
            note = "a test module failed to collect -> the other modules' tests still run"
            _emit({"event": "config_overrides", "notes": [note]})
        _emit(
            {
                "event": "result",
                "nodeid": report.nodeid or "<collection>",
                "status": "error",
                "duration": 0.0,
                "exc_type": "CollectionError",
                "message": str(report.longreprtext)[-4000:],
                "frames": [],
            }
        )


def pytest_unconfigure(config):
    lines = _state["lines"]
    if lines is not None:
        _state["lines"] = None
        data = lines.stop()
        _emit({"event": "coverage", "python": sys.version.split()[0], "collector": lines.kind, "data": data})
    cov = _state["cov"]
    if cov is None:
        return
    _state["cov"] = None
    cov.stop()
    data = cov.get_data()
    by_test = {}
    for filename in data.measured_files():
        for lineno, contexts in data.contexts_by_lineno(filename).items():
            for context in contexts:
                if context and not context.endswith(_FORMATTING):
                    by_test.setdefault(context, {}).setdefault(filename, []).append(lineno)
    _emit({"event": "coverage", "python": sys.version.split()[0], "collector": "coverage.py", "data": by_test})
