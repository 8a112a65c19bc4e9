"""Hot pytest worker: import the project and collect its tests once, then fork per candidate and swap code.

Run as ``python -m selfix_hotswap PYTEST_ARGS...`` inside the sandbox with the project's interpreter. It runs
``pytest.main`` with those arguments; when collection is done, instead of running the tests it serves requests:
one JSON list per line on stdin, of checks {"files": {path: source}, "originals": {path: unpatched source},
"nodeids": [...], "stop_first": bool, "results": path, "log": path, "timeout": seconds, optional "cpu_seconds":
the child's CPU limit}. Each check is served by a forked child, all of a line's at once (several cores): it
compiles the patched sources, swaps the new code objects into the already-imported functions (matched by
qualified name; before Python 3.11, whose code objects carry no ``co_qualname``, the name is worked out from the
nesting of the compiled unpatched source), runs the requested test items through pytest's normal runtest
protocol and exits. The worker itself is never modified. The reply is a list of {"rc": int | None,
"timed_out": bool}, one per check; rc 75 means "cannot swap this patch, run it another way", 76 "a requested
test is not among the collected ones". The first line written is {"ready": true, ...}.
"""

import functools
import gc
import json
import os
import sys
import time
import types

from selfix_forkserver import _reap, _run_child

UNSWAPPABLE = 75
UNKNOWN_TEST = 76
# CO_OPTIMIZED | CO_NEWLOCALS: the code of a function (its nested definitions are "<name>.<locals>.x"), not of a
# class body (whose methods are "<Class>.x").
_FUNCTION_FLAGS = 0x0001 | 0x0002


class _Server:
    def __init__(self, replies, requests):
        self.replies = replies
        self.requests = requests  # the original stdin: pytest replaces sys.stdin while it runs
        self.failed = False

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed = True

    def pytest_runtestloop(self, session):
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            self.replies.write(json.dumps({"ready": False, "reason": "collection errors"}) + "\n")
            return True
        items = {item.nodeid: item for item in session.items}
        functions = {}
        for obj in gc.get_objects():
            if isinstance(obj, types.FunctionType):
                functions.setdefault(obj.__code__.co_filename, []).append(obj)
        # Everything alive now is shared with every forked child: keep the child's collector from walking it
        # (each walk would touch, and so copy, every page of the imported project and pytest).
        gc.freeze()
        self.replies.write(json.dumps({"ready": True, "items": len(items)}) + "\n")
        for line in self.requests:
            children = []
            for request in json.loads(line):  # several candidates' checks at once: one child each (several cores)
                pid = os.fork()
                if pid == 0:
                    _run_child(request["log"], functools.partial(self._check, request, items, functions))
                children.append((pid, time.monotonic() + request["timeout"]))
            replies = [_reap(pid, max(0.0, deadline - time.monotonic())) for pid, deadline in children]
            self.replies.write(json.dumps(replies) + "\n")
        return True

    def _check(self, request, items, functions):
        """In the forked child: swap the patch in, run the requested items; the exit code."""
        if request.get("cpu_seconds"):
            import resource

            # A fork starts with zero CPU time: this caps the candidate's own run (soft: SIGXCPU, hard: SIGKILL).
            soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
            cpu = int(request["cpu_seconds"])
            if soft == resource.RLIM_INFINITY or cpu < soft:
                new_hard = cpu + 1 if hard == resource.RLIM_INFINITY else min(hard, cpu + 1)
                resource.setrlimit(resource.RLIMIT_CPU, (cpu, new_hard))
        originals = request.get("originals", {})
        for path, source in request["files"].items():
            try:
                swapped = _swap(path, source, originals.get(path), functions)
            except Exception:  # a failure of the swap itself, not of the project: run this check another way
                import traceback

                traceback.print_exc()
                swapped = False
            if not swapped:
                return UNSWAPPABLE
        selected = []
        for nodeid in request["nodeids"]:
            if nodeid not in items:
                sys.stderr.write(f"selfix hot worker: {nodeid} is not among the collected tests\n")
                return UNKNOWN_TEST
            selected.append(items[nodeid])
        import selfix_collector

        selfix_collector._OUT = request["results"]
        for index, item in enumerate(selected):
            last = request["stop_first"] and self.failed
            following = selected[index + 1] if index + 1 < len(selected) and not last else None
            item.ihook.pytest_runtest_protocol(item=item, nextitem=following)
            if request["stop_first"] and self.failed:
                break
        return 1 if self.failed else 0


