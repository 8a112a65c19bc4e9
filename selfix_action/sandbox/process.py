"""Run project code: the only place in selfix that does.

Every command runs as a subprocess in its own session (so its own process group), with an allowlisted
environment, resource limits set in the child before ``exec``, a wall-clock timeout that SIGKILLs the whole
group, and output capped per stream. The group is killed after a normal exit too, so that background
processes a test suite leaves behind die with it instead of holding our pipes open.

With an ``isolation`` (see ``isolation.py``) the command is wrapped in bubblewrap or unshare: no network,
a read-only filesystem except the scratch dirs named ``writable``, hidden home/repository, a non-root uid and
a process-count limit. Without one, behaviour is exactly that of a plain subprocess under the limits.

After the group kill, ``RunProcesses.sweep`` kills whatever of the run is left: its session (setsid() is
refused at landlock, so a descendant that only left the group is still in it) and its pid namespace (bwrap,
unshare ``--pid``), again and again until none is left. Known limit with neither (level none, unshare without
``--pid``): a descendant that calls ``setsid()`` survives; we stop reading its output after a short grace period
instead of hanging on it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
import re
import resource
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from selfix_action.errors import SandboxError
from selfix_action.sandbox import cancel
from selfix_action.sandbox.isolation import Isolation

__all__ = [
    "SAFE_ENV_NAMES",
    "Limits",
    "MemoryCap",
    "ProcessResult",
    "RunProcesses",
    "is_secret_name",
    "memory_cap",
    "private_dirs",
    "run_process",
    "sandbox_env",
]

_READ_CHUNK = 64 * 1024  # a Linux pipe holds 64 KiB by default, so one read empties it
_POLL_SECONDS = 0.05  # exit-check interval, only used when pidfd_open() is unavailable
_DRAIN_GRACE_SECONDS = 2.0  # keep reading this long after the kill, for pipes held by escaped processes
_REAP_TIMEOUT_SECONDS = 5.0  # a SIGKILLed process stuck in uninterruptible sleep is left to the OS
_CPU_HARD_GRACE_SECONDS = 2  # SIGXCPU at the soft limit, SIGKILL this much CPU time later


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run. ``None`` leaves that rlimit as inherited from selfix."""

    wall_seconds: float = 120.0
    cpu_seconds: int | None = 300
    # RLIMIT_AS; a ceiling: PytestSandbox lowers it to the machine's share per parallel check (``memory_cap``).
    memory_bytes: int | None = 4 * 1024**3
    file_size_bytes: int | None = 512 * 1024**2  # RLIMIT_FSIZE
    open_files: int | None = 1024  # RLIMIT_NOFILE
    max_output_bytes: int = 1_000_000  # per stream kept in memory
    # RLIMIT_NPROC, applied only with an isolation that can enforce it (never for uid 0): see
    # ``Isolation.process_limit``.
    max_processes: int | None = 512

    def __post_init__(self) -> None:
        if not (math.isfinite(self.wall_seconds) and self.wall_seconds > 0):
            raise ValueError(f"wall_seconds must be a positive number, got {self.wall_seconds!r}")
        for name in ("cpu_seconds", "memory_bytes", "file_size_bytes", "open_files", "max_processes"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive or None, got {value!r}")
        if self.max_output_bytes < 0:
            raise ValueError(f"max_output_bytes must be >= 0, got {self.max_output_bytes!r}")


MiB = 1024**2
GiB = 1024**3
# A derived cap never goes below this: pytest itself needs a few hundred MiB of address space.
MIN_MEMORY_BYTES = 512 * MiB
_UNLIMITED = 1 << 60  # cgroup v1 says "no limit" with a huge page-rounded number


@dataclass(frozen=True)
class MemoryCap:
    """The RLIMIT_AS one run gets, and where it comes from (for the report)."""

    bytes: int | None
    usable: int | None  # bytes the machine (or the cgroup selfix runs in) can give its checks, None: unknown
    source: str  # e.g. "MemAvailable", "cgroup memory.max"
    ceiling: int | None
    parallel_checks: int

    def report(self) -> dict[str, object]:
        if self.bytes is None:
            how = "not limited"
        elif self.usable is None:
            how = "the ceiling (the machine's memory is unknown)"
        elif self.bytes == self.ceiling:
            share = self.usable // (self.parallel_checks + 1)
            how = (
                f"the ceiling ({self.source} {_gib(self.usable)} / ({self.parallel_checks} parallel check(s) + 1)"
                f" = {_gib(share)} is more)"
            )
        else:
            how = (
                f"{self.source} {_gib(self.usable)} / ({self.parallel_checks} parallel check(s) + 1)"
                f"{', raised to the floor' if self.bytes == MIN_MEMORY_BYTES else ''}"
            )
        return {
            "memory_bytes": self.bytes,
            "memory": f"{_gib(self.bytes)} of address space per process (RLIMIT_AS): {how}",
            "memory_usable_bytes": self.usable,
            "memory_source": self.source,
        }


def _gib(value: int | None) -> str:
    return "unlimited" if value is None else f"{value / GiB:.2f} GiB"


def _meminfo(path: Path) -> tuple[int, str] | None:
    fields: dict[str, int] = {}
    try:
        for line in path.read_text(encoding="ascii", errors="replace").splitlines():
            name, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                fields[name.strip()] = int(parts[0]) * 1024  # kB
    except OSError:
        return None
    for name in ("MemAvailable", "MemTotal"):  # MemAvailable: what can be had without swapping (Linux >= 3.14)
        if fields.get(name):
            return fields[name], name
    return None


def _cgroup_limit(cgroup_root: Path, proc_cgroup: Path) -> int | None:
    """The lowest memory limit of the cgroups selfix runs in (v2 ``memory.max``, v1 ``memory.limit_in_bytes``),
    on its own cgroup's path and every ancestor; None when none is set."""
    candidates: list[Path] = [cgroup_root / "memory.max", cgroup_root / "memory" / "memory.limit_in_bytes"]
    try:
        lines = proc_cgroup.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        rel = Path(path.lstrip("/"))
        if controllers == "":  # v2
            base, name = cgroup_root, "memory.max"
        elif "memory" in controllers.split(","):
            base, name = cgroup_root / "memory", "memory.limit_in_bytes"
        else:
            continue
        for parent in (rel, *rel.parents):
            candidates.append(base / parent / name)
    limits = []
    for candidate in candidates:
        try:
            text = candidate.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and 0 < int(text) < _UNLIMITED:
            limits.append(int(text))
    return min(limits) if limits else None


def memory_cap(
    ceiling: int | None,
    parallel_checks: int,
    *,
    meminfo: Path = Path("/proc/meminfo"),
    cgroup_root: Path = Path("/sys/fs/cgroup"),
    proc_cgroup: Path = Path("/proc/self/cgroup"),
) -> MemoryCap:
    """The RLIMIT_AS of one run: ``min(ceiling, usable / (parallel_checks + 1))``, at least MIN_MEMORY_BYTES.

    ``usable`` is MemAvailable (else MemTotal) from /proc/meminfo, no more than the cgroup's memory limit (a
    container's, a CI runner's). ``parallel_checks`` hot-check children can run at once, beside the hot worker
    and selfix itself: each gets its share, so together they cannot exhaust the machine. ``ceiling`` None: no
    limit at all (the caller asked for none).
    """
    if ceiling is None:
        return MemoryCap(None, None, "", None, parallel_checks)
    found = _meminfo(meminfo)
    usable, source = found if found is not None else (None, "")
    cgroup = _cgroup_limit(cgroup_root, proc_cgroup)
    if cgroup is not None and (usable is None or cgroup < usable):
        usable, source = cgroup, "cgroup memory limit"
    if usable is None:
        return MemoryCap(ceiling, None, "unknown", ceiling, parallel_checks)
    share = usable // (max(1, parallel_checks) + 1)
    return MemoryCap(min(ceiling, max(MIN_MEMORY_BYTES, share)), usable, source, ceiling, parallel_checks)


@dataclass(frozen=True)
class ProcessResult:
    argv: tuple[str, ...]
    returncode: int | None  # None when killed for the timeout; -N when killed by signal N
    stdout: str  # decoded utf-8 with errors="replace", truncated with a marker line
    stderr: str
    timed_out: bool
    duration: float
    stdout_truncated: bool
    stderr_truncated: bool
    isolation: str = "none"  # the IsolationLevel value the command ran under
    wall_limit: float | None = None  # the wall limit applied when not the run's Limits (adaptive hot checks)

    @property
    def cpu_limited(self) -> bool:
        """Killed at its CPU-time limit (SIGXCPU): a busy loop on a quiet machine reaches it before the wall
        limit derived from the same figure, and it is the same verdict, the run was cut by a limit."""
        return self.returncode == -signal.SIGXCPU

    @property
    def cut(self) -> bool:
        """Cut by a limit of the run (its wall clock or its CPU time), not ended by itself."""
        return self.timed_out or self.cpu_limited


# --- environment -------------------------------------------------------------------------------------------

# Deliberately small: what a test run needs to find tools, pick a locale and a temp dir. PYTHONPATH,
# PYTHONHOME, PYTHONSTARTUP and LD_* are left out because they change what code runs; selfix sets
# PYTHONPATH itself through ``extra`` when it needs to.
SAFE_ENV_NAMES: frozenset[str] = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_COLLATE",
        "LC_CTYPE",
        "LC_MESSAGES",
        "LC_MONETARY",
        "LC_NUMERIC",
        "LC_TIME",
        "TZ",
        "TERM",
        "NO_COLOR",
        "TMPDIR",
        "TEMP",
        "TMP",
        "PYTHONHASHSEED",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "VIRTUAL_ENV",
        "CI",
    }
)

