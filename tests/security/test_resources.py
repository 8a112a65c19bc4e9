"""Resource attacks: fork bomb, memory bomb, CPU spin, output flood, a test that never ends."""

from __future__ import annotations

import os
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.process import GiB, Limits, memory_cap, run_process, sandbox_env
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.isolation import (
    ATTACK,
    CANARY,
    RunAttack,
    assert_blocked,
    hostile_project,
    need_level,
    need_process_limit,
    python_for,
)
from tests.helpers.projects import write_project

MiB = 1024**2

# Each process forks at most FANOUT children and the tree is at most two levels deep, so even with the
# limit broken this "bomb" stays below 300 processes (and dies with the run). With the limit it stops at 40.
FORK_BOMB = """
import os, time
FANOUT = 16
made, refused = 0, None
for _ in range(4 * FANOUT):  # more than the 40-process limit alone: refused whatever order the forks run in
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


def _own_uid(isolation: Isolation, base: int) -> Isolation:
    """``isolation`` with a sandbox uid of its own (one per level: the [best] and [landlock] halves may run at once
    on two test workers), so that a bomb cannot starve sandboxes other test workers run as 65534 and the count of
    the uid's processes is this test's alone."""
    need_process_limit(isolation)
    if isolation.uid is None:
        return isolation
    uid = base - (isolation.level is IsolationLevel.LANDLOCK)
    mode = isolation.level.value
    own = detect_isolation(IsolationConfig(mode=mode, sandbox_uid=uid, sandbox_gid=uid))
    need_process_limit(own)
    return own


def _live(pids: list[int]) -> list[int]:
    """Those of ``pids`` that still run (a zombie holds nothing but its pid)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            alive.append(pid)
    return alive


def _gone_eventually(pids_now: Callable[[], list[int]], bound: float = 30.0) -> list[int]:
    """Poll (generously bounded) until ``pids_now()`` is empty; what is left then (zombies are reaped by the
    container's init, which takes its time)."""
    deadline = time.monotonic() + bound
    while (left := pids_now()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_fork_bomb_is_bounded_by_the_process_limit(run_attack: RunAttack, isolation: Isolation) -> None:
    need_process_limit(isolation)
    # A uid of its own, so that the bomb cannot starve sandboxes that other test workers run as 65534.
    own = _own_uid(isolation, 64999)
    started = time.monotonic()
    run, _ = run_attack(FORK_BOMB, limits=Limits(wall_seconds=30, max_processes=40), use_isolation=own)
    assert_blocked(run, "AssertionError")
    assert "fork refused" in run.results[ATTACK].message
    assert time.monotonic() - started < 25
    if own.uid is not None:
        uid = own.uid
        assert _live(_processes_of(uid)) == [], "processes of the sandbox uid survived the run"
        assert _gone_eventually(lambda: _processes_of(uid)) == []


# A real bomb: fork until refused, every child sleeping forever (in a process group of its own, so the run's
# group kill misses it), then fail with the count. With RLIMIT_NPROC = CAP the uid holds CAP processes at most:
# pytest itself and CAP - 1 children.
UNBOUNDED_BOMB = """
import os, time
made = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        time.sleep(10**6)
        os._exit(0)
    made += 1
assert False, f"made {made} children"
"""


class _Peak:
    """The highest number of processes of ``uid`` seen while it runs (a poller in a thread: a lower bound of the
    true peak, which the kernel's own count bounds from above)."""

    def __init__(self, uid: int) -> None:
        self.uid, self.peak, self._stop = uid, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, len(_processes_of(self.uid)))

    def __enter__(self) -> _Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.slow
