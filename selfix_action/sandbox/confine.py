"""The ``landlock`` isolation level's launcher: confine this process, then ``exec`` the command.

Run as ``python -I -m selfix_action.sandbox.confine <policy json> -- argv...`` by ``Isolation.wrap``. It is the
process ``run_process`` started (already in its own session, rlimits already set), so the confinement is
applied in the child before ``exec`` without any ``preexec_fn`` work in selfix's own (possibly threaded)
process. ``-I`` matters: the working directory is the project's scratch copy, and without it a planted
``selfix_action/sandbox/confine.py`` there would be imported and run before any confinement.

In this order, each step fatal (exit 125 with a ``selfix-confine:`` line, the command never runs unconfined):

1. A Landlock ruleset is built while still privileged (opening the allowed paths needs the caller's rights,
   e.g. an interpreter below a 0700 ``/root``): read-only (execute, read) on the system dirs and what the
   command needs; every right on the writable dirs; nothing anywhere else. All TCP bind/connect is handled
   and never allowed (ABI >= 4); abstract unix sockets and signals are scoped to the domain (ABI >= 6).
2. As root: the capability bounding set is emptied, supplementary groups cleared, real/effective/saved gid
   and uid set to the sandbox ids, every capability set cleared (an error if any capability is left).
3. ``PR_SET_NO_NEW_PRIVS``, then ``landlock_restrict_self``.
4. A seccomp filter (libseccomp through ``pyseccomp``): ``socket()`` only for AF_UNIX (EAFNOSUPPORT
   otherwise: no TCP, UDP, raw, netlink or vsock); EPERM for ptrace, process_vm_readv/writev, pidfd_getfd,
   io_uring_*, bpf, perf_event_open, keyrings, userfaultfd, the mount family, unshare, setns, clone with a
   namespace flag, setsid (without a pid namespace the session is the boundary: ``run_process`` kills the
   whole session, which only setsid leaves; setpgid stays allowed, the warm worker uses it per check),
   module/kexec/reboot/swap/acct/quotactl and open_by_handle_at;
   clone3 gets ENOSYS (its flags cannot be inspected; libc falls back to clone). A syscall of any other
   architecture (i386 ``int 0x80``, x32) kills the process.
5. The environment overrides (private HOME/TMPDIR) are applied and the command is ``execvpe``'d.

A policy with ``"ports"`` (``allow_ports``, test runs) adds a Landlock connect rule per port (ABI >= 4; below
it they stay closed) and lets seccomp allow AF_INET/AF_INET6 stream sockets of TCP, without MSG_FASTOPEN.

A policy with ``"network": true`` (the project's setup command only, which installs dependencies) leaves TCP
unhandled by Landlock and lets seccomp allow AF_INET/AF_INET6 sockets too; every other step is the same.

Landlock is driven with ctypes syscalls directly: the PyPI ``landlock`` binding (1.0.0.dev5) only knows
``handled_access_fs`` (no TCP rules, no scopes) and asks for every access right whatever the kernel's ABI.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any


def _import_pyseccomp() -> ModuleType:
    """``import pyseccomp``, without its two ``ctypes.util.find_library`` calls: each runs ``ldconfig -p`` (and
    more) in a subprocess, ~90 ms of every test run. The libraries are opened by soname, as dlopen finds them;
    a miss falls back to the real lookup."""
    import ctypes

    sonames = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}

    def find_library(name: str) -> str | None:
        soname = sonames.get(name)
        if soname is not None:
            try:
                ctypes.CDLL(soname)
                return soname
            except OSError:
                pass
        import ctypes.util as real

        return real.find_library(name)

    stub = ModuleType("ctypes.util")
    stub.find_library = find_library  # type: ignore[attr-defined]
    had = sys.modules.get("ctypes.util")
    sys.modules["ctypes.util"] = stub
    ctypes.util = stub
    try:
        import pyseccomp
    finally:
        if had is None:
            del sys.modules["ctypes.util"]
            del ctypes.util
        else:
            sys.modules["ctypes.util"] = ctypes.util = had
    return pyseccomp


seccomp = _import_pyseccomp()  # imported before the confinement, which may hide its own files

__all__ = ["CONFINE_FAILED", "landlock_abi", "main", "policy_json"]

CONFINE_FAILED = 125  # exit status when the confinement could not be applied (the command did not run)

# x86_64 syscall numbers (the same on aarch64 and every other architecture for these recent ones).
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}.get(os.uname().machine, -1)
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_LANDLOCK_RULE_NET_PORT = 2  # ABI 4

# Filesystem access rights, by the ABI that introduced them.
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
_FS_IOCTL_DEV = 1 << 15  # ABI 5
_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV
_READ_RIGHTS = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1

_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4

_CLONE_NAMESPACES = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
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
    "unshare",
    "setns",
    "setsid",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "open_by_handle_at",
    "name_to_handle_at",
)


class ConfineError(Exception):
    pass


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


def _syscall(number: int, *args: object) -> int:
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(result)


def _prctl(option: int, arg: int = 0) -> None:
    if _libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing, disabled or refused (seccomp)."""
    try:
        return _syscall(
            _SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION)
        )
    except OSError:
        return 0