_SECRET_EXACT: frozenset[str] = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_RUNTIME_URL",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "ACTIONS_CACHE_URL",
        "ACTIONS_RESULTS_URL",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "NETRC",  # points at a credentials file
        # Package index URLs routinely embed a user:token pair.
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "UV_INDEX_URL",
        "UV_EXTRA_INDEX_URL",
    }
)
# ACTIONS_*: runner plumbing (cache/OIDC/results URLs and tokens). INPUT_*: this action's own inputs, which
# is where a workflow hands us API keys (``with: api-key: ${{ secrets.X }}`` becomes INPUT_API-KEY).
_SECRET_PREFIXES: tuple[str, ...] = ("ACTIONS_", "INPUT_")
# Substrings; AUTHOR(S) and TOKENIZER are excluded so GIT_AUTHOR_NAME and TOKENIZERS_PARALLELISM survive.
_SECRET_PATTERN = re.compile(
    r"TOKEN(?!IZER)|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|COOKIE|SESSION"
    r"|AUTH(?!ORS?(?:[^A-Z]|$))|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY"
)
# Whole words (split on anything but letters and digits): FOO_KEY, KEY_FOO, DB_PASS, MYSQL_PWD, GH_PAT...
_SECRET_WORDS: frozenset[str] = frozenset({"KEY", "KEYS", "PASS", "PWD", "PAT", "DSN"})
_NOT_SECRET_EXACT: frozenset[str] = frozenset({"PWD", "OLDPWD"})  # the shell's working directory


