"""Sandbox tests with real subprocesses: timeouts, process groups, output caps, env filtering, rlimits.

Timing assertions are deliberately loose (a 1 s timeout must return in under 30 s): they prove "does not
hang", not speed, so a loaded CI machine does not make them flaky.
"""

from __future__ import annotations

import errno
import gc
import json
import os
import signal
import sys
import textwrap
import time
import tracemalloc
import warnings
from pathlib import Path

import pytest

from selfix_action.errors import SandboxError
from selfix_action.sandbox import process
from selfix_action.sandbox.process import (
    SAFE_ENV_NAMES,
    Limits,
    ProcessResult,
    is_secret_name,
    run_process,
    sandbox_env,
)

MiB = 1024**2


def py(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def run(argv: list[str], cwd: Path, limits: Limits | None = None, stdin_data: str | None = None) -> ProcessResult:
    env = sandbox_env(os.environ)
    return run_process(argv, cwd=cwd, env=env, limits=limits or Limits(), stdin_data=stdin_data)


def is_gone(pid: int, within: float = 5.0) -> bool:
    """True once ``pid`` is dead. Zombies count as dead: PID 1 in a container may never reap them."""
    deadline = time.monotonic() + within
    while True:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


# --- timeouts and process groups ---------------------------------------------------------------------------


def test_hanging_child_is_killed_by_the_wall_timeout(tmp_path: Path) -> None:
    result = run(["sleep", "60"], tmp_path, Limits(wall_seconds=1))
    assert result.timed_out
    assert result.returncode is None
    assert 0.5 < result.duration < 30


def test_timeout_kills_grandchildren_too(tmp_path: Path) -> None:
    code = """
        import subprocess, time
        grandchild = subprocess.Popen(["sleep", "60"])
        print(grandchild.pid, flush=True)
        time.sleep(60)
    """
    result = run(py(code), tmp_path, Limits(wall_seconds=1))
    assert result.timed_out
    assert result.duration < 30
    assert is_gone(int(result.stdout.split()[0]))


def test_child_ignoring_sigterm_is_still_killed(tmp_path: Path) -> None:
    code = """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(60)
    """
    result = run(py(code), tmp_path, Limits(wall_seconds=1))
    assert result.timed_out
    assert result.duration < 30
    assert result.stdout == "ready\n"  # output written before the kill is kept


def test_background_grandchild_holding_the_pipes_does_not_hang(tmp_path: Path) -> None:
    # The shell exits at once; its background sleep inherited stdout/stderr and would keep them open.
    result = run(["sh", "-c", "sleep 60 & echo $!"], tmp_path, Limits(wall_seconds=20))
    assert not result.timed_out
    assert result.returncode == 0
    assert result.duration < 10
    assert is_gone(int(result.stdout.strip()))


def test_grandchild_that_escaped_the_group_does_not_hang(tmp_path: Path) -> None:
    # setsid() takes the sleep out of our process group, so killpg cannot reach it: run_process must
    # still return (after its drain grace), not block on the pipes the sleep holds.
    code = """
        import subprocess
        print(subprocess.Popen(["sleep", "60"], start_new_session=True).pid, flush=True)
    """
    result = run(py(code), tmp_path, Limits(wall_seconds=20))
    escaped = int(result.stdout.split()[0])
    try:
        assert not result.timed_out
        assert result.returncode == 0
        assert result.duration < 15
    finally:
        os.kill(escaped, signal.SIGKILL)


def test_exit_and_timeout_are_detected_without_pidfd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Kernels before 5.3 have no pidfd_open(); the loop then polls for the exit instead.
    monkeypatch.setattr(process, "_open_pidfd", lambda pid: None)
    result = run(["sh", "-c", "sleep 60 & echo hi; exit 4"], tmp_path, Limits(wall_seconds=20))
    assert (result.returncode, result.stdout, result.timed_out) == (4, "hi\n", False)
    assert result.duration < 10
    result = run(["sleep", "60"], tmp_path, Limits(wall_seconds=1))
    assert result.timed_out
    assert result.duration < 30


# --- output ------------------------------------------------------------------------------------------------


def test_output_flood_is_truncated_without_holding_it_in_memory(tmp_path: Path) -> None:
    # 50 MiB on each stream, interleaved: a reader that drains only one stream at a time would deadlock.
    code = """
        import sys
        chunk = b"x" * 65536
        for _ in range(800):
            sys.stdout.buffer.write(chunk)
            sys.stderr.buffer.write(chunk)
    """
    tracemalloc.start()
    try:
        result = run(py(code), tmp_path, Limits(wall_seconds=60))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.returncode == 0
    assert peak < 10 * MiB
    dropped = 800 * 65536 - 1_000_000
    for text, truncated in (
        (result.stdout, result.stdout_truncated),
        (result.stderr, result.stderr_truncated),
    ):
        assert truncated
        assert text == "x" * 1_000_000 + f"\n[selfix: output truncated, {dropped} bytes dropped]\n"


def test_truncation_marker_counts_dropped_bytes(tmp_path: Path) -> None:
    result = run(py("print('hello world')"), tmp_path, Limits(max_output_bytes=5))
    assert result.stdout == "hello\n[selfix: output truncated, 7 bytes dropped]\n"
    assert result.stdout_truncated
    assert not result.stderr_truncated


def test_small_output_is_kept_whole_and_bad_utf8_replaced(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.buffer.write(b'ok \\xff\\n'); sys.stderr.write('warn\\n'); sys.exit(3)"
    result = run(py(code), tmp_path)
    assert result.returncode == 3
    assert result.stdout == "ok \ufffd\n"
    assert result.stderr == "warn\n"
    assert not (result.stdout_truncated or result.stderr_truncated or result.timed_out)
    assert result.argv == (sys.executable, "-c", code)


def test_stdin_is_empty_by_default(tmp_path: Path) -> None:
    result = run(py("import sys; print(repr(sys.stdin.read()))"), tmp_path, Limits(wall_seconds=20))
    assert result.stdout == "''\n"


def test_stdin_data_larger_than_a_pipe_is_fed_while_output_is_read(tmp_path: Path) -> None:
    data = "line é\n" * 300_000  # ~2.4 MB: child echoes as it reads, so both pipes fill up
    code = """
        import sys
        for line in sys.stdin:
            sys.stdout.write(line)
    """
    result = run(py(code), tmp_path, Limits(max_output_bytes=4 * MiB), stdin_data=data)
    assert result.returncode == 0
    assert result.stdout == data


# --- environment -------------------------------------------------------------------------------------------

SECRETS = {
    "GITHUB_TOKEN": "ghs_secret1",
    "ANTHROPIC_API_KEY": "sk-ant-secret2",
    "MY_SERVICE_PASSWORD": "secret3",
    "AWS_SECRET_ACCESS_KEY": "secret4",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://secret5",
    "INPUT_API-KEY": "secret6",
}


def test_secrets_never_reach_the_child_even_when_allowed(tmp_path: Path) -> None:
    source = {
        **SECRETS,
        "PATH": os.environ["PATH"],
        "PYTHONPATH": "/somewhere/else",
        "LD_PRELOAD": "/evil.so",
        "MY_FLAG": "on",
    }
    env = sandbox_env(source, allow=[*SECRETS, "MY_FLAG"])
    result = run_process(py("import json, os; print(json.dumps(dict(os.environ)))"), cwd=tmp_path, env=env)
    child_env = json.loads(result.stdout)
    for name, value in SECRETS.items():
        assert name not in child_env
        assert all(value not in v for v in child_env.values())
    assert child_env["PATH"] == os.environ["PATH"]
    assert child_env["MY_FLAG"] == "on"
    assert "PYTHONPATH" not in child_env
    assert "LD_PRELOAD" not in child_env
    assert child_env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_sandbox_env_defaults_and_extra() -> None:
    env = sandbox_env({"PATH": "/bin", "LANG": "C.UTF-8", "PYTHONPATH": "/x", "EDITOR": "vi"})
    assert env["PATH"] == "/bin" and env["LANG"] == "C.UTF-8"
    assert "PYTHONPATH" not in env and "EDITOR" not in env
    assert env["HOME"]  # defaulted when absent
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["PYTHONUNBUFFERED"] == "1"

    env = sandbox_env(
        {"HOME": "/home/u"}, extra={"PYTHONPATH": "/project/src", "PYTHONUNBUFFERED": "0"}, allow=["EDITOR"]
    )
    assert env["HOME"] == "/home/u"
    assert env["PYTHONPATH"] == "/project/src"
    assert env["PYTHONUNBUFFERED"] == "0"
    assert "PYTHONPATH" not in SAFE_ENV_NAMES
    assert not any(is_secret_name(name) for name in SAFE_ENV_NAMES)


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "MY_SERVICE_PASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "SSH_PRIVATE_KEY",
        "STRIPE_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SSH_AUTH_SOCK",
        "OAUTH_CLIENT",
        "HTTP_AUTHORIZATION",
        "SESSION_COOKIE",
        "PGPASSWD",
        "DB_PASS",
        "MYSQL_PWD",
        "GH_PAT",
        "SENTRY_DSN",
        "INPUT_GITHUB-TOKEN",
        "github_token",
        "NETRC",
        "PIP_INDEX_URL",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["PATH", "HOME", "LANG", "PWD", "GIT_AUTHOR_NAME", "TOKENIZERS_PARALLELISM", "KEYBOARD", "CI", "MY_FLAG"],
)
def test_harmless_names(name: str) -> None:
    assert not is_secret_name(name)


# --- resource limits ---------------------------------------------------------------------------------------

RLIMIT_REPORT = """
    import json, resource
    names = ["RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE"]
    print(json.dumps({n: resource.getrlimit(getattr(resource, n)) for n in names}))
"""


def test_rlimits_are_applied_in_the_child(tmp_path: Path) -> None:
    limits = Limits(cpu_seconds=7, memory_bytes=1024 * MiB, file_size_bytes=MiB, open_files=64)
    report = json.loads(run(py(RLIMIT_REPORT), tmp_path, limits).stdout)
    assert report["RLIMIT_CPU"][0] == 7
    assert report["RLIMIT_AS"] == [1024 * MiB, 1024 * MiB]
    assert report["RLIMIT_FSIZE"] == [MiB, MiB]
    assert report["RLIMIT_NOFILE"] == [64, 64]
    assert report["RLIMIT_CORE"][0] == 0


def test_none_limits_are_inherited(tmp_path: Path) -> None:
    import resource

    limits = Limits(cpu_seconds=None, memory_bytes=None, file_size_bytes=None, open_files=None)
    report = json.loads(run(py(RLIMIT_REPORT), tmp_path, limits).stdout)
    assert report["RLIMIT_AS"] == list(resource.getrlimit(resource.RLIMIT_AS))
    assert report["RLIMIT_NOFILE"] == list(resource.getrlimit(resource.RLIMIT_NOFILE))


def test_file_size_limit_stops_a_python_writer_with_efbig(tmp_path: Path) -> None:
    # Python ignores SIGXFSZ, so the write fails with EFBIG instead of the process being killed.
    code = """
        try:
            with open("big.bin", "wb") as f:
                f.write(b"x" * (2 * 1024 * 1024))
        except OSError as exc:
            print(exc.errno)
    """
    result = run(py(code), tmp_path, Limits(file_size_bytes=MiB))
    assert int(result.stdout) == errno.EFBIG
    assert (tmp_path / "big.bin").stat().st_size <= MiB


def test_file_size_limit_kills_a_native_writer_with_sigxfsz(tmp_path: Path) -> None:
    argv = ["dd", "if=/dev/zero", "of=big.bin", "bs=65536", "count=32"]
    result = run(argv, tmp_path, Limits(file_size_bytes=MiB))
    assert result.returncode == -signal.SIGXFSZ
    assert (tmp_path / "big.bin").stat().st_size <= MiB


def test_memory_limit_makes_a_big_allocation_fail(tmp_path: Path) -> None:
    code = """
        try:
            block = bytearray(1024 ** 3)
        except MemoryError:
            print("MemoryError")
        else:
            print("allocated")
    """
    result = run(py(code), tmp_path, Limits(memory_bytes=512 * MiB))
    assert result.stdout == "MemoryError\n"


def test_cpu_limit_kills_a_busy_loop_before_the_wall_timeout(tmp_path: Path) -> None:
    result = run(py("while True: pass"), tmp_path, Limits(wall_seconds=30, cpu_seconds=1))
    assert not result.timed_out
    assert result.returncode in (-signal.SIGXCPU, -signal.SIGKILL)
    assert result.duration < 20


# --- refusing to start -------------------------------------------------------------------------------------


def test_missing_executable_is_a_sandbox_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="test command not found: selfix-no-such-command"):
        run(["selfix-no-such-command", "-q"], tmp_path)


