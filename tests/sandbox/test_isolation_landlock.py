"""The landlock level piece by piece: the launcher's policy, each seccomp refusal, the Landlock scopes, and
that the launcher fails closed. Needs Landlock (skipped with the reason where the kernel has none)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.errors import SandboxError
from selfix_action.sandbox import confine
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.process import Limits, run_process, sandbox_env

pytestmark = pytest.mark.skipif(confine.landlock_abi() < 1, reason="this kernel has no Landlock")

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable  # reachable by nobody


@pytest.fixture(scope="module")
def landlock() -> Isolation:
    return detect_isolation(IsolationConfig(mode="landlock"))


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    for parent in [tmp_path, *tmp_path.parents]:
        if parent == Path("/tmp") or parent == Path("/"):
            break
        parent.chmod(parent.stat().st_mode | 0o111)
    return folder


def run(landlock: Isolation, scratch: Path, code: str, **env: str):  # type: ignore[no-untyped-def]
    return run_process(
        [PY, "-c", textwrap.dedent(code)],
        cwd=scratch,
        env={**sandbox_env(os.environ), **env},
        limits=Limits(wall_seconds=30),
        isolation=landlock,
        writable=[scratch],
    )


def test_the_level_names_itself_in_reports(landlock: Isolation) -> None:
    assert landlock.level is IsolationLevel.LANDLOCK
    assert landlock.report()["level"] == "landlock"
    assert landlock.summary().startswith("isolation: landlock (Landlock ABI")
    if os.geteuid() == 0:
        assert landlock.uid == 65534 and landlock.nproc_enforced


def test_the_launcher_is_run_isolated_and_the_policy_is_an_allowlist(
    landlock: Isolation, scratch: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "original"
    repo.mkdir()
    argv = landlock.wrap(
        [PY, "-V"], cwd=scratch, env={"PATH": "/usr/bin:/bin", "HOME": "/root"}, writable=[scratch], hidden=[repo]
    )
    assert argv[:4] == [sys.executable, "-I", "-m", "selfix_action.sandbox.confine"]
    assert argv[5] == "--" and argv[6:] == [PY, "-V"]
    policy = json.loads(argv[4])
    # The scratch copy, and /dev/shm for POSIX semaphores (multiprocessing), nothing else.
    assert policy["write"] == [str(scratch.resolve()), "/dev/shm"]
    interpreters = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    for secret in ("/root", "/home", "/run", "/github", "/tmp", str(repo)):
        for path in policy["read"]:
            # Below a hidden dir only an interpreter installation is re-exposed (as bwrap does).
            assert path != secret and (not path.startswith(secret + "/") or path in interpreters), (secret, path)
    assert policy["env"]["HOME"] == str(scratch.resolve() / ".selfix-home")
    assert policy["env"]["TMPDIR"] == str(scratch.resolve() / ".selfix-tmp")
    assert policy["uid"] == landlock.uid


def test_a_planted_launcher_in_the_working_directory_is_not_imported(landlock: Isolation, scratch: Path) -> None:
    planted = scratch / "selfix_action" / "sandbox"
    planted.mkdir(parents=True)
    for folder in (scratch / "selfix_action", planted):
        (folder / "__init__.py").write_text("")
    (planted / "confine.py").write_text("open('/tmp/selfix-planted-ran', 'w').write('root')\n")
    result = run(landlock, scratch, "print('ok')")
    assert result.returncode == 0, result.stderr
    assert not Path("/tmp/selfix-planted-ran").exists()


SECCOMP_PROBES = {
    "socket(AF_INET)": "import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM)",
    "socket(AF_INET6, UDP)": "import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)",
    "socket(AF_NETLINK)": "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)",
    "socket(AF_PACKET)": "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)",
    "setsid": "import os; os.setsid()",
}
# Raw syscalls through libc (x86_64 numbers): each must fail with EPERM (ENOSYS for clone3).
RAW = {
    "ptrace(PTRACE_TRACEME)": (101, (0, 0, 0, 0), 1),
    "process_vm_readv": (310, (1, 0, 0, 0, 0, 0), 1),
    "pidfd_getfd": (438, (0, 0, 0), 1),
    "io_uring_setup": (425, (1, 0), 1),
    "bpf": (321, (0, 0, 0), 1),
    "perf_event_open": (298, (0, 0, -1, -1, 0), 1),
    "keyctl": (250, (0, 0), 1),
    "add_key": (248, (0, 0, 0, 0, 0), 1),
    "userfaultfd": (323, (0,), 1),
    "mount": (165, (0, 0, 0, 0, 0), 1),
    "clone(CLONE_NEWUSER)": (56, (0x10000000 | 17, 0, 0, 0, 0), 1),
    "clone3": (435, (0, 0), 38),
    "unshare(CLONE_NEWUSER)": (272, (0x10000000,), 1),
    "setns": (308, (0, 0), 1),
}


@pytest.mark.parametrize("name", sorted(SECCOMP_PROBES))
def test_seccomp_refuses(landlock: Isolation, scratch: Path, name: str) -> None:
    result = run(landlock, scratch, SECCOMP_PROBES[name])
    assert result.returncode == 1, result.stderr
    assert "Operation not permitted" in result.stderr or "Address family not supported" in result.stderr, result.stderr


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86_64 syscall numbers")
def test_seccomp_refuses_raw_syscalls(landlock: Isolation, scratch: Path) -> None:
    code = f"""
    import ctypes, json
    libc = ctypes.CDLL(None, use_errno=True)
    out = {{}}
    for name, (nr, args, _) in {RAW!r}.items():
        rc = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
        out[name] = ctypes.get_errno() if rc < 0 else 0
    print(json.dumps(out))
    """
    result = run(landlock, scratch, code)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got == {name: expected for name, (_, _, expected) in RAW.items()}


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="i386 and x32 ABIs of x86_64")
def test_a_syscall_of_a_foreign_architecture_kills_the_process(landlock: Isolation, scratch: Path) -> None:
    # getpid through int 0x80 (the i386 ABI), from executable memory.
    code = """
    import ctypes, mmap
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(b"\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3")  # mov eax, 20; int 0x80; ret
    address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    print(ctypes.CFUNCTYPE(ctypes.c_int)(address)())
    """
    control = run_process([PY, "-c", textwrap.dedent(code)], cwd=scratch, env=sandbox_env(os.environ))
    if control.returncode != 0:
        pytest.skip(f"no i386 emulation in this kernel (control run: {control.returncode})")
    result = run(landlock, scratch, code)
    assert result.returncode == -signal.SIGSYS, (result.returncode, result.stdout, result.stderr)


@pytest.fixture
def root_holder() -> Iterator[int]:
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="proves the scope apart from the uid: needs root on both sides")
def test_landlock_scopes_signals_and_abstract_sockets_even_for_the_same_uid(scratch: Path, root_holder: int) -> None:
    if confine.landlock_abi() < 6:
        pytest.skip("Landlock ABI < 6 has no scopes")
    import socket

    server = socket.socket(socket.AF_UNIX)
    name = f"\0selfix-scope-{os.getpid()}"
    server.bind(name)
    server.listen(1)
    policy = confine.policy_json(
        read=["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc"],
        write=[str(scratch)],
        devices=["/dev/null"],
        uid=None,
        gid=None,
        env={},
    )
    code = f"""
    import os, socket
    errors = []
    try:
        os.kill({root_holder}, 0)
    except OSError as exc:
        errors.append(type(exc).__name__)
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect({name!r})
    except OSError as exc:
        errors.append(type(exc).__name__)
    print(errors)
    """
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-I",
                "-m",
                "selfix_action.sandbox.confine",
                policy,
                "--",
                PY,
                "-c",
                textwrap.dedent(code),
            ],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['PermissionError', 'PermissionError']", done.stdout


def test_only_the_scratch_copy_and_private_dirs_are_writable(landlock: Isolation, scratch: Path) -> None:
    code = """
    import os, tempfile
    denied = []
    for path in ("/tmp/selfix-landlock-probe", "/var/tmp/selfix-landlock-probe"):
        try:
            open(path, "w").close()
            denied.append(("WROTE", path))
        except OSError:
            pass
    open("in-scratch.txt", "w").write("ok")
    with tempfile.NamedTemporaryFile() as handle:
        handle.write(b"x")
    os.makedirs(os.path.expanduser("~/.cache/x"))
    open("/dev/null", "w").write("x")
    print(denied, tempfile.gettempdir(), os.path.expanduser("~"))
    """
    result = run(landlock, scratch, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("[] "), result.stdout
    assert str(scratch.resolve()) in result.stdout
    assert (scratch / "in-scratch.txt").read_text() == "ok"


def test_the_launcher_fails_closed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)
    policy = confine.policy_json(read=[], write=[], devices=[], uid=None, gid=None, env={})
    assert confine.main([policy, "--", "true"]) == confine.CONFINE_FAILED
    assert "not running it" in capsys.readouterr().err
    assert confine.main(["{not json", "--", "true"]) == confine.CONFINE_FAILED
    assert confine.main(["{}"]) == 2


def test_a_failing_confinement_never_runs_the_command(scratch: Path) -> None:
    marker = scratch / "ran"
    bad = json.dumps({"read": [], "write": [], "devices": [], "uid": 0, "gid": 0, "env": {}})  # uid 0 is no drop
    done = subprocess.run(
        [sys.executable, "-I", "-m", "selfix_action.sandbox.confine", bad, "--", "touch", str(marker)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if os.geteuid() == 0:
        assert done.returncode == confine.CONFINE_FAILED, done.stderr
        assert "capabilities left" in done.stderr or "cannot" in done.stderr
        assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop happens only as root")
def test_an_interpreter_the_sandbox_uid_cannot_reach_is_a_clear_error(landlock: Isolation, tmp_path: Path) -> None:
    hidden = tmp_path / "private"
    (hidden / "bin").mkdir(parents=True)
    tool = hidden / "bin" / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    hidden.chmod(0o700)
    with pytest.raises(SandboxError, match="cannot reach"):
        landlock.wrap([str(tool)], cwd=tmp_path, env={"PATH": "/usr/bin"}, writable=[])


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the x32 ABI of x86_64")
def test_an_x32_syscall_kills_the_process(landlock: Isolation, scratch: Path) -> None:
    code = "import ctypes; print(ctypes.CDLL(None).syscall(0x40000000 | 39))"  # getpid, x32 numbering
    control = run_process([PY, "-c", code], cwd=scratch, env=sandbox_env(os.environ))
    assert control.returncode == 0  # unconfined: ENOSYS (no x32 here) or the pid, never a kill
    result = run(landlock, scratch, code)
    assert result.returncode == -signal.SIGSYS, (result.returncode, result.stdout, result.stderr)
