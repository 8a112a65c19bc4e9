"""Failing tests that could not reach a service on the loopback: the environment's, not the code's.

A test that needs the database or cache its CI job starts (a GitHub Actions ``services: postgres`` on
127.0.0.1:5432) fails in the sandbox, whose loopback ports are closed unless ``allow_ports`` opens them, with a
refused connection; no patch of the project's code is the fix. Read from the failing tests' exception type and
message as the baseline run recorded them (and the address the collector found in the traceback, since a bare
``ConnectionRefusedError`` names no port). Pure: no socket, no sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from selfix_action.repair.values import TestResult

__all__ = ["SERVICES", "ServiceFailures", "refused_port", "unreachable_services"]

# Well-known ports of the services CI jobs start beside the tests.
SERVICES = {
    5432: "postgres",
    3306: "mysql",
    6379: "redis",
    27017: "mongodb",
    11211: "memcached",
    5672: "rabbitmq",
    9200: "elasticsearch",
}

_LOOPBACK = r"(?:localhost|127\.0\.0\.1|\[?::1\]?|0\.0\.0\.0)"
# Connection refused, in the words of the socket module, libpq, redis-py, pymongo, MySQL clients, urllib3...
_REFUSED = re.compile(
    r"connection refused|errno 111\b|error 111\b|econnrefused|\(111\)|actively refused", re.IGNORECASE
)
# What the landlock level answers instead (no network namespace): seccomp refuses the AF_INET socket, Landlock
# the connect to a port not allowed. Only with the address the collector found: these say nothing of a port.
_DENIED = re.compile(r"address family not supported|errno 97\b|permission denied|errno 13\b", re.IGNORECASE)
_REFUSED_TYPES = frozenset({"ConnectionRefusedError"})
_PORT_PATTERNS = (
    re.compile(_LOOPBACK + r"['\"]?\)?:(\d{1,5})\b", re.IGNORECASE),  # localhost:6379, 127.0.0.1:27017
    re.compile(_LOOPBACK + r"['\"]?\)?,? port (\d{1,5})\b", re.IGNORECASE),  # libpq: "... (127.0.0.1), port 5432"
    re.compile(r"host=['\"]?" + _LOOPBACK + r"['\"]?,\s*port=(\d{1,5})", re.IGNORECASE),  # urllib3
    re.compile(r"on port (\d{1,5})\?", re.IGNORECASE),  # older libpq: "TCP/IP connections on port 5432?"
)
_MYSQL = re.compile(r"can't connect to mysql server on '" + _LOOPBACK + r"'", re.IGNORECASE)


def _address_port(address: str) -> int | None:
    port = address.rpartition(":")[2]
    return int(port) if port.isdigit() and 0 < int(port) < 65536 else None


def refused_port(result: TestResult) -> int | None:
    """The loopback port ``result`` failed to connect to, or None when it did not fail that way."""
    text = f"{result.exc_type}: {result.message}"
    if result.address:  # the collector found the loopback address the failed connection was aimed at
        if result.exc_type in _REFUSED_TYPES or _REFUSED.search(text) or _DENIED.search(text):
            return _address_port(result.address)
    if not (result.exc_type in _REFUSED_TYPES or _REFUSED.search(text)):
        return None
    for pattern in _PORT_PATTERNS:
        found = pattern.search(result.message)
        if found and 0 < int(found.group(1)) < 65536:
            return int(found.group(1))
    if _MYSQL.search(result.message):
        return 3306  # the MySQL clients name the host only: the default port
    return None


@dataclass(frozen=True)
class ServiceFailures:
    """The failing tests that could not reach a loopback port, the ports, and what to tell the user."""

    tests: tuple[str, ...]
    ports: tuple[int, ...]
    detail: str


def _service(port: int) -> str:
    name = SERVICES.get(port)
    return f"port {port} ({name}, likely)" if name else f"port {port}"


def unreachable_services(failures: Sequence[TestResult], allow_ports: Collection[int] = ()) -> ServiceFailures | None:
    """The failing tests whose failure is a refused connection to a loopback port, or None when there is none.

    ``allow_ports``: the ports the sandbox opens; one refused there means nothing listens on it."""
    found = {result.nodeid: port for result in failures if (port := refused_port(result)) is not None}
    if not found:
        return None
    ports = tuple(sorted(set(found.values())))
    tests = tuple(found)
    shown = ", ".join(tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
    closed = [p for p in ports if p not in allow_ports]
    opened = [p for p in ports if p in allow_ports]
    parts = [
        f"{len(tests)} failing test(s) could not connect to a service on the loopback, "
        f"{', '.join(_service(p) for p in ports)}: the connection was refused ({shown}). This is the environment "
        "the tests run in, not the project's code, so nothing was patched."
    ]
    if closed:
        listed = ",".join(str(p) for p in sorted({*allow_ports, *closed}))
        parts.append(
            f"The sandbox keeps loopback ports closed unless allowed: set allow_ports: {listed} (selfix fix "
            f"--allow-ports {listed}) if your CI starts this service."
        )
    if opened:
        parts.append(
            f"allow_ports opens {', '.join(str(p) for p in opened)}, but nothing listens there on this machine's "
            "loopback: start the service (e.g. a GitHub Actions services: container with ports: "
            f"{opened[0]}:{opened[0]}) before selfix runs."
        )
    return ServiceFailures(tests=tests, ports=ports, detail=" ".join(parts))