def is_secret_name(name: str) -> bool:
    """True if an environment variable with this name may hold a credential. Errs on the side of yes."""
    upper = name.upper()
    if upper in _SECRET_EXACT or upper.startswith(_SECRET_PREFIXES):
        return True
    if _SECRET_PATTERN.search(upper):
        return True
    if upper in _NOT_SECRET_EXACT:
        return False
    return any(word in _SECRET_WORDS for word in re.split(r"[^A-Z0-9]+", upper))


def sandbox_env(
    source: Mapping[str, str],
    *,
    extra: Mapping[str, str] | None = None,
    allow: Iterable[str] = (),
) -> dict[str, str]:
    """The environment for project code: allowlisted names from ``source``, never a secret-looking one.

    ``allow`` adds names the project declared; ``extra`` is set by selfix itself, applied last and not
    filtered (selfix decides what it passes).
    """
    wanted = SAFE_ENV_NAMES | frozenset(allow)
    env = {name: value for name, value in source.items() if name in wanted and not is_secret_name(name)}
    # Tools that cache under ~ (pip, matplotlib...) break without HOME; a temp dir is harmless.
    env.setdefault("HOME", tempfile.gettempdir())
    # No .pyc files written into the project tree; output not held in buffers when we kill on timeout.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


def private_dirs(area: Path) -> dict[str, str]:
    """A run's own home, XDG base dirs and temp dir, made (0700) in ``area``, which must be writable by the run.

    A CI job gives its tests a writable home: tools and tests write ``~/.cache/<x>``, ``$XDG_CONFIG_HOME``,
    ``$TMPDIR``. The caller's home is hidden at bwrap, replaced at landlock, and read-only or missing for the
    sandbox uid (65534's is ``/nonexistent``): without these, a test that passed in CI failed here, at every
    level, for the sandbox's sake; at the levels without a filesystem boundary (unshare, none) it wrote into
    the real home. The dirs live as long as ``area`` (one heal), like a CI job's home, but for the cache, which
    the test sandbox empties before each run (``PytestSandbox._empty_cache``).
    """
    home = area / "home"
    dirs = {
        "HOME": home,
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_RUNTIME_DIR": area / "run",
        "TMPDIR": area / "tmp",
    }
    for path in dirs.values():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {name: str(path) for name, path in dirs.items()}
    env["TMP"] = env["TEMP"] = env["TMPDIR"]
    return env


