"""pytest plugin that selfix loads into the project's own test process (``-p selfix_collector``).

It must run in whatever environment the project uses, so it needs only the standard library and pytest;
coverage.py is used when the project's environment has it. Results are appended to a JSON-lines file as
each test finishes, so a run that is killed for a timeout still tells which tests finished and which one hung.

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

_state = {"cov": None, "phases": {}, "exc": {}}


def _emit(record):
    if not _OUT:
        return
    with open(_OUT, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _select(config):
    path = os.environ.get("SELFIX_SELECT", "")
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        wanted = json.load(handle)
    if not isinstance(wanted, list) or not all(isinstance(a, str) for a in wanted):
        raise ValueError(f"SELFIX_SELECT: {path} does not hold a list of test ids")
    config.args = list(wanted)


def pytest_configure(config):
    _select(config)
    if not _WANT_COVERAGE:
        return
    try:
        import coverage
    except ImportError:
        _emit(
            {
                "event": "coverage_unavailable",
                "reason": "coverage.py is not installed in the test environment",
            }
        )
        return
    cov = coverage.Coverage(data_file=None, source=[_ROOT], config_file=False)
    cov.start()
    _state["cov"] = cov


def pytest_runtest_logstart(nodeid, location):
    _emit({"event": "start", "nodeid": nodeid})
    cov = _state["cov"]
    if cov is not None:
        cov.switch_context(nodeid)


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
    message = str(value)
    _state["exc"][item.nodeid] = {
        "exc_type": type(value).__name__,
        "message": message[:4000],
        "frames": frames[-60:],
        "phase": call.when,
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
    cov = _state["cov"]
    if cov is not None:
        cov.switch_context("")
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
                if context:
                    by_test.setdefault(context, {}).setdefault(filename, []).append(lineno)
    _emit({"event": "coverage", "python": sys.version.split()[0], "data": by_test})