def test_a_real_fork_bomb_never_exceeds_the_cap_and_leaves_nothing(run_attack: RunAttack, isolation: Isolation) -> None:
    own = _own_uid(isolation, 64997)
    cap = 64
    if own.uid is None:
        pytest.skip("no dedicated sandbox uid to count the processes of")
    uid = own.uid
    assert _live(_processes_of(uid)) == []
    with _Peak(uid) as seen:
        run, _ = run_attack(UNBOUNDED_BOMB, limits=Limits(wall_seconds=60, max_processes=cap), use_isolation=own)
    assert_blocked(run, "AssertionError")
    # Exactly the cap: the pytest process and cap - 1 children, never more (and the poller saw no more).
    assert f"made {cap - 1} children" in run.results[ATTACK].message, run.results[ATTACK].message
    assert 0 < seen.peak <= cap, seen.peak
    # Nothing left: the run's sweep killed every sleeper, whatever its process group.
    assert _live(_processes_of(uid)) == [], "sleepers of the bomb survived the run"
    assert _gone_eventually(lambda: _processes_of(uid)) == []


@pytest.mark.slow
def test_a_fork_bomb_in_a_warm_check_leaves_the_next_run_its_share(run_attack: RunAttack, isolation: Isolation) -> None:
    """A bomb in a warm check (a child of the warm worker): its sleepers die with the check, so the next run gets
    the whole cap but the worker's own slot (they used to stay in the worker's session and starve every later
    run of the uid: 0 children)."""
    own = _own_uid(isolation, 64991)
    if own.uid is None:
        pytest.skip("no dedicated sandbox uid to count the processes of")
    uid, cap = own.uid, 64
    limits = Limits(wall_seconds=60, max_processes=cap)
    run, sandbox = run_attack(UNBOUNDED_BOMB, limits=limits, use_isolation=own, warm=True)
    assert sandbox.warm_runs == 1, sandbox._fork_disabled
    worker = set(sandbox._fork_server._processes.spare) if sandbox._fork_server is not None else set()
    # The worker holds one slot of the uid, its forked check child another: cap - 2 children.
    assert f"made {cap - 2} children" in run.results[ATTACK].message, run.results[ATTACK].message
    assert set(_live(_processes_of(uid))) <= worker
    for again in (sandbox.run_tests(), sandbox.run_tests(warm=True)):
        assert f"made {cap - 2} children" in again.results[ATTACK].message, again.results[ATTACK].message
    sandbox.close()
    assert _gone_eventually(lambda: _processes_of(uid)) == []


SLEEPERS = r"""
import os, subprocess, sys, time
pids = []
# A sleeper in its own process group, one that left the group after a double fork (an orphan), and one that
# tried setsid() (refused at landlock: then it leaves the group only).
pids.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(10**6)"], process_group=0).pid)
read, write = os.pipe()
if os.fork() == 0:
    if os.fork() == 0:
        os.setpgid(0, 0)
        os.write(write, str(os.getpid()).encode() + b"\n")
        time.sleep(10**6)
    os._exit(0)
pids.append(int(os.read(read, 64).split()[0]))
try:
    pids.append(subprocess.Popen(["sleep", "1000000"], start_new_session=True).pid)
except PermissionError:
    pids.append(subprocess.Popen(["sleep", "1000000"], process_group=0).pid)
with open(os.environ["SELFIX_ROOT"] + "/../sleepers.txt", "a") as handle:
    handle.write(" ".join(map(str, pids)) + "\n")
"""


def _sleepers(sandbox: PytestSandbox) -> list[int]:
    text = (sandbox.root.parent / "sleepers.txt").read_text()
    return [int(p) for p in text.split()]


def _host_pids(sandbox: PytestSandbox, pids: list[int]) -> list[int]:
    """Inside a pid namespace the project saw its own pids: those of the host are found by their command line."""
    return pids if sandbox.isolation is None or sandbox.isolation.level is IsolationLevel.LANDLOCK else []


def test_leftover_sleepers_are_killed_after_a_cold_run(run_attack: RunAttack, isolation: Isolation) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "a boundary the run's processes cannot leave")
    own = _own_uid(isolation, 64995)
    if own.uid is None:
        pytest.skip("no dedicated sandbox uid to count the processes of")
    uid = own.uid
    run, sandbox = run_attack(SLEEPERS, use_isolation=own)
    assert ATTACK in run.results and run.results[ATTACK].status is TestStatus.PASSED, run.output_tail
    assert len(_sleepers(sandbox)) == 3
    assert _live(_processes_of(uid)) == [], "a sleeper the run left behind survived it"
    assert _live(_host_pids(sandbox, _sleepers(sandbox))) == []


