"""Errors and exit codes shared by every command.

Third-party exceptions are translated into ``SelfixError`` at the boundary that meets them, so the CLI can
print one clear line and exit with a distinct code.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    HEALED = 0
    NOT_HEALED = 1
    BAD_INPUT = 2
    NOTHING_TO_HEAL = 3


class SelfixError(Exception):
    """An error the user can act on; the message is printed as one line."""

    exit_code: ExitCode = ExitCode.BAD_INPUT


class InputError(SelfixError):
    """Bad command-line input, a missing path, an unusable test command..."""


class JUnitError(SelfixError):
    """A JUnit report that cannot be read: malformed, empty, not JUnit, or hostile."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class SandboxError(SelfixError):
    """The sandbox could not run a command at all (not: the command failed)."""