# --- running -----------------------------------------------------------------------------------------------

_RlimitPlan = tuple[tuple[int, tuple[int, int]], ...]


def _rlimit_plan(limits: Limits, max_processes: int | None = None) -> _RlimitPlan:
    """(resource, (soft, hard)) pairs, computed in the parent so the child only has to apply them."""
    wanted: list[tuple[int, int, int]] = [(resource.RLIMIT_CORE, 0, 0)]  # SIGXCPU/SIGXFSZ would dump core
    if max_processes is not None:
        wanted.append((resource.RLIMIT_NPROC, max_processes, max_processes))
    if limits.cpu_seconds is not None:
        # Soft limit sends SIGXCPU (a recognisable exit); the hard one SIGKILLs a child that ignores it.
        cpu = limits.cpu_seconds
        wanted.append((resource.RLIMIT_CPU, cpu, cpu + _CPU_HARD_GRACE_SECONDS))
    if limits.memory_bytes is not None:
        wanted.append((resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes))
    if limits.file_size_bytes is not None:
        wanted.append((resource.RLIMIT_FSIZE, limits.file_size_bytes, limits.file_size_bytes))
    if limits.open_files is not None:
        wanted.append((resource.RLIMIT_NOFILE, limits.open_files, limits.open_files))
    plan: list[tuple[int, tuple[int, int]]] = []
    for which, soft, hard in wanted:
        # Without privileges a hard limit can only go down: never ask for more than we have.
        current_hard = resource.getrlimit(which)[1]
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        plan.append((which, (soft, hard)))
    return tuple(plan)


def _make_preexec(plan: _RlimitPlan) -> Callable[[], None]:
    """The child-side hook that applies the rlimits between fork and exec.

    preexec_fn is unsafe when other threads may hold locks at fork time. Here the hook does nothing but
    call setrlimit with values prepared in the parent (no imports, no I/O), run_process starts no threads
    of its own, and selfix is single-threaded when it runs tests. Python has no rlimit option for Popen,
    and a ``prlimit`` wrapper binary is not guaranteed to exist.
    """

    def apply() -> None:
        for which, pair in plan:
            resource.setrlimit(which, pair)

    return apply