@pytest.mark.slow
def test_a_warm_check_leaves_no_sleeper_and_the_worker_survives(run_attack: RunAttack, isolation: Isolation) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "a boundary the run's processes cannot leave")
    own = _own_uid(isolation, 64993)
    if own.uid is None:
        pytest.skip("no dedicated sandbox uid to count the processes of")
    uid = own.uid
    run, sandbox = run_attack(SLEEPERS, use_isolation=own, warm=True)
    assert sandbox.warm_runs == 1, sandbox._fork_disabled
    assert run.results[ATTACK].status is TestStatus.PASSED, run.output_tail
    server = sandbox._fork_server
    assert server is not None
    # What runs as the uid now is the warm worker itself (its own process at bwrap; its session leader at landlock)
    # and nothing of the two runs (the cold one and the warm check) that planted six sleepers.
    worker = set(server._processes.spare)
    assert len(_sleepers(sandbox)) == 6
    assert set(_live(_processes_of(uid))) <= worker
    assert _live(_host_pids(sandbox, _sleepers(sandbox))) == []
    again = sandbox.run_tests(warm=True)  # the worker lived on
    assert sandbox.warm_runs == 2 and again.results[CANARY].status is TestStatus.PASSED
    sandbox.close()
    assert _live(_processes_of(uid)) == [], "the warm worker or a check's sleeper survived close()"


def test_the_memory_cap_is_derived_and_a_bomb_meets_it(isolation: Isolation, tmp_path: Path) -> None:
    """With enough parallel checks that the machine's share is about 1 GiB, a test allocating 2 GiB at once gets
    MemoryError (it would not under the 4 GiB ceiling), and the sandbox reports the cap it applied."""
    usable = memory_cap(4 * GiB, 1).usable
    assert usable is not None
    parallel = max(1, usable // GiB - 1)
    attack = "blob = bytearray(2 * 1024**3)\nassert len(blob) > 0\n"
    repo = write_project(tmp_path / "repo", hostile_project(attack))
    with PytestSandbox(
        repo,
        [python_for(isolation), "-m", "pytest"],
        limits=Limits(wall_seconds=60),
        scratch_parent=tmp_path,
        isolation=isolation,
        parallel_checks=parallel,
    ) as sandbox:
        report = sandbox.limits_report()
        run = sandbox.run_tests()
    # MemAvailable moves between two reads: the report's own figures, and the share they give.
    assert report["memory_bytes"] == sandbox.limits.memory_bytes
    assert report["memory_bytes"] == int(str(report["memory_usable_bytes"])) // (parallel + 1) < 2 * GiB
    assert f"/ ({parallel} parallel check(s) + 1)" in str(report["memory"])
    assert_blocked(run, "MemoryError")


def test_memory_bomb_gets_memory_error(run_attack: RunAttack) -> None:
    attack = """
    blocks = []
    while True:
        blocks.append(bytearray(64 * 1024 * 1024))
    """
    run, _ = run_attack(textwrap.dedent(attack), limits=Limits(wall_seconds=60, memory_bytes=1024 * MiB))
    assert_blocked(run, "MemoryError")


@pytest.mark.slow
def test_cpu_spin_is_killed_by_the_cpu_limit(run_attack: RunAttack) -> None:
    # The spin takes the whole pytest process down (SIGXCPU): a run cut by a limit, like a hang at the wall
    # limit, so the test it was in is recorded as the one that hung and the rest run without it.
    started = time.monotonic()
    run, sandbox = run_attack("while True:\n    pass\n", limits=Limits(wall_seconds=60, cpu_seconds=2))
    assert time.monotonic() - started < 40
    assert run.timed_out
    assert run.results[ATTACK].status is TestStatus.TIMEOUT
    assert run.results[ATTACK].message == "killed at its 2s CPU-time limit"
    assert run.results[CANARY].status is TestStatus.PASSED
    after = sandbox.run_tests([CANARY])  # the sandbox is still usable
    assert after.results[CANARY].status is TestStatus.PASSED


@pytest.mark.slow
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


@pytest.mark.slow
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
