"""The code under test can write to selfix's own channels: the collector's results file and, in the warm worker,
the fork server's reply pipe. Garbage there is skipped (results) or treated as a broken worker (cold fallback),
never a crash of selfix, and the real verdicts still come through."""

from __future__ import annotations

import pytest

from selfix_action.repair.values import TestStatus
from tests.helpers.isolation import ATTACK, CANARY, RunAttack

GARBAGE_RECORDS = r"""
import json, os
lines = [
    "[1, 2, 3]",
    "null",
    '"just a string"',
    "42",
    json.dumps({"no_event": True}),
    json.dumps({"event": 7, "nodeid": "x::y"}),
    json.dumps({"event": "start"}),
    json.dumps({"event": "start", "nodeid": ["not", "a", "string"]}),
    json.dumps({"event": "result", "nodeid": 5, "status": "passed"}),
    json.dumps({"event": "result", "nodeid": "fake::bogus_status", "status": "bogus"}),
    json.dumps({"event": "result", "nodeid": "fake::frames", "status": "failed", "frames": "nope"}),
    json.dumps({"event": "result", "nodeid": "fake::frame", "status": "failed", "frames": [{"file": 1}]}),
    json.dumps({"event": "result", "nodeid": "fake::dur", "status": "failed", "duration": {"a": 1}}),
    json.dumps({"event": "result", "nodeid": "fake::msg", "status": "failed", "message": ["x"]}),
    json.dumps({"event": "coverage", "data": "not a mapping"}),
    json.dumps({"event": "coverage", "data": {"t": {"f.py": "not lines"}}}),
    json.dumps({"event": "coverage_unavailable", "reason": {"x": 1}}),
    "[" * 100000,
    "{\"event\": \"result\", \"nodeid\": \"cut",
]
with open(os.environ["SELFIX_RESULTS"], "a", encoding="utf-8") as handle:
    handle.write("\n" + "\n".join(lines) + "\n")
"""


def test_garbage_in_the_results_file_is_skipped(run_attack: RunAttack) -> None:
    run, _ = run_attack(GARBAGE_RECORDS)
    assert run.results[ATTACK].status is TestStatus.PASSED, run.output_tail
    assert run.results[CANARY].status is TestStatus.PASSED
    assert not any(nodeid.startswith("fake::") or nodeid == "x::y" for nodeid in run.results)


FORGED_REPLIES = r"""
import os, stat
for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    if fd <= 2:
        continue
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.write(fd, b'["not", "a", "reply"]\n{"rc": "zero", "timed_out": "no"}\n')
    except OSError:
        pass
"""


@pytest.mark.slow
def test_a_forged_fork_server_reply_falls_back_to_a_cold_run(run_attack: RunAttack) -> None:
    run, sandbox = run_attack(FORGED_REPLIES, warm=True)
    # The warm worker's answer was garbage: it is dropped and the same tests ran cold, with real verdicts.
    assert sandbox.warm_runs == 0
    assert "malformed" in sandbox._fork_disabled
    assert run.results[ATTACK].status is TestStatus.PASSED, run.output_tail
    assert run.results[CANARY].status is TestStatus.PASSED
    again = sandbox.run_tests(warm=True)  # and the sandbox stays usable
    assert again.results[CANARY].status is TestStatus.PASSED