class _Capture:
    """Keeps the first ``limit`` bytes of a stream and counts the rest, which is read and dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.kept)
        if room >= len(chunk):
            self.kept += chunk
        else:
            if room > 0:
                self.kept += chunk[:room]
            self.dropped += len(chunk) - max(room, 0)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            if text and not text.endswith("\n"):
                text += "\n"
            text += f"[selfix: output truncated, {self.dropped} bytes dropped]\n"
        return text


def _kill_group(pgid: int, session: bool = False) -> None:
    # Only called while the leader is unreaped (running or a zombie), so pgid cannot have been reused.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    if session:
        _kill_session(pgid)


def _kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (the leader's own, so only its descendants can be in it).

    At the landlock level there is no pid namespace to take everything down, and setpgid() is allowed (the
    warm worker needs it) but setsid() is not: a descendant that left the group is still in the session.
    """
    for pid, _state, _ppid, session in _proc_table():
        if session == sid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _proc_table() -> Iterator[tuple[int, str, int, int]]:
    """(pid, state, ppid, session) of every process in /proc that can still be read."""
    with os.scandir("/proc") as entries:  # closed also when the reader stops early
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
                yield int(entry.name), fields[0].decode("ascii", "replace"), int(fields[1]), int(fields[3])
            except (OSError, IndexError, ValueError):
                continue


def _pid_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


@functools.cache
def _child_subreaper() -> bool:
    """Make selfix the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER, Linux >= 3.4); False if not."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


_DEAD_STATES = frozenset({"Z", "X", "x"})  # a zombie holds no resource but its pid (and a RLIMIT_NPROC slot)


class RunProcesses:
    """Every process that belongs to one run, found again after the run to make sure none is left.

    A run's processes are those of its session (the one ``start_new_session`` gave its first process) and,
    when the wrapper made one (bwrap, ``unshare --pid``), of its pid namespace: the two boundaries a
    descendant cannot leave (setsid() is refused at the landlock level; nothing leaves a pid namespace). So a
    sweep never touches another run, a warm/hot worker (a session and namespace of its own) or a concurrent
    selfix running as the same sandbox uid. ``spare`` is what a live worker keeps between its checks.
    """

    def __init__(self, leader: int) -> None:
        self.leader = leader
        self.namespace: str | None = None  # the run's own pid namespace, once seen
        self.spare: frozenset[int] = frozenset()
        # Orphans of the run come to selfix (not to a pid 1 that may reap them late or never) and are reaped by the
        # sweep: until then a zombie holds one of the sandbox uid's RLIMIT_NPROC slots, and the next run (or the
        # warm worker's next fork) would find the uid full.
        self.reaping = _child_subreaper()

    def find_namespace(self) -> None:
        """Remember the run's pid namespace: that of a child of the leader when it is not ours (must be called
        while the wrapper still lives; when it exited on its own, its namespace was emptied before)."""
        if self.namespace is not None:
            return
        own = _pid_namespace("self")
        for pid, _state, ppid, _session in _proc_table():
            if ppid == self.leader:
                found = _pid_namespace(pid)
                if found is not None and found != own:
                    self.namespace = found
                    return

    def members(self) -> list[int]:
        """The run's live (not zombie) processes, ``spare`` excepted. Zombies of the run that were re-parented
        to selfix (it is pid 1 in a Docker action, or a subreaper) are reaped on the way: they would hold the
        sandbox uid's RLIMIT_NPROC slots for good."""
        found = []
        me = os.getpid()
        for pid, state, ppid, session in _proc_table():
            if pid in self.spare:
                continue
            if pid == self.leader:  # reaped by its Popen, never here
                if state not in _DEAD_STATES:
                    found.append(pid)
                continue
            ours = session == self.leader or (self.namespace is not None and _pid_namespace(pid) == self.namespace)
            if not ours:
                continue
            if state not in _DEAD_STATES:
                found.append(pid)
            elif ppid == me:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
            elif self.reaping and ppid not in self.spare:
                found.append(pid)  # re-parented to selfix once its dying parent is gone, then reaped here
        return found

    def kill(self) -> None:
        """SIGKILL the leader's group and the whole session, at once (no waiting)."""
        self.find_namespace()
        _kill_group(self.leader, session=True)

    def sweep(self, timeout: float = _REAP_TIMEOUT_SECONDS) -> int:
        """SIGKILL every live process of the run, again and again until none is left (a process may fork
        between two scans) or ``timeout`` has passed; how many were still alive then (0: the run is gone)."""
        deadline = time.monotonic() + timeout
        while True:
            left = self.members()
            if not left:
                return 0
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() >= deadline:
                return len(self.members())
            time.sleep(0.005)


