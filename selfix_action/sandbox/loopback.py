"""Inside a fresh network namespace, bring the loopback interface up, relay the allowed ports, then become the
command.

    python -I .../selfix_action/sandbox/loopback.py [--relay PORT=SOCKET ...] -- COMMAND [ARGS...]

``unshare --net`` makes a namespace whose ``lo`` is down: even 127.0.0.1 is unreachable there, so a test that
talks to a server of its own on localhost failed at the ``unshare`` level and passed outside (the sandbox
differential: boltons' socket tests, "Network is unreachable"). bwrap brings ``lo`` up itself. No other
interface exists in the namespace, so nothing outside is reachable after this either.

``allow_ports`` (``IsolationConfig.allow_ports``: a database or cache the CI job started on the runner's
loopback) is carried across the namespace's edge by two halves that share ``pump``:

* inside, this launcher forks a relay before it execs the command: it listens on 127.0.0.1:PORT and [::1]:PORT
  of the namespace's own loopback and carries each connection to the path-named unix socket ``SOCKET`` (in the
  scratch area, the only thing of the host's it reaches); it runs as the command's uid with the command's
  rights, and dies with it (``PR_SET_PDEATHSIG``, and the pid namespace);
* outside, ``HostBridge`` (selfix's own process, started by ``PytestSandbox``) accepts on ``SOCKET`` and
  connects to the host's 127.0.0.1:PORT, and nowhere else: whatever the code under test sends, the one
  place it can reach is that port of the host's loopback.

A port is relayed only when something listens on it on the host when the sandbox opens, so a test still
gets a plain "connection refused" for a service that is not there (``repair.services`` reads it) and can
bind the port itself. This file runs as a script (``-I``, the standard library only) so that it needs
nothing of selfix's installation inside the sandbox but this one file.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
_IFREQ = "16sh"
_PR_SET_PDEATHSIG = 1
_READY_TIMEOUT_SECONDS = 10.0
_CHUNK = 65536
_STACK_BYTES = 256 * 1024  # the relay's threads live under the run's RLIMIT_AS


def loopback_up() -> None:
    """Set IFF_UP on ``lo`` (the namespace's root holds CAP_NET_ADMIN over it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        name = b"lo"
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack(_IFREQ, name, 0)))[1]
        if not flags & IFF_UP:
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(_IFREQ, name, flags | IFF_UP))


# --- both halves ---------------------------------------------------------------------------------------------


def pump(a: socket.socket, b: socket.socket) -> None:
    """Carry bytes both ways between ``a`` and ``b`` until both directions end; close both."""

    def one_way(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(_CHUNK)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=one_way, args=(b, a), daemon=True)
    other.start()
    one_way(a, b)
    other.join()
    a.close()
    b.close()


def _serve(listener: socket.socket, connect: object) -> None:
    """Accept on ``listener`` forever; each connection is pumped to ``connect()``'s socket (None: dropped)."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return  # closed
        threading.Thread(target=_carry, args=(client, connect), daemon=True).start()


def _carry(client: socket.socket, connect: object) -> None:
    assert callable(connect)
    try:
        upstream = connect()
    except OSError:
        upstream = None
    if upstream is None:
        client.close()
        return
    pump(client, upstream)


# --- outside: selfix's half ----------------------------------------------------------------------------------


def host_listening(port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections on the host's loopback at ``port``."""
    for host in ("127.0.0.1", "::1"):
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            return True
        except OSError:
            continue
    return False


def _at(path: str, use: object) -> None:
    """``use(address)`` with an address for the unix socket ``path`` that fits ``sun_path`` (108 bytes) however
    deep the scratch area is: its folder through ``/proc/self/fd``."""
    assert callable(use)
    folder = os.open(os.path.dirname(path) or ".", os.O_PATH | os.O_CLOEXEC)
    try:
        use(f"/proc/self/fd/{folder}/{os.path.basename(path)}")
    finally:
        os.close(folder)


