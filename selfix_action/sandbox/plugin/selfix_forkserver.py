"""Warm pytest worker, run inside the sandbox with the project's own interpreter.

Interpreter start-up and importing pytest and its plugins cost most of a small test run. This worker pays that
once, then forks one child per request; each child runs ``pytest.main`` in a fresh process that imports the
project's (possibly patched) modules from disk. The worker itself never imports project code.

Protocol: one JSON request per line on stdin ({"args", "env", "log", "timeout"}), one JSON reply per line on the
original stdout ({"rc", "timed_out"}). The first line written is {"ready": true}.
"""

import json
import os
import select
import signal
import sys
import time


def _preload():
    import pytest  # noqa: F401

    try:
        from importlib.metadata import entry_points

        for entry in entry_points(group="pytest11"):
            try:
                entry.load()
            except Exception:
                pass  # pytest will report it the same way in the child
    except Exception:
        pass


def _exit_code(status):
    """A wait status as an exit code (negative: killed by that signal); os.waitstatus_to_exitcode is 3.9+."""
    if hasattr(os, "waitstatus_to_exitcode"):
        return os.waitstatus_to_exitcode(status)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _wait(pid, timeout):
    """Exit code of ``pid``, or None if it is still running after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return _exit_code(status)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if fd is not None:
                select.select([fd], [], [], left)
            else:
                time.sleep(min(left, 0.005))
    finally:
        if fd is not None:
            os.close(fd)  # one per check: a long heal would otherwise run the worker out of descriptors


def _reap(pid, timeout):
    """Wait for a child up to ``timeout`` seconds, kill its whole group, and say how it ended (the reply)."""
    code = _wait(pid, timeout)
    timed_out = code is None
    try:
        os.killpg(pid, signal.SIGKILL)  # on a timeout, and any background leftovers otherwise
    except (ProcessLookupError, PermissionError):
        pass
    if timed_out:
        os.waitpid(pid, 0)
    return {"rc": code, "timed_out": timed_out}


def _run_child(log_path, body):
    """In a forked child: its own process group (so a timeout kills everything it started), output to the log,
    then ``body()``'s exit code; never returns."""
    os.setpgid(0, 0)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    code = 70
    try:
        code = body()
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(code)


def _child(request):
    def body():
        os.environ.update(request["env"])
        import pytest

        return int(pytest.main(request["args"]))

    _run_child(request["log"], body)


def main():
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing but replies may reach the protocol channel
    _preload()
    replies.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        replies.write(json.dumps(_reap(pid, request["timeout"])) + "\n")


if __name__ == "__main__":
    main()