def _code_objects(code, found, prefix=""):
    """Every code object nested in ``code``, by qualified name."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            qualname = _qualname(const, prefix)
            found.setdefault(qualname, []).append(const)
            nested = ".<locals>." if const.co_flags & _FUNCTION_FLAGS == _FUNCTION_FLAGS else "."
            _code_objects(const, found, qualname + nested)
    return found


def _qualname(code, prefix):
    # Python 3.11+ records it; before, it is the enclosing definitions' names (``prefix``) and the code's own.
    return getattr(code, "co_qualname", None) or prefix + code.co_name


def _old_qualnames(original, filename):
    """Before Python 3.11: the qualified name of each code object of the unpatched source, by what identifies it
    (a live function's code is equal to its counterpart compiled from the same source)."""
    if original is None:
        return None
    names = {}
    for qualname, codes in _code_objects(compile(original, filename, "exec", dont_inherit=True), {}).items():
        for code in codes:
            names[(code.co_name, code.co_firstlineno, code.co_code)] = qualname
    return names


def _key(code):
    """What a code object does, without its line numbers (a splice elsewhere may shift them)."""
    consts = tuple(_key(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c)) for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, consts)


def _swap(path, source, original, functions):
    """Point every live function defined in ``path`` whose code changed at its new code; False if impossible."""
    filenames = [name for name in functions if name and os.path.realpath(name) == os.path.realpath(path)]
    if not filenames:
        return True  # nothing from this file is imported yet: it will be imported from disk (patched)
    for filename in filenames:
        new = _code_objects(compile(source, filename, "exec", dont_inherit=True), {})
        old_names = None if hasattr(types.CodeType, "co_qualname") else _old_qualnames(original, filename)
        for function in functions[filename]:
            old = function.__code__
            if old_names is None:
                if not hasattr(old, "co_qualname"):
                    return _unswappable("no unpatched source to match definitions by (Python < 3.11)", old)
                qualname = old.co_qualname
            else:
                qualname = old_names.get((old.co_name, old.co_firstlineno, old.co_code))
                if qualname is None:  # defined by exec, or stale
                    return _unswappable("not among the unpatched file's definitions", old)
            choices = new.get(qualname, [])
            if any(c == old for c in choices):
                continue  # unchanged, lines included (the usual case: a fast comparison in C)
            old_key = _key(old)
            if any(_key(c) == old_key for c in choices):
                continue  # unchanged but moved (lines shifted by an edit above it)
            if len(choices) != 1:
                return _unswappable(f"{len(choices)} definitions of {qualname} in the patch", old)
            replacement = choices[0]
            if replacement.co_freevars != old.co_freevars:
                return _unswappable("its closure changed", old)
            function.__code__ = replacement
    return True


def _unswappable(reason, code):
    """False, with the reason in the check's log (the host then runs the check another way)."""
    sys.stderr.write(
        f"selfix hot worker: cannot swap {code.co_name} ({code.co_filename}:{code.co_firstlineno}): {reason}\n"
    )
    return False


def main():
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    requests = os.fdopen(os.dup(0), "r")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    import pytest

    server = _Server(replies, requests)
    pytest.main(sys.argv[1:], plugins=[server])
    replies.write(json.dumps({"ready": False, "reason": "pytest ended"}) + "\n")


if __name__ == "__main__":
    main()
