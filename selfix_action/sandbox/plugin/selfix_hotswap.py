"""Hot pytest worker: import the project and collect its tests once, then fork per candidate and swap code.

Run as ``python -m selfix_hotswap PYTEST_ARGS...`` inside the sandbox with the project's interpreter. It runs
``pytest.main`` with those arguments; when collection is done, instead of running the tests it serves requests:
one JSON list per line on stdin, of checks {"files": {path: source}, "nodeids": [...], "stop_first": bool,
"results": path, "log": path, "timeout": seconds, optional "cpu_seconds": the child's CPU limit}. Each check is
served by a forked child, all of a line's at once (several cores): it compiles the patched sources, swaps the new
code objects into the already-imported functions (matched by qualified name), runs the requested test items
through pytest's normal runtest protocol and exits. The worker itself is never modified. The reply is a list of
{"rc": int | None, "timed_out": bool}, one per check; rc 75 means "cannot swap this patch, run it another way",
76 "a requested test is not among the collected ones". The first line written is {"ready": true, ...}.
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
        for path, source in request["files"].items():
            if not _swap(path, source, functions):
                return UNSWAPPABLE
        selected = []
        for nodeid in request["nodeids"]:
            if nodeid not in items:
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


def _code_objects(code, found):
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.setdefault(const.co_qualname, []).append(const)
            _code_objects(const, found)
    return found


def _key(code):
    """What a code object does, without its line numbers (a splice elsewhere may shift them)."""
    consts = tuple(_key(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c)) for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, consts)


def _swap(path, source, functions):
    """Point every live function defined in ``path`` whose code changed at its new code; False if impossible."""
    filenames = [name for name in functions if name and os.path.realpath(name) == os.path.realpath(path)]
    if not filenames:
        return True  # nothing from this file is imported yet: it will be imported from disk (patched)
    for filename in filenames:
        new = _code_objects(compile(source, filename, "exec", dont_inherit=True), {})
        for function in functions[filename]:
            old = function.__code__
            choices = new.get(old.co_qualname, [])
            if any(c == old for c in choices):
                continue  # unchanged, lines included (the usual case: a fast comparison in C)
            old_key = _key(old)
            if any(_key(c) == old_key for c in choices):
                continue  # unchanged but moved (lines shifted by an edit above it)
            if len(choices) != 1:
                return False  # gone, or ambiguous (several changed definitions with one qualified name)
            replacement = choices[0]
            if replacement.co_freevars != old.co_freevars:
                return False
            function.__code__ = replacement
    return True


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
