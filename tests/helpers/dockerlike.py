"""Run a command the way a GitHub Docker action's container runs it: Docker's default seccomp rules and
capability set, so that namespaces are refused (what bwrap and ``unshare -n`` hit in the field).

    python tests/helpers/dockerlike.py -- command args...

As root: a seccomp filter (no no_new_privs, like Docker) makes unshare, setns, the mount family, keyrings,
bpf, perf_event_open, userfaultfd and clone with any CLONE_NEW* flag fail with EPERM, and clone3 with ENOSYS
(Docker's answer, so that libc falls back to clone); landlock_* stays allowed (moby PR 43199, Docker >= 23).
Then every capability outside Docker's default set (CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_NET_ADMIN,
CAP_DAC_READ_SEARCH, ...) leaves the bounding set, so the command, exec'd as root, has only Docker's 14.
"""

from __future__ import annotations

import errno
import os
import sys

import pyseccomp as seccomp

# CAP_CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, NET_RAW,
# SYS_CHROOT, MKNOD, AUDIT_WRITE, SETFCAP: Docker's default capability set.
DOCKER_DEFAULT_CAPS = frozenset({0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 27, 29, 31})
_REFUSED = (
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
)
_CLONE_NEW = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)
_PR_CAPBSET_DROP = 24


def enter() -> None:
    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    flt.set_attr(seccomp.Attr.CTL_NNP, 0)  # Docker sets no no_new_privs: setuid binaries still work
    for name in _REFUSED:
        flt.add_rule(seccomp.ERRNO(errno.EPERM), name)
    for flag in _CLONE_NEW:
        flt.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    flt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    flt.load()  # as root with CAP_SYS_ADMIN: allowed without no_new_privs
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    last = int(open("/proc/sys/kernel/cap_last_cap", encoding="ascii").read())
    for cap in range(last + 1):
        if cap not in DOCKER_DEFAULT_CAPS and libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"cannot drop capability {cap} from the bounding set")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("dockerlike: must run as root (a Docker container's root)", file=sys.stderr)
        return 2
    enter()
    os.execvp(argv[1], argv[1:])
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