def _has_exited(pid: int) -> bool:
    """True once the process has exited; WNOWAIT leaves it unreaped, so its pid (= our pgid) stays ours."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped behind our back (SIGCHLD set to SIG_IGN)
        return True


def _open_pidfd(pid: int) -> int | None:
    """A descriptor that turns readable when ``pid`` exits, so we can wait on it with the pipes."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # Linux < 5.3, or not Linux
        return None


_PIDFD = object()  # selector tag for the pidfd
_STDIN = object()  # selector tag for the stdin pipe


def _communicate(
    proc: subprocess.Popen[bytes], stdin_data: bytes, limits: Limits, deadline: float, run: RunProcesses
) -> tuple[_Capture, _Capture, bool]:
    """Feed stdin and drain stdout/stderr until the process exits (or times out) and the pipes close.

    One selector loop instead of reader threads: nothing can be left blocked on a pipe that an escaped
    process holds open, and no thread exists when the next run forks.
    """
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Capture(limits.max_output_bytes), _Capture(limits.max_output_bytes)
    sel = selectors.DefaultSelector()
    pidfd = _open_pidfd(proc.pid)
    stdin_view = memoryview(stdin_data)
    stdin_offset = 0
    try:
        for stream, capture in ((proc.stdout, out), (proc.stderr, err)):
            os.set_blocking(stream.fileno(), False)
            sel.register(stream.fileno(), selectors.EVENT_READ, capture)
        if proc.stdin is not None:
            if stdin_data:
                os.set_blocking(proc.stdin.fileno(), False)
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, _STDIN)
            else:
                proc.stdin.close()
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ, _PIDFD)

        exited = timed_out = False
        drain_until = math.inf
        while True:
            now = time.monotonic()
            if not exited:
                if _has_exited(proc.pid):
                    exited = True
                elif now >= deadline:
                    exited = timed_out = True
                if exited:
                    # Normal exit or not, take the whole group down: leftover background processes would
                    # keep running in CI and keep our pipes open.
                    run.kill()
                    drain_until = now + _DRAIN_GRACE_SECONDS
                    for key in list(sel.get_map().values()):
                        if key.data is _PIDFD or key.data is _STDIN:
                            sel.unregister(key.fd)
                    if proc.stdin is not None:
                        with contextlib.suppress(OSError):
                            proc.stdin.close()
            if exited and (not sel.get_map() or now >= drain_until):
                break
            if exited:
                timeout = drain_until - now
            else:
                timeout = deadline - now if pidfd is not None else min(deadline - now, _POLL_SECONDS)
            for key, _events in sel.select(max(timeout, 0.0)):
                if key.data is _PIDFD:
                    continue  # the exit is picked up by _has_exited at the top of the loop
                if key.data is _STDIN:
                    assert proc.stdin is not None
                    try:
                        stdin_offset += os.write(key.fd, stdin_view[stdin_offset : stdin_offset + _READ_CHUNK])
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:  # the child stopped reading; not our problem
                        stdin_offset = len(stdin_view)
                    if stdin_offset >= len(stdin_view):
                        sel.unregister(key.fd)
                        proc.stdin.close()
                    continue
                try:
                    chunk = os.read(key.fd, _READ_CHUNK)
                except BlockingIOError:
                    continue
                if chunk:
                    key.data.feed(chunk)
                else:
                    sel.unregister(key.fd)
        return out, err, timed_out
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)