def _host_connection(port: int) -> socket.socket | None:
    for host in ("127.0.0.1", "::1"):
        try:
            return socket.create_connection((host, port), timeout=10)
        except OSError:
            continue
    return None


class HostBridge:
    """Unix sockets in ``folder``, one per port, each carried to the host's loopback at that port only.

    ``relays`` maps each bridged port to its socket path: the ports something listened on when the bridge
    started (the others are left closed, see the module's docstring)."""

    def __init__(self, folder: Path, ports: Sequence[int]) -> None:
        self.folder = folder
        self.relays: dict[int, str] = {}
        self._listeners: list[socket.socket] = []
        folder.mkdir(mode=0o755, exist_ok=True)
        for port in ports:
            if not host_listening(port):
                continue
            path = folder / f"{port}.sock"
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            _at(str(path), listener.bind)
            path.chmod(0o666)  # the sandbox uid connects; it reaches nothing through it but this port
            listener.listen(64)
            self._listeners.append(listener)
            self.relays[port] = str(path)
            threading.Thread(
                target=_serve, args=(listener, lambda port=port: _host_connection(port)), daemon=True
            ).start()

    def close(self) -> None:
        for listener in self._listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        self._listeners.clear()


# --- inside: the launcher's relay ----------------------------------------------------------------------------


def _unix_connection(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _at(path, sock.connect)
    except OSError:
        sock.close()
        raise
    return sock


def _listeners(relays: dict[int, str]) -> list[tuple[socket.socket, str]]:
    found = []
    for port, path in relays.items():
        for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            try:
                sock = socket.socket(family, socket.SOCK_STREAM)
            except OSError:
                continue  # no IPv6 here
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind((host, port))
                sock.listen(64)
            except OSError as exc:
                print(f"selfix loopback: cannot relay {host} port {port}: {exc}", file=sys.stderr)
                sock.close()
                continue
            found.append((sock, path))
    return found


def _start_relay(relays: dict[int, str]) -> None:
    """Fork the relay: it listens on the allowed ports, then tells the parent it is ready; the parent returns
    (to exec the command), the relay serves until the command dies."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid:
        os.close(write_end)
        import select

        select.select([read_end], [], [], _READY_TIMEOUT_SECONDS)
        os.close(read_end)
        return
    try:
        os.close(read_end)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)  # SIGKILL when the command (the exec'd parent) ends
        if os.getppid() != parent:
            os._exit(0)
        listeners = _listeners(relays)  # errors still go to the run's stderr
        # Hold none of the run's pipes (stdout, stderr, a fork server's channel): the run's end is their EOF.
        keep = {write_end, *(sock.fileno() for sock, _ in listeners)}
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2 and fd != null and fd not in keep:
                with contextlib.suppress(OSError):
                    os.close(fd)
        os.close(null)
        os.write(write_end, b"1")
        os.close(write_end)
        threading.stack_size(_STACK_BYTES)
        threads = [
            threading.Thread(target=_serve, args=(sock, lambda path=path: _unix_connection(path)), daemon=True)
            for sock, path in listeners
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        os._exit(0)


def parse_args(argv: list[str]) -> tuple[dict[int, str], list[str]]:
    """``[--relay PORT=SOCKET ...] -- COMMAND...`` -> ({port: socket path}, command)."""
    relays: dict[int, str] = {}
    while argv and argv[0] == "--relay" and len(argv) > 1:
        port, _, path = argv[1].partition("=")
        relays[int(port)] = path
        argv = argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    return relays, argv


def main(argv: list[str]) -> None:
    relays, command = parse_args(argv)
    if not command:
        sys.exit("selfix loopback: no command given")
    try:
        loopback_up()
    except OSError as exc:  # the command runs all the same, as before, only without localhost
        print(f"selfix loopback: could not bring lo up: {exc}", file=sys.stderr)
    if relays:
        _start_relay(relays)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