def policy_json(
    *,
    read: Sequence[str],
    write: Sequence[str],
    devices: Sequence[str],
    uid: int | None,
    gid: int | None,
    env: Mapping[str, str],
    network: bool = False,
    ports: Sequence[int] = (),
) -> str:
    """The launcher's policy. ``network``: TCP is not handled by Landlock and seccomp allows AF_INET and
    AF_INET6 sockets (the setup command's, to install dependencies); False for every test run. ``ports``
    (``allow_ports``, test runs): TCP connect allowed to these ports only (Landlock ABI >= 4), seccomp allowing
    AF_INET/AF_INET6 stream sockets of TCP only; below ABI 4 they stay closed."""
    policy = {"read": list(read), "write": list(write), "devices": list(devices), "uid": uid, "gid": gid}
    extra = {"env": dict(env), "network": bool(network), "ports": [int(p) for p in ports]}
    return json.dumps({**policy, **extra}, separators=(",", ":"))


# --- steps -------------------------------------------------------------------------------------------------


def _handled(abi: int, network: bool = False) -> tuple[int, int, int]:
    fs = _FS_ABI1
    if abi >= 2:
        fs |= _FS_REFER
    if abi >= 3:
        fs |= _FS_TRUNCATE
    if abi >= 5:
        fs |= _FS_IOCTL_DEV
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 and not network else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    return fs, net, scoped