def _check_argv(argv: Sequence[str]) -> tuple[str, ...]:
    if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
        raise SandboxError(f"test command must be a list of arguments, got {argv!r}")
    args = tuple(argv)
    if not args:
        raise SandboxError("test command is empty")
    if not all(isinstance(arg, str) for arg in args):
        raise SandboxError(f"test command arguments must all be strings, got {args!r}")
    if not args[0]:
        raise SandboxError("test command starts with an empty program name")
    return args


def run_process(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    limits: Limits = Limits(),
    stdin_data: str | None = None,
    isolation: Isolation | None = None,
    writable: Sequence[str | Path] = (),
    hidden: Sequence[str | Path] = (),
) -> ProcessResult:
    """Run ``argv`` (no shell) in ``cwd`` with exactly ``env``, under ``limits``.

    A failing or timed-out command is a normal result; SandboxError means it could not be started at all.
    Use ``sandbox_env`` to build ``env``. With ``isolation`` (from ``detect_isolation``) the command runs
    inside it: ``writable`` are the only paths it may write (the scratch copy; handed to the sandbox uid
    when selfix is root), ``hidden`` are extra paths it must not see (the original repository).
    """
    args = _check_argv(argv)
    workdir = Path(cwd)
    if not workdir.is_dir():
        raise SandboxError(f"working directory not found: {workdir}")
    popen_args = list(args)
    max_processes = None
    if isolation is not None:
        popen_args = isolation.wrap(args, cwd=workdir, env=env, writable=writable, hidden=hidden)
        isolation.prepare(writable)
        max_processes = isolation.process_limit(limits.max_processes)
    preexec = _make_preexec(_rlimit_plan(limits, max_processes))
    cancellation = cancel.current()  # the front end's, when it may cancel this work from another thread
    if cancellation is not None:
        cancellation.check()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            popen_args,
            cwd=workdir,
            env=dict(env),
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own session and process group: killpg reaches every descendant
            preexec_fn=preexec,
            close_fds=True,
            bufsize=0,  # we read the raw fds; no buffered layer to confuse
            restore_signals=True,  # undo Python's SIG_IGN of SIGPIPE/SIGXFSZ so the limits bite
        )
    except FileNotFoundError as exc:
        if "/" in args[0] and (workdir / args[0]).exists():
            raise SandboxError(f"cannot run {args[0]}: its #! interpreter was not found") from exc
        raise SandboxError(f"test command not found: {args[0]}") from exc
    except PermissionError as exc:
        raise SandboxError(f"test command is not executable: {args[0]}") from exc
    except (OSError, ValueError, TypeError, subprocess.SubprocessError) as exc:
        raise SandboxError(f"could not start {args[0]}: {exc}") from exc

    timed_out = False
    run = RunProcesses(proc.pid)
    if cancellation is not None:
        cancellation.track(run)
    try:
        out, err, timed_out = _communicate(
            proc, (stdin_data or "").encode("utf-8"), limits, start + limits.wall_seconds, run
        )
    finally:
        # Also on KeyboardInterrupt or a bug above: never leave project processes running.
        run.kill()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_REAP_TIMEOUT_SECONDS)
        # What the group kill missed (a process that left the group, or forked while it was being killed) and,
        # in a pid namespace, what the kernel is still tearing down: nothing of the run survives it.
        run.sweep()
        if cancellation is not None:
            cancellation.untrack(run)
    if cancellation is not None:
        cancellation.check()  # killed by a cancel: not a result of the project's code
    returncode = proc.returncode if isolation is None else isolation.exit_status(proc.returncode)
    return ProcessResult(
        argv=args,
        returncode=None if timed_out else returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        duration=time.monotonic() - start,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        isolation="none" if isolation is None else isolation.level.value,
    )