def test_script_with_missing_interpreter_is_a_sandbox_error(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    with pytest.raises(SandboxError, match="interpreter"):
        run(["./run.sh"], tmp_path)


def test_non_executable_file_is_a_sandbox_error(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("echo hi\n")
    with pytest.raises(SandboxError, match="not executable"):
        run(["./run.sh"], tmp_path)


def test_missing_working_directory_is_a_sandbox_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="working directory not found"):
        run(["true"], tmp_path / "missing")


@pytest.mark.parametrize("argv", [[], "pytest -q", ["pytest", 3], [""]])
def test_bad_argv_is_a_sandbox_error(tmp_path: Path, argv: object) -> None:
    with pytest.raises(SandboxError):
        run(argv, tmp_path)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [{"wall_seconds": 0}, {"wall_seconds": float("inf")}, {"cpu_seconds": 0}, {"max_output_bytes": -1}],
)
def test_invalid_limits_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Limits(**kwargs)  # type: ignore[arg-type]


def test_a_reader_that_stops_early_leaves_no_proc_listing_open() -> None:
    """The sweeps read /proc through one generator; a reader that stops at the first match (the run's pid
    namespace) must not leave the directory open until the garbage collector finds it (a ResourceWarning, an
    error in this suite)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = process._proc_table()
        assert next(table)[0] > 0
        del table
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
