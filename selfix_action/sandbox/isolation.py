"""Isolation of project code from the machine that runs selfix: chosen at run time, probed once, reported.

Levels, best first (``detect_isolation`` picks the best one whose probe succeeds):

``bwrap``
    bubblewrap. Fresh network, pid, ipc and uts namespaces (no network at all, not even the host's loopback),
    ``--die-with-parent``, ``--new-session``, a fresh ``/proc`` (other processes, and their ``environ``, are
    invisible), a minimal ``/dev``, the whole filesystem read-only, a private ``/tmp``, ``/var/tmp``,
    ``/dev/shm`` and ``$HOME``, the user's homes, ``/run`` (the Docker socket, ``/run/secrets``), the runner's
    temp dir and workspace and the original repository (its ``.git/config`` holds the checkout token) hidden
    under empty read-only tmpfs, and only the scratch copy writable.

    As root, bwrap itself runs as root (it needs to, to see the interpreter under ``/root`` or wherever it
    lives) with *no* user namespace, and ``setpriv`` drops the command to ``sandbox_uid`` (65534, nobody) with
    no groups and no capabilities before ``exec``: a real host uid that owns no file, so RLIMIT_NPROC is
    enforced (the kernel never enforces it for uid 0, and a user namespace would map the sandbox uid back
    to host root). The scratch copy is chowned to that uid before each run. As a normal user, bwrap runs
    unprivileged in a user namespace (``--unshare-all``) as that user.

``landlock``
    No namespace at all, for where they are refused (a Docker container with the default seccomp profile
    and capabilities, i.e. a GitHub Docker action). ``confine.py`` runs as a launcher before the command:
    Landlock (read-only system dirs and what the command needs, read-write scratch copy and a private
    HOME/TMPDIR below it, nothing else; TCP bind/connect denied from ABI 4; abstract unix sockets and signals
    scoped from ABI 6), a seccomp filter (``socket()`` for AF_UNIX only; ptrace, process_vm_*, pidfd_getfd,
    io_uring, bpf, perf, keyrings, userfaultfd, mounts, namespaces, setsid/setpgid... refused; foreign
    architectures killed), and as root a drop to ``sandbox_uid`` with no groups, no capabilities and
    ``no_new_privs``. Other processes stay visible in ``/proc`` but their ``environ``/memory are out of reach
    (another uid, and Landlock forbids ptrace-access outside the domain). Path-named unix sockets (the Docker
    socket) are guarded by the uid and file permissions only. The sandbox uid must be able to reach the
    interpreter (no mount tricks here): an interpreter below a 0700 dir is refused with a clear error.
    Ranked after bwrap and before unshare (which has no filesystem boundary at all).

``unshare``
    util-linux ``unshare``: a network namespace and, where possible, a pid namespace with a fresh ``/proc``.
    No filesystem isolation: the environment allowlist and file permissions are all that protect files.

``none``
    Only the environment allowlist and the resource limits. A loud warning goes into the report;
    ``require_isolation`` refuses to run at this level.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from selfix_action.errors import SandboxError

__all__ = [
    "Isolation",
    "IsolationConfig",
    "IsolationLevel",
    "detect_isolation",
    "former_home",
    "no_isolation",
    "parse_ports",
]

log = logging.getLogger(__name__)

_PROBE_TIMEOUT_SECONDS = 20.0
# Never hidden or made private, and never below a hidden path: the system the command needs to run.
_SYSTEM_DIRS = tuple(Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"))
# Fresh, writable, empty tmpfs in every bwrap run (plus the command's $HOME and $TMPDIR).
_PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
# Hidden under an empty read-only tmpfs in every bwrap run (plus the selfix user's home and the runner's
# temp dir and workspace). /run holds the Docker socket and Docker/Kubernetes secrets; /github is where a
# Docker container action sees the runner's home, workspace and command files.
_HIDDEN_DIRS = ("/root", "/home", "/run", "/github")
_RUNNER_DIR_VARIABLES = ("RUNNER_TEMP", "GITHUB_WORKSPACE", "RUNNER_WORKSPACE")
_TMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")
# The only device files a landlock run may open (read-write); the rest of /dev is out of reach.
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
# The network namespace's launcher (loopback up, allowed ports relayed), run as a script: stdlib only.
_LAUNCHER = Path(__file__).resolve().parent / "loopback.py"
# Wrappers that wait for the command (rather than exec it) and exit 128+N when it dies of signal N.
_REPORTS_SIGNALS_AS_128 = frozenset({"bwrap-root", "bwrap-user", "unshare-root", "unshare-user"})


def parse_ports(value: str | Iterable[object]) -> tuple[int, ...]:
    """``allow_ports`` as sorted distinct ports: "5432,6379", "5432 6379" or items (ints or digit strings), each
    1-65535. Raises ValueError naming the bad item."""
    items = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    ports: set[int] = set()
    for item in items:
        text = str(item).strip()
        if isinstance(item, bool) or not text.isdigit() or not 1 <= int(text) <= 65535:
            raise ValueError(f"allow_ports: {text!r} is not a TCP port (an integer from 1 to 65535)")
        ports.add(int(text))
    return tuple(sorted(ports))


class IsolationLevel(StrEnum):
    BWRAP = "bwrap"
    LANDLOCK = "landlock"
    UNSHARE = "unshare"
    NONE = "none"


_MODES = frozenset({"auto", "bwrap", "landlock", "unshare", "none"})


@dataclass(frozen=True)
class IsolationConfig:
    """What the user asked for. ``mode`` "auto" takes the best level that works; a named level is required."""

    mode: str = "auto"
    require_isolation: bool = False
    sandbox_uid: int = 65534  # used when selfix runs as root
    sandbox_gid: int = 65534
    hide_paths: tuple[str, ...] = ()  # more files/dirs to hide (bwrap)
    readable_paths: tuple[str, ...] = ()  # re-exposed read-only when under a hidden dir (e.g. a tool dir)
    # TCP ports of the host's loopback the test runs may connect to (a database the CI job started): closed by
    # default. bwrap/unshare: relayed into the namespace (loopback.py); landlock: Landlock ABI >= 4 connect rules.
    allow_ports: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "allow_ports", parse_ports(self.allow_ports))
        if self.mode not in _MODES:
            raise ValueError(f"isolation mode must be one of {sorted(_MODES)}, got {self.mode!r}")
        if self.sandbox_uid <= 0 or self.sandbox_gid <= 0:
            raise ValueError("sandbox_uid and sandbox_gid must be non-root ids")
        if self.require_isolation and self.mode == "none":
            raise ValueError("require_isolation contradicts isolation mode 'none'")


@dataclass(frozen=True)
class Isolation:
    """A working isolation level and the means to wrap a command in it. Build with ``detect_isolation``."""

    level: IsolationLevel
    mechanism: str  # one line for humans: what exactly runs the command
    kind: str = "none"  # bwrap-root | bwrap-user | unshare-root | unshare-user | unshare-root-net | ...
    tool: str = ""  # absolute path of bwrap/unshare
    setpriv: str = ""  # absolute path of setpriv (bwrap-root)
    uid: int | None = None  # host uid the command runs as, when selfix drops privileges
    gid: int | None = None
    nproc_enforced: bool = False
    # The command may use the host's network (bwrap without --unshare-net; landlock without the TCP rules and
    # with AF_INET/AF_INET6 sockets allowed). Only the project's setup command (installing dependencies)
    # gets it, through ``with_network()``; every test run is offline. Everything else stays as it is.
    network: bool = False
    # bwrap/unshare with ``config.allow_ports``: {port: unix socket} of the host side (``loopback.HostBridge``)
    # the launcher relays each port to inside the namespace; set by ``with_relays`` for the sandbox's life.
    relays: tuple[tuple[int, str], ...] = ()
    warnings: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()  # why better levels were not used
    config: IsolationConfig = field(default_factory=IsolationConfig)

    # -- reporting ---------------------------------------------------------------------------------------
    @property
    def isolated(self) -> bool:
        return self.level is not IsolationLevel.NONE

    def report(self) -> dict[str, object]:
        return {
            "level": self.level.value,
            "mechanism": self.mechanism,
            "uid": self.uid if self.uid is not None else os.geteuid(),
            "process_limit_enforced": self.nproc_enforced,
            "warnings": list(self.warnings),
            "fallbacks": list(self.fallbacks),
        }

    def summary(self) -> str:
        """One line for a log or a job summary; loud when the code under test is not isolated."""
        if self.level is IsolationLevel.NONE:
            return "WARNING: NO ISOLATION: " + " ".join(self.warnings)
        text = f"isolation: {self.level.value} ({self.mechanism})"
        return text + ("; " + " ".join(self.warnings) if self.warnings else "")

    # -- running -----------------------------------------------------------------------------------------
    def with_network(self, readable: Iterable[str | Path] = ()) -> Isolation:
        """This isolation with the network allowed (the setup command's), and ``readable`` re-exposed
        read-only (files the setup command names). Nothing else changes: uid, hidden paths, limits."""
        config = dataclasses.replace(
            self.config, readable_paths=(*self.config.readable_paths, *(str(p) for p in readable))
        )
        return dataclasses.replace(self, network=True, config=config)

    def with_relays(self, relays: Mapping[int, str]) -> Isolation:
        """This isolation relaying each allowed port to its host-side unix socket (bwrap, unshare)."""
        return dataclasses.replace(self, relays=tuple(sorted(relays.items())))

    @property
    def bridged(self) -> bool:
        """Whether the allowed ports reach the host through ``loopback.HostBridge`` (a network namespace)."""
        return bool(self.config.allow_ports) and self.level in (IsolationLevel.BWRAP, IsolationLevel.UNSHARE)

    def process_limit(self, budget: int | None) -> int | None:
        """The RLIMIT_NPROC to set for a run allowed ``budget`` processes, or None when not enforceable.

        The kernel counts every process of the real uid and never limits uid 0. A dedicated sandbox uid gets
        the budget itself; a normal user's own processes (selfix, the runner...) are added to the budget.
        """
        if budget is None or not self.nproc_enforced:
            return None
        if self.uid is not None:
            return budget
        return _count_processes(os.getuid()) + budget

    def exit_status(self, returncode: int | None) -> int | None:
        """bwrap and the sh wrapper report a child killed by signal N as 128+N; give it back as -N."""
        if returncode is None or self.kind not in _REPORTS_SIGNALS_AS_128:
            return returncode
        if 128 < returncode <= 128 + 64:
            return -(returncode - 128)
        return returncode

    def prepare(self, writable: Iterable[str | Path]) -> None:
        """Hand the writable scratch dirs to the sandbox uid (bwrap as root). Never follows a link."""
        if self.uid is None or self.gid is None:
            return
        for path in writable:
            _chown_tree(Path(path), self.uid, self.gid)

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: str | Path,
        env: Mapping[str, str],
        writable: Iterable[str | Path] = (),
        hidden: Iterable[str | Path] = (),
        network: bool | None = None,
    ) -> list[str]:
        """The argv that runs ``argv`` in ``cwd`` inside this isolation.

        ``writable``: the only paths the command may write (bwrap); ``hidden``: more paths to hide, e.g. the
        original repository; ``network``: allow the host's network (default: ``self.network``, False but for
        the setup command). Raises SandboxError when the command cannot be found or a path is unsafe.
        """
        args = list(argv)
        if self.level is IsolationLevel.NONE:
            return args
        online = self.network if network is None else network
        workdir = Path(cwd).resolve()
        program = _resolve_program(args[0], workdir, env.get("PATH", os.defpath))
        relay = self._relay_args() if not online else []
        if self.level is IsolationLevel.UNSHARE:
            return [*self._unshare_prefix(online, relay), *args]
        if self.level is IsolationLevel.LANDLOCK:
            return [*self._landlock_prefix(program, workdir, env, writable, hidden, online), *args]
        extra = _network_files() if online else [_LAUNCHER.parent] if relay else []
        plan = _plan_mounts(self.config, program, workdir, env, writable, hidden, extra)
        launcher = [sys.executable, "-I", str(_LAUNCHER), *relay, "--"] if relay else []
        return [*self._bwrap_prefix(plan, workdir, online), *launcher, *args]

    def _relay_args(self) -> list[str]:
        """``--relay PORT=SOCKET`` for each allowed port the host bridge carries (loopback.py)."""
        allowed = set(self.config.allow_ports)
        return [arg for port, path in self.relays if port in allowed for arg in ("--relay", f"{port}={path}")]

    def _landlock_prefix(
        self,
        program: Path,
        workdir: Path,
        env: Mapping[str, str],
        writable: Iterable[str | Path],
        hidden: Iterable[str | Path],
        network: bool = False,
    ) -> list[str]:
        from selfix_action.sandbox.confine import policy_json

        rw = _existing(writable)
        for path in rw:
            if path == Path("/") or any(_within(s, path) for s in _SYSTEM_DIRS):
                raise SandboxError(f"refusing to make {path} writable: it contains the system")
        overrides: dict[str, str] = {}
        if rw:
            base = rw[0]
            home, tmp = base / ".selfix-home", base / ".selfix-tmp"
            for path in (home, tmp):
                path.mkdir(mode=0o700, exist_ok=True)
            # Replaced unless the caller already put them in the writable area (``process.private_dirs``).
            for name, private in (("HOME", home), *((name, tmp) for name in _TMP_VARIABLES)):
                if not any(_within(Path(os.path.realpath(env.get(name, "/"))), w) for w in rw):
                    overrides[name] = str(private)
        secret = _existing(
            [
                *_HIDDEN_DIRS,
                *_PRIVATE_DIRS,
                *_home_dirs(env),
                *(os.environ.get(v) for v in _RUNNER_DIR_VARIABLES),
                *self.config.hide_paths,
                *hidden,
            ]
        )
        readable = [*_SYSTEM_DIRS]
        network_files = _network_files() if network else ()
        for path in _existing([*_needed_paths(program, env), *self.config.readable_paths, *network_files]):
            if path == Path("/") or any(_within(s, path) for s in secret):
                continue  # would expose a hidden path (e.g. a python installed directly in $HOME)
            readable.append(path)
        if self.uid is not None:
            for path in (program, *rw):
                _check_reachable(path, self.uid, self.gid)
        # POSIX semaphores and shared memory (multiprocessing's locks, a ProcessPoolExecutor) live in /dev/shm:
        # without it such tests failed here and passed outside (the sandbox differential: black's multi-file
        # runs). No mount namespace here, so it is the host's /dev/shm: the sandbox uid reaches only what others
        # left world-writable there, which bwrap's private /dev/shm would not show it.
        shared_memory = [p for p in (Path("/dev/shm"),) if p.is_dir()]
        policy = policy_json(
            read=[str(p) for p in [*readable, Path("/proc"), Path("/sys")]],
            write=[str(p) for p in [*rw, *shared_memory]],
            devices=list(_DEVICES),
            uid=self.uid,
            gid=self.gid,
            env=overrides,
            network=network,
            ports=() if network else self.config.allow_ports,
        )
        return [self.tool, "-I", "-m", "selfix_action.sandbox.confine", policy, "--"]

    def _unshare_prefix(self, network: bool = False, relay: Sequence[str] = ()) -> list[str]:
        if network:
            # No network namespace: only the pid namespace (where there is one) is left to add.
            if self.kind == "unshare-root":
                flags = ["--pid", "--fork", "--mount-proc", "--kill-child"]
            elif self.kind == "unshare-user":
                flags = ["--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child"]
            else:
                return []
            return [self.tool, *flags, "--", "/bin/sh", "-c", '"$@"; exit $?', "sh"]
        # A fresh network namespace has its loopback down: the launcher brings it up, then becomes the command.
        loopback = [sys.executable, "-I", str(_LAUNCHER), *relay, "--"]
        if self.kind == "unshare-root":
            flags = ["--net", "--pid", "--fork", "--mount-proc", "--kill-child"]
        elif self.kind == "unshare-user":
            flags = ["--user", "--map-root-user", "--net", "--pid", "--fork", "--mount-proc", "--kill-child"]
        elif self.kind == "unshare-user-net":
            return [self.tool, "--user", "--map-root-user", "--net", "--", *loopback]
        else:
            return [self.tool, "--net", "--", *loopback]
        # The command must not be pid 1 of the namespace: pid 1 ignores signals it has no handler for
        # (SIGXCPU from the CPU limit, SIGTERM) and must reap orphans. sh is pid 1 and waits for it.
        return [self.tool, *flags, "--", "/bin/sh", "-c", '"$@"; exit $?', "sh", *loopback]

    def _bwrap_prefix(self, plan: _MountPlan, workdir: Path, network: bool = False) -> list[str]:
        args = [self.tool]
        if self.kind == "bwrap-root":
            # No user namespace: it would map the sandbox uid back to host root, where RLIMIT_NPROC is void.
            args += ["--unshare-ipc", "--unshare-pid", *([] if network else ["--unshare-net"])]
            args += ["--unshare-uts", "--unshare-cgroup-try"]
        else:
            # user, ipc, pid, net, uts, cgroup; --share-net for the setup command only
            args += ["--unshare-all", *(["--share-net"] if network else [])]
        args += [
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ]
        for path, private in plan.covers:
            if private:
                args += ["--perms", "1777", "--tmpfs", str(path)]
            elif path.is_dir():
                args += ["--perms", "0755", "--tmpfs", str(path)]
            else:
                args += ["--ro-bind", "/dev/null", str(path)]
        made: set[Path] = set()
        for flag, paths in (("--ro-bind", plan.readable), ("--bind", plan.writable)):
            for path in paths:
                # bwrap would create the missing parents of a mount point with the source parents' modes
                # (often 0700 root): make them traversable for the sandbox uid first.
                for parent in reversed(path.parents):
                    if parent not in made and any(parent != c and _within(parent, c) for c, _ in plan.covers):
                        args += ["--perms", "0755", "--dir", str(parent)]
                        made.add(parent)
                args += [flag, str(path), str(path)]
        for path, private in plan.covers:
            if not private and path.is_dir():
                args += ["--remount-ro", str(path)]
        args += ["--chdir", str(workdir)]
        if self.kind == "bwrap-root":
            assert self.uid is not None and self.gid is not None
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP", "--"]
            args += [self.setpriv, "--reuid", str(self.uid), "--regid", str(self.gid), "--clear-groups"]
            args += ["--inh-caps=-all", "--bounding-set=-all", "--"]
        else:
            args += ["--cap-drop", "ALL", "--"]
        return args


# --- mounts ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _MountPlan:
    covers: tuple[tuple[Path, bool], ...]  # (path, private): private = writable tmpfs, else hidden read-only
    readable: tuple[Path, ...]  # re-exposed read-only below a covered dir
    writable: tuple[Path, ...]


def _within(path: Path, ancestor: Path) -> bool:
    return path == ancestor or ancestor in path.parents


def _existing(paths: Iterable[str | Path | None]) -> list[Path]:
    found = []
    for raw in paths:
        if not raw:
            continue
        path = Path(os.path.realpath(raw))
        if path.exists() and path not in found:
            found.append(path)
    return found


def _coverable(path: Path) -> bool:
    """A path we may put a tmpfs over: not ``/`` and not a system dir or one of its parents/children."""
    return path != Path("/") and not any(_within(system, path) or _within(path, system) for system in _SYSTEM_DIRS)


def _home_dirs(env: Mapping[str, str]) -> list[str]:
    homes = [os.environ.get("HOME", ""), env.get("HOME", "")]
    with contextlib.suppress(KeyError):
        homes.append(pwd.getpwuid(os.geteuid()).pw_dir)
    return [h for h in homes if h]


def former_home(env: Mapping[str, str], writable: Iterable[str | Path]) -> tuple[Path, ...]:
    """The home ``env`` names, for a caller that gives its run a private one instead (``process.private_dirs``):
    to pass as ``hidden``, so that the home the run no longer names is still hidden (bwrap) and unreadable
    (landlock), as it was when the run's ``HOME`` named it. Nothing when it cannot be hidden and need not be:
    it holds the system, or holds or lies in the writable area (``HOME=/tmp``, private at bwrap anyway)."""
    found = _existing([env.get("HOME")])
    rw = _existing(writable)
    return tuple(
        home
        for home in found
        if home.is_dir() and _coverable(home) and not any(_within(w, home) or _within(home, w) for w in rw)
    )


def _plan_mounts(
    config: IsolationConfig,
    program: Path,
    workdir: Path,
    env: Mapping[str, str],
    writable: Iterable[str | Path],
    hidden: Iterable[str | Path],
    extra_readable: Iterable[str | Path] = (),
) -> _MountPlan:
    private = _existing([*_PRIVATE_DIRS, env.get("HOME"), *(env.get(v) for v in _TMP_VARIABLES)])
    secret = _existing(
        [
            *_HIDDEN_DIRS,
            *_home_dirs(env),
            *(os.environ.get(v) for v in _RUNNER_DIR_VARIABLES),
            *config.hide_paths,
            *hidden,
        ]
    )
    private = [p for p in private if _coverable(p)]
    secret = [p for p in secret if p not in private]
    for path in secret:
        if not _coverable(path):
            raise SandboxError(f"refusing to hide {path}: the command needs it to run")
    rw = _existing(writable)
    private = [p for p in private if not any(_within(p, w) for w in rw)]  # e.g. HOME set to the scratch dir
    for path in rw:
        clash = next((c for c in secret if _within(c, path)), None)
        if clash is not None or path == Path("/") or any(_within(s, path) for s in _SYSTEM_DIRS):
            raise SandboxError(f"refusing to make {path} writable: it contains {clash or 'the system'}")
    covered = private + secret
    # A hidden cover below another cover adds nothing (and must not undo a private dir's writability); a private
    # dir below one (HOME=/tmp/home) is kept, mounted after its parent, so that it exists and stays writable.
    covers = sorted(
        ((p, p in private) for p in covered if p in private or not any(o != p and _within(p, o) for o in covered)),
        key=lambda item: len(item[0].parts),
    )
    readable: list[Path] = []
    for path in _existing([*_needed_paths(program, env), *config.readable_paths, *extra_readable]):
        if not any(_within(path, c) for c, _ in covers):
            continue  # visible anyway
        if any(_within(s, path) for s in covered):
            continue  # would re-expose a hidden path (e.g. a python installed directly in $HOME)
        if any(_within(path, w) for w in rw):
            continue  # the writable bind covers it
        readable.append(path)
    readable = sorted(
        (p for p in readable if not any(o != p and _within(p, o) for o in readable)),
        key=lambda p: len(p.parts),
    )
    return _MountPlan(tuple(covers), tuple(readable), tuple(sorted(rw, key=lambda p: len(p.parts))))


def _network_files() -> list[Path]:
    """Name resolution's files when they are links out of ``/etc`` (systemd-resolved's ``resolv.conf`` lives
    in ``/run``, which is hidden): their targets, re-exposed read-only for a run with the network."""
    found = []
    for name in ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf"):
        real = Path(os.path.realpath(name))
        if real.is_file() and not any(_within(real, s) for s in _SYSTEM_DIRS):
            found.append(real)
    return found


def _resolve_program(program: str, workdir: Path, path_env: str) -> Path:
    if "/" in program:
        found: str | None = str(workdir / program)
    else:
        found = shutil.which(program, path=path_env)
    if found is None or not os.path.exists(found):
        raise SandboxError(f"test command not found: {program}")
    if not os.access(found, os.X_OK) or os.path.isdir(found):
        raise SandboxError(f"test command is not executable: {program}")
    return Path(os.path.abspath(found))


def _needed_paths(program: Path, env: Mapping[str, str]) -> list[Path]:
    """What the command must read even if it lives in a hidden dir: its installation and Python paths.

    For each link in the program's symlink chain: the installation root (the parent of ``bin``), and for a
    virtualenv the base interpreter named in ``pyvenv.cfg``. selfix's own interpreter, and PYTHONPATH.
    """
    needed: list[Path] = []
    current = program
    for _ in range(16):
        needed.append(current.parent.parent if current.parent.name == "bin" else current.parent)
        cfg = current.parent.parent / "pyvenv.cfg"
        if cfg.is_file():
            for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    home = Path(value.strip())
                    needed.append(home.parent if home.name == "bin" else home)
        if not current.is_symlink():
            break
        current = Path(os.path.normpath(current.parent / os.readlink(current)))
    real = Path(os.path.realpath(program))
    needed.append(real.parent.parent if real.parent.name == "bin" else real.parent)
    needed += [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}]
    needed += [Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.isabs(p)]
    return needed


def _check_reachable(program: Path, uid: int, gid: int | None) -> None:
    """The sandbox uid must be able to walk to the program and its installation: there is no mount namespace
    to re-expose an interpreter below a 0700 dir (e.g. pyenv in /root) as bwrap does."""
    for path in {program, Path(os.path.realpath(program))}:
        for parent in reversed(path.parents):
            try:
                info = parent.stat()
            except OSError:
                continue
            if info.st_uid == uid:
                ok = info.st_mode & stat.S_IXUSR
            elif info.st_gid == gid:
                ok = info.st_mode & stat.S_IXGRP
            else:
                ok = info.st_mode & stat.S_IXOTH
            if not ok:
                mode = f"{stat.S_IMODE(info.st_mode):o}"
                raise SandboxError(
                    f"isolation landlock: the sandbox uid {uid} cannot reach {path}: {parent} (mode {mode}) is "
                    "not searchable by it; install the interpreter/environment outside it, or use bwrap"
                )


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    """chown -R without following links; a hard-linked file (nlink > 1) is skipped, it may be outside."""
    try:
        os.chown(root, uid, gid, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not root.is_dir() or root.is_symlink():
        return
    for _dirpath, dirnames, filenames, dirfd in os.fwalk(root, follow_symlinks=False):
        for name in (*dirnames, *filenames):
            with contextlib.suppress(FileNotFoundError):
                info = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                if info.st_uid == uid and info.st_gid == gid:
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                    continue
                os.chown(name, uid, gid, dir_fd=dirfd, follow_symlinks=False)


def _count_processes(uid: int) -> int:
    count = 0
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as handle:
                    for line in handle:
                        if line.startswith("Uid:"):
                            count += int(line.split()[1]) == uid
                            break
            except OSError:
                continue
    return count


# --- detection ---------------------------------------------------------------------------------------------


def no_isolation(reason: str = "isolation mode is 'none'", fallbacks: Sequence[str] = ()) -> Isolation:
    warnings = [
        f"NO ISOLATION ({reason}): the code under test can use the network, read every file selfix can "
        "read and see other processes; only the environment allowlist and resource limits apply."
    ]
    if os.geteuid() == 0:
        warnings.append("Running as root: the process-count limit is not enforced.")
    return Isolation(
        level=IsolationLevel.NONE,
        mechanism="plain subprocess",
        warnings=tuple(warnings),
        fallbacks=tuple(fallbacks),
    )


def _candidates(config: IsolationConfig) -> list[Isolation]:
    root = os.geteuid() == 0
    found: list[Isolation] = []
    bwrap = shutil.which("bwrap")
    setpriv = shutil.which("setpriv")
    unshare = shutil.which("unshare")
    if config.mode in ("auto", "bwrap") and bwrap:
        if root and setpriv:
            found.append(
                Isolation(
                    level=IsolationLevel.BWRAP,
                    mechanism=f"bwrap as root, command dropped to uid {config.sandbox_uid} by setpriv",
                    kind="bwrap-root",
                    tool=bwrap,
                    setpriv=setpriv,
                    uid=config.sandbox_uid,
                    gid=config.sandbox_gid,
                    nproc_enforced=True,
                    config=config,
                )
            )
        elif not root:
            found.append(
                Isolation(
                    level=IsolationLevel.BWRAP,
                    mechanism="bwrap in a user namespace",
                    kind="bwrap-user",
                    tool=bwrap,
                    nproc_enforced=True,
                    config=config,
                )
            )
    if config.mode in ("auto", "landlock"):
        found += _landlock_candidates(config, root)
    if config.mode in ("auto", "unshare") and unshare:
        no_fs = "no filesystem isolation: files are protected only by their permissions."
        if root:
            found.append(
                Isolation(
                    level=IsolationLevel.UNSHARE,
                    mechanism="unshare --net --pid --mount-proc (as root)",
                    kind="unshare-root",
                    tool=unshare,
                    warnings=(no_fs, "Running as root: the process-count limit is not enforced."),
                    config=config,
                )
            )
            found.append(
                Isolation(
                    level=IsolationLevel.UNSHARE,
                    mechanism="unshare --net (as root)",
                    kind="unshare-root-net",
                    tool=unshare,
                    warnings=(
                        no_fs,
                        "No pid namespace: other processes and their environments are visible.",
                        "Running as root: the process-count limit is not enforced.",
                    ),
                    config=config,
                )
            )
        else:
            found.append(
                Isolation(
                    level=IsolationLevel.UNSHARE,
                    mechanism="unshare --user --net --pid --mount-proc",
                    kind="unshare-user",
                    tool=unshare,
                    nproc_enforced=True,
                    warnings=(no_fs,),
                    config=config,
                )
            )
            found.append(
                Isolation(
                    level=IsolationLevel.UNSHARE,
                    mechanism="unshare --user --net",
                    kind="unshare-user-net",
                    tool=unshare,
                    nproc_enforced=True,
                    warnings=(no_fs, "No pid namespace: other processes of this user are visible."),
                    config=config,
                )
            )
    return found


def _landlock_candidates(config: IsolationConfig, root: bool) -> list[Isolation]:
    from selfix_action.sandbox.confine import landlock_abi

    abi = landlock_abi()
    if abi < 1:
        return []  # detect_isolation records why
    weaker = []
    if abi < 4:
        weaker.append(f"Landlock ABI {abi} < 4: TCP is denied by the seccomp filter only.")
    if abi < 6:
        weaker.append(f"Landlock ABI {abi} < 6: no signal/abstract-socket scoping (the uid still separates).")
    weaker.append("No pid namespace: other processes are visible in /proc (not their environment or memory).")
    if config.allow_ports and abi < 4:
        weaker.append(f"Landlock ABI {abi} < 4: allow_ports cannot be opened by port, so they stay closed.")
    elif config.allow_ports:
        weaker.append(
            "allow_ports: Landlock allows TCP connect by port, not by address: the allowed ports are open on any "
            "address, not only the loopback."
        )
    if root:
        return [
            Isolation(
                level=IsolationLevel.LANDLOCK,
                mechanism=f"Landlock ABI {abi} + seccomp, command dropped to uid {config.sandbox_uid}",
                kind="landlock-root",
                tool=sys.executable,
                uid=config.sandbox_uid,
                gid=config.sandbox_gid,
                nproc_enforced=True,
                warnings=tuple(weaker),
                config=config,
            )
        ]
    return [
        Isolation(
            level=IsolationLevel.LANDLOCK,
            mechanism=f"Landlock ABI {abi} + seccomp, as this user",
            kind="landlock-user",
            tool=sys.executable,
            nproc_enforced=True,
            warnings=tuple(weaker),
            config=config,
        )
    ]


def _probe(candidate: Isolation) -> str | None:
    """Run a trivial command through the candidate; None if it works, else why not.

    The command checks from inside that it really is in another network (and pid) namespace and runs as
    the expected uid, so a wrapper that silently does less than promised is not used.
    """
    if candidate.level is IsolationLevel.LANDLOCK:
        # No namespaces to check: the confinement itself, seen from inside (no_new_privs, a seccomp
        # filter, no capability, and / unreadable).
        checks = [
            "grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status || exit 6",
            "grep -q '^Seccomp:[[:space:]]*2' /proc/self/status || exit 7",
            "grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status || exit 8",
            "! ls / >/dev/null 2>&1 || exit 9",
        ]
    else:
        checks = [f'[ "$(readlink /proc/self/ns/net)" != "{os.readlink("/proc/self/ns/net")}" ] || exit 3']
    namespaced = candidate.level is not IsolationLevel.LANDLOCK
    if namespaced and candidate.kind not in ("unshare-root-net", "unshare-user-net"):
        checks.append(f'[ "$(readlink /proc/self/ns/pid)" != "{os.readlink("/proc/self/ns/pid")}" ] || exit 4')
    if candidate.uid is not None:
        checks.append(f'[ "$(id -u)" = "{candidate.uid}" ] || exit 5')
    script = "; ".join([*checks, "exit 0"])
    scratch = Path(tempfile.mkdtemp(prefix="selfix-probe-"))
    try:
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(scratch)}
        argv = candidate.wrap(["sh", "-c", script], cwd=scratch, env=env, writable=[scratch])
        candidate.prepare([scratch])
        done = subprocess.run(
            argv,
            cwd=scratch,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, SandboxError, subprocess.SubprocessError) as exc:
        return f"{candidate.kind}: {exc}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if done.returncode == 0:
        return None
    detail = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    what = {
        3: "still in the host network namespace",
        4: "still in the host pid namespace",
        5: "wrong uid",
        6: "no_new_privs not set",
        7: "no seccomp filter",
        8: "capabilities left",
        9: "the filesystem is not confined",
    }
    reason = what.get(done.returncode) or (detail[-1] if detail else f"exit {done.returncode}")
    return f"{candidate.kind}: {reason}"


@functools.lru_cache(maxsize=16)
def _probe_cached(candidate: Isolation) -> str | None:
    return _probe(candidate)


def detect_isolation(config: IsolationConfig | None = None) -> Isolation:
    """The best isolation that works here, probed once per process and configuration.

    Raises SandboxError when ``require_isolation`` is set (or a level is named in ``mode``) and it is not
    available. At level none the returned object carries a loud warning: put ``summary()`` in the report.
    """
    config = config or IsolationConfig()
    if config.mode == "none":
        return no_isolation()
    fallbacks: list[str] = []
    if config.mode in ("auto", "bwrap") and not shutil.which("bwrap"):
        fallbacks.append("bwrap: not installed")
    if config.mode in ("auto", "bwrap") and os.geteuid() == 0 and shutil.which("bwrap") and not shutil.which("setpriv"):
        fallbacks.append("bwrap: setpriv (util-linux) not installed, needed to drop root")
    if config.mode in ("auto", "landlock"):
        from selfix_action.sandbox.confine import landlock_abi

        if landlock_abi() < 1:
            fallbacks.append("landlock: not available (kernel without Landlock, disabled, or refused by seccomp)")
    if config.mode in ("auto", "unshare") and not shutil.which("unshare"):
        fallbacks.append("unshare: not installed")
    for candidate in _candidates(config):
        failure = _probe_cached(candidate)
        if failure is None:
            chosen = dataclasses.replace(candidate, fallbacks=tuple(fallbacks))
            if chosen.warnings:
                log.warning("%s", chosen.summary())
            else:
                log.info("%s", chosen.summary())
            return chosen
        fallbacks.append(failure)
    if config.mode != "auto":
        raise SandboxError(f"isolation mode {config.mode!r} is not available here: {'; '.join(fallbacks)}")
    if config.require_isolation:
        raise SandboxError(
            "require_isolation is set but none of bwrap, landlock, unshare works here: " + "; ".join(fallbacks)
        )
    chosen = no_isolation("none of bwrap, landlock, unshare works here", fallbacks)
    log.warning("%s", chosen.summary())
    return chosen
