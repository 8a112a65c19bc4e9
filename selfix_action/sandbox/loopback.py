"""Inside a fresh network namespace, bring the loopback interface up, then become the command.

    python -I -m selfix_action.sandbox.loopback -- COMMAND [ARGS...]

``unshare --net`` makes a namespace whose ``lo`` is down: even 127.0.0.1 is unreachable there, so a test that
talks to a server of its own on localhost failed at the ``unshare`` level and passed outside (the sandbox
differential: boltons' socket tests, "Network is unreachable"). bwrap brings ``lo`` up itself. No other
interface exists in the namespace, so nothing outside is reachable after this either.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import sys

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
_IFREQ = "16sh"


def loopback_up() -> None:
    """Set IFF_UP on ``lo`` (the namespace's root holds CAP_NET_ADMIN over it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        name = b"lo"
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack(_IFREQ, name, 0)))[1]
        if not flags & IFF_UP:
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(_IFREQ, name, flags | IFF_UP))


def main(argv: list[str]) -> None:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.exit("selfix loopback: no command given")
    try:
        loopback_up()
    except OSError as exc:  # the command runs all the same, as before, only without localhost
        print(f"selfix loopback: could not bring lo up: {exc}", file=sys.stderr)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
