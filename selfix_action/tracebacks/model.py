"""The values: one reported exception, its frames (outermost first, as Python prints them), where it came from."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

# Paths of an installed interpreter's own modules and third-party packages, as deployments lay them out. A frame
# there is a library's unless a checkout says otherwise (an installed copy of the project itself lives there too:
# ``project_frames`` matches by the checkout's files, not by this).
_LIBRARY_PATH = re.compile(r"(^|/)(site-packages|dist-packages|lib/python\d[\d.]*|lib64/python\d[\d.]*)/|^<")


@dataclass(frozen=True)
class ReportedFrame:
    path: str  # as the report gave it: an absolute deployment path, a relative one, or "<frozen ...>"
    line: int
    function: str
    code: str = ""  # the line's text, when the report carried it
    module: str = ""  # the dotted module name, when the report carried it (Sentry)
    in_app: bool | None = None  # Sentry's verdict; None when the report does not say
    # The frame's local variables as the report shows them (Sentry's ``vars``: reprs, cut): the inputs that
    # raised, what a reproduction test most needs. Untrusted text.
    variables: tuple[tuple[str, str], ...] = ()

    @property
    def looks_like_library(self) -> bool:
        if self.in_app is not None:
            return not self.in_app
        return bool(_LIBRARY_PATH.search(self.path.replace("\\", "/")))

    @property
    def short_function(self) -> str:
        """The function's own name: Sentry may give a qualified name (``Parser.parse``), tracebacks the bare one."""
        return self.function.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class ReportedError:
    exc_type: str  # as reported: ``KeyError``, ``mypkg.errors.ParseError``
    message: str
    frames: tuple[ReportedFrame, ...]  # outermost first
    source: str  # "traceback" | "sentry"
    origin: str = ""  # where it came from, for the PR: a Sentry issue's URL, an event id, a file name
    chained: tuple[str, ...] = ()  # the exceptions it was raised from or during (their type: message), oldest first

    @property
    def short_type(self) -> str:
        return self.exc_type.rsplit(".", 1)[-1]

    @property
    def fingerprint(self) -> str:
        return fingerprint(self)

    def headline(self) -> str:
        return f"{self.exc_type}: {self.message}" if self.message else self.exc_type


def _path_tail(path: str) -> str:
    """The last two components of a frame's path: stable across deployments (``/app/src/pkg/mod.py`` and
    ``/srv/releases/42/pkg/mod.py`` are the same file), and across the line numbers a release shifts."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:])


def fingerprint(error: ReportedError) -> str:
    """What makes two reports the same error: the exception type and the application frames it went through
    (file tail and function, never line numbers or the message, which carry ids and values). The library frames
    count only when no frame looks like the application's."""
    frames = [f for f in error.frames if not f.looks_like_library] or list(error.frames)
    key = "\n".join([error.short_type, *(f"{_path_tail(f.path)}:{f.short_function}" for f in frames)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
