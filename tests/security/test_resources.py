"""Resource attacks: fork bomb, memory bomb, CPU spin, output flood, a test that never ends."""

from __future__ import annotations

import os
import signal
import textwrap
import time
import tracemalloc
from pathlib import Path

from selfix_action.engine.models import TestStatus
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.process import Limits, run_process, sandbox_env
from tests.security.conftest import (
    ATTACK,
    CANARY,
    RunAttack,
    assert_blocked,
    need_level,
    need_process_limit,
    python_for,
)

MiB = 1024**2

# Each process forks at most FANOUT children and the tree is at most two levels deep, so even with the
# limit broken this "bomb" stays below 300 processes (and dies with the run). With the limit it stops at 40.
FORK_BOMB = """
import os, time
FANOUT = 16
made, refused = 0, None
for _ in range(FANOUT):
    try:
        pid = os.fork()
    except OSError as exc:
        refused = exc
        break
    if pid == 0:
        for _ in range(FANOUT):
            try:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
            except OSError:
                break
        time.sleep(60)
        os._exit(0)
    made += 1
assert refused is None, f"fork refused after {made} children: {refused!r}"
"""


def _processes_of(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("Uid:") and int(line.split()[1]) == uid:
                    pids.append(int(entry))
    return pids


def test_fork_bomb_is_bounded_by_the_process_limit(run_attack: RunAttack, isolation: Isolation) -> None:
    need_process_limit(isolation)
    # A uid of its own, so that the bomb cannot starve sandboxes that other test workers run as 65534.
    own = isolation
    if isolation.uid is not None:
        own = detect_isolation(IsolationConfig(sandbox_uid=64999, sandbox_gid=64999))
        need_process_limit(own)
    started = time.monotonic()
    run, _ = run_attack(FORK_BOMB, limits=Limits(wall_seconds=30, max_processes=40), use_isolation=own)
    assert_blocked(run, "AssertionError")
    assert "fork refused" in run.results[ATTACK].message
    assert time.monotonic() - started < 25
    if own.uid is not None:
        time.sleep(0.2)
        assert _processes_of(own.uid) == [], "processes of the sandbox uid survived the run"


def test_memory_bomb_gets_memory_error(run_attack: RunAttack) -> None:
    attack = """
    blocks = []
    while True:
        blocks.append(bytearray(64 * 1024 * 1024))
    """
    run, _ = run_attack(textwrap.dedent(attack), limits=Limits(wall_seconds=60, memory_bytes=1024 * MiB))
    assert_blocked(run, "MemoryError")


def test_cpu_spin_is_killed_by_the_cpu_limit(run_attack: RunAttack) -> None:
    # The spin takes the whole pytest process down (SIGXCPU); selfix gets a result back and goes on.
    started = time.monotonic()
    run, sandbox = run_attack("while True:\n    pass\n", limits=Limits(wall_seconds=60, cpu_seconds=2))
    assert time.monotonic() - started < 40
    assert not run.timed_out
    assert run.returncode in (-signal.SIGXCPU, -signal.SIGKILL), run.returncode
    assert ATTACK not in run.results or run.results[ATTACK].status is not TestStatus.PASSED
    after = sandbox.run_tests([CANARY])  # the sandbox is still usable
    assert after.results[CANARY].status is TestStatus.PASSED


def test_test_that_sleeps_forever_times_out_and_the_rest_runs(run_attack: RunAttack) -> None:
    started = time.monotonic()
    run, _ = run_attack("import time\ntime.sleep(10**6)\n", limits=Limits(wall_seconds=4))
    assert time.monotonic() - started < 40
    assert run.timed_out
    assert run.results[ATTACK].status is TestStatus.TIMEOUT
    assert run.results[CANARY].status is TestStatus.PASSED


def test_100_mb_of_output_is_capped(isolation: Isolation, tmp_path: Path) -> None:
    code = """
        import sys
        chunk = b"A" * (1024 * 1024)
        for _ in range(100):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        print("still alive", file=sys.stderr)
    """
    tracemalloc.start()
    try:
        result = run_process(
            [python_for(isolation), "-c", textwrap.dedent(code)],
            cwd=tmp_path,
            env=sandbox_env(os.environ),
            limits=Limits(wall_seconds=60, max_output_bytes=1_000_000),
            isolation=isolation,
            writable=[tmp_path],
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.returncode == 0
    assert result.stdout_truncated
    assert len(result.stdout) < 1_100_000
    assert f"{100 * MiB - 1_000_000} bytes dropped" in result.stdout
    assert result.stderr == "still alive\n"
    assert peak < 10 * MiB


def test_100_mb_printed_by_a_failing_test_is_capped(run_attack: RunAttack) -> None:
    # pytest replays the captured output of a failing test: 100 MB through selfix's capped pipes.
    attack = 'print("B" * (100 * 1024 * 1024))\nassert False, "flood"\n'
    run, _ = run_attack(attack, limits=Limits(wall_seconds=60, max_output_bytes=1_000_000))
    assert_blocked(run, "AssertionError")
    assert len(run.output_tail) < 1_100_000


def test_process_that_leaves_the_group_dies_with_the_namespace(isolation: Isolation, tmp_path: Path) -> None:
    # Without a pid namespace a setsid() child escapes the group kill (a documented limit of plain runs);
    # in bwrap it is killed with the namespace when the command ends; at landlock setsid()/setpgid() are
    # refused by seccomp, so the child never leaves the group and dies with it.
    need_level(isolation, IsolationLevel.BWRAP, "a pid namespace or a seccomp filter against setsid")
    marker = tmp_path / "escaped-alive"
    code = f"""
        import subprocess
        try:
            subprocess.Popen(["sh", "-c", "sleep 1; touch {marker}"], start_new_session=True)
        except PermissionError:  # landlock refuses setsid(); leaving the group is allowed, the session kill reaches it
            subprocess.Popen(["sh", "-c", "sleep 1; touch {marker}"], process_group=0)
    """
    result = run_process(
        [python_for(isolation), "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        env=sandbox_env(os.environ),
        limits=Limits(wall_seconds=30),
        isolation=isolation,
        writable=[tmp_path],
    )
    assert result.returncode == 0
    assert result.duration < 1
    time.sleep(2)
    assert not marker.exists()