def _build_ruleset(policy: Mapping[str, Any], abi: int) -> int:
    fs, net, scoped = _handled(abi, bool(policy.get("network")))
    attr = _RulesetAttr(fs, net, scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    device_rights = (_FS_READ_FILE | _FS_WRITE_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV) & fs
    for key, rights in (("read", _READ_RIGHTS), ("write", fs), ("devices", device_rights)):
        for path in policy[key]:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a path that does not exist needs no rule
            try:
                allowed = rights if stat.S_ISDIR(os.fstat(fd).st_mode) else rights & _FILE_RIGHTS
                rule = _PathBeneathAttr(allowed, fd)
                _syscall(
                    _SYS_LANDLOCK_ADD_RULE,
                    ctypes.c_int(ruleset),
                    ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                    ctypes.byref(rule),
                    ctypes.c_uint32(0),
                )
            finally:
                os.close(fd)
    for port in _ports(policy, abi):
        port_rule = _NetPortAttr(_NET_CONNECT_TCP, port)  # connect only: bind stays handled and denied
        _syscall(
            _SYS_LANDLOCK_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(_LANDLOCK_RULE_NET_PORT),
            ctypes.byref(port_rule),
            ctypes.c_uint32(0),
        )
    return ruleset


def _ports(policy: Mapping[str, Any], abi: int) -> list[int]:
    """The TCP ports a test run may connect to: none with the network open (nothing is handled) or below
    ABI 4 (no TCP rules: the ports stay closed, by seccomp)."""
    if policy.get("network") or abi < 4:
        return []
    return [int(p) for p in policy.get("ports") or ()]


def _clear_capabilities() -> None:
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two data structs
    data = (_CapData * 2)()
    _syscall(_SYS_CAPSET, ctypes.byref(header), data)


def _capabilities_left() -> list[str]:
    with open("/proc/self/status", encoding="ascii") as handle:
        fields = dict(line.split(":", 1) for line in handle if ":" in line)
    return [name for name in ("CapInh", "CapPrm", "CapEff", "CapAmb") if int(fields.get(name, "0").strip(), 16)]


def _drop_privileges(uid: int, gid: int) -> None:
    if os.geteuid() == 0:
        last_cap = int(open("/proc/sys/kernel/cap_last_cap", encoding="ascii").read())
        for cap in range(last_cap + 1):
            try:
                _prctl(_PR_CAPBSET_DROP, cap)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise ConfineError(f"could not drop to uid {uid} gid {gid}")


def _load_seccomp(network: bool = False, tcp: bool = False) -> None:
    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    flt.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)  # only the native architecture is added
    if tcp and not network:
        # allow_ports: AF_UNIX, and AF_INET/AF_INET6 stream sockets of TCP (protocol 0 or 6) only, which Landlock
        # confines to the allowed ports; UDP, raw, SCTP, MPTCP and every other family refused.
        refused = seccomp.ERRNO(errno.EAFNOSUPPORT)
        for family in (0, *range(3, 10)):
            flt.add_rule(refused, "socket", seccomp.Arg(0, seccomp.EQ, family))
        flt.add_rule(refused, "socket", seccomp.Arg(0, seccomp.GT, 10))
        for family in (2, 10):
            for kind in (0, *range(2, 16)):  # the type's low bits; SOCK_STREAM = 1
                flt.add_rule(
                    refused, "socket", seccomp.Arg(0, seccomp.EQ, family), seccomp.Arg(1, seccomp.MASKED_EQ, 0xF, kind)
                )
            for protocol in range(1, 6):
                flt.add_rule(
                    refused, "socket", seccomp.Arg(0, seccomp.EQ, family), seccomp.Arg(2, seccomp.EQ, protocol)
                )
            flt.add_rule(refused, "socket", seccomp.Arg(0, seccomp.EQ, family), seccomp.Arg(2, seccomp.GT, 6))
        # TCP Fast Open connects inside sendto/sendmsg, past the connect hook Landlock checks: refused.
        fastopen = 0x20000000  # MSG_FASTOPEN
        flt.add_rule(seccomp.ERRNO(errno.EPERM), "sendto", seccomp.Arg(3, seccomp.MASKED_EQ, fastopen, fastopen))
        flt.add_rule(seccomp.ERRNO(errno.EPERM), "sendmsg", seccomp.Arg(2, seccomp.MASKED_EQ, fastopen, fastopen))
        flt.add_rule(seccomp.ERRNO(errno.EPERM), "sendmmsg", seccomp.Arg(3, seccomp.MASKED_EQ, fastopen, fastopen))
    elif not network:
        flt.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.NE, 1))  # AF_UNIX = 1
    else:
        # AF_UNIX (1), AF_INET (2) and AF_INET6 (10) only: no netlink, packet, raw-capable families, vsock.
        refused = seccomp.ERRNO(errno.EAFNOSUPPORT)
        for family in (0, *range(3, 10)):
            flt.add_rule(refused, "socket", seccomp.Arg(0, seccomp.EQ, family))
        flt.add_rule(refused, "socket", seccomp.Arg(0, seccomp.GT, 10))
    for name in DENIED_SYSCALLS:
        flt.add_rule(seccomp.ERRNO(errno.EPERM), name)
    for flag in _CLONE_NAMESPACES:
        flt.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    flt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    flt.load()


def confine(policy: Mapping[str, Any]) -> None:
    """Apply the whole confinement to this process (irreversibly). Raises on any failure."""
    abi = landlock_abi()
    if abi < 1:
        raise ConfineError("Landlock is not available (kernel without it, disabled, or refused by seccomp)")
    ruleset = _build_ruleset(policy, abi)
    try:
        if policy.get("uid") is not None:
            _drop_privileges(int(policy["uid"]), int(policy["gid"]))
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        _syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    _load_seccomp(bool(policy.get("network")), bool(_ports(policy, abi)))
    if policy.get("uid") is not None:
        _clear_capabilities()
        left = _capabilities_left()
        if left:
            raise ConfineError(f"capabilities left after the uid drop: {', '.join(left)}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        print("usage: python -I -m selfix_action.sandbox.confine <policy json> -- command...", file=sys.stderr)
        return 2
    command = args[2:]
    try:
        policy = json.loads(args[0])
        confine(policy)
    except Exception as exc:  # any failure means: do not run the command
        print(f"selfix-confine: cannot confine the command, not running it: {exc}", file=sys.stderr)
        return CONFINE_FAILED
    env = dict(os.environ)
    env.update(policy.get("env") or {})
    sys.stdout.flush()
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        print(f"selfix-confine: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 126 if isinstance(exc, PermissionError) else 127
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
