"""The runner's channels: log lines and ``::group::`` blocks, annotations, step outputs and the job summary file.

Untrusted text is echoed only between ``::stop-commands::`` markers with a random token, so a test that prints
``::set-output`` or ``::add-mask::`` cannot steer the runner.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from unidiff import PatchedFile, PatchSet

from selfix_action.publish.render import SUMMARY_LIMIT, clean
from selfix_action.repair.report import HealReport, StopReason


def write_summary(path: Path | None, text: str) -> None:
    if path is None:
        return
    existing = path.stat().st_size if path.exists() else 0
    budget = SUMMARY_LIMIT - existing
    data = text.encode("utf-8")
    if budget <= 0:
        return
    if len(data) > budget:
        text = data[: max(budget - 200, 0)].decode("utf-8", errors="ignore") + "\n\n... (truncated)\n"
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def write_outputs(path: Path | None, outputs: Mapping[str, str], stream: TextIO) -> None:
    """Step outputs via GITHUB_OUTPUT, using a random heredoc delimiter so values cannot end the block."""
    if path is None:
        for key, value in outputs.items():
            print(f"selfix output {key}={value}", file=stream)
        return
    with open(path, "a", encoding="utf-8") as handle:
        for key, value in outputs.items():
            delimiter = f"selfix_{secrets.token_hex(12)}"
            handle.write(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")


def escape_property(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def step_annotations(report: HealReport, limit: int = 5) -> list[str]:
    """Annotations for the step (GitHub shows up to 10): when healed, a ``::notice`` at each hunk the verified
    patch changes (a fix is not an error); otherwise ``::error`` at the most suspicious lines."""
    out = []
    if report.stop_reason is StopReason.HEALED and report.patch is not None:
        try:
            patched: PatchSet | list[PatchedFile] = PatchSet(report.patch.diff)
        except Exception:  # unidiff's own parse errors; the PR and the report carry the diff anyway
            patched = []
        for changed in patched:
            for hunk in changed:
                message = f"selfix: fixed here: {report.patch.description}"
                first = next((ln for ln in hunk if not ln.is_context), None)
                number = (first.source_line_no or first.target_line_no) if first is not None else hunk.source_start
                location = f"file={escape_property(changed.path)},line={max(number or 1, 1)}"
                out.append(f"::notice {location},title=selfix::{escape_data(message)}")
        return out[:limit]
    for line in report.suspicious_lines[:limit]:
        message = f"selfix: suspicious line (score {line.score:.2f}): {report.explanation}"
        out.append(f"::error file={escape_property(line.file)},line={line.line},title=selfix::{escape_data(message)}")
    return out


class Log:
    """The action's log: ``::group::`` sections, and untrusted text echoed with workflow commands disabled."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    @contextmanager
    def group(self, title: str) -> Iterator[None]:
        self.line(f"::group::{escape_data(title)}")
        try:
            yield
        finally:
            self.line("::endgroup::")

    def untrusted(self, text: str) -> None:
        self.line(stop_commands(text))

    @contextmanager
    def commands_stopped(self) -> Iterator[None]:
        """Everything written inside runs no workflow command: for streams of untrusted text (the heal's
        progress lines quote test names and failures), ended by a random token they cannot guess."""
        token = secrets.token_hex(16)
        self.line(f"::stop-commands::{token}")
        try:
            yield
        finally:
            self.line(f"::{token}::")

    def note(self, prefix: str, text: str, limit: int = 300) -> None:
        """One log line ending in untrusted text: cleaned and kept on that line, so none of it can start a
        line of its own (workflow commands only run at the start of a line)."""
        self.line(prefix + " ".join(clean(text, limit).split("\n")))

    def command(self, text: str) -> None:
        self.line(text)


def stop_commands(text: str) -> str:
    """``text`` between ``::stop-commands::<random token>`` and ``::<token>::``: the runner executes no workflow
    command (``::set-output``, ``::add-mask::``, ``::error``...) found in between, and ``text`` cannot guess
    the token to end the block early."""
    token = secrets.token_hex(16)
    return f"::stop-commands::{token}\n{text.rstrip(chr(10))}\n::{token}::"


# The heal's progress lines ("[selfix   12.3s] verify: ...") by step, into a few log groups a reader can fold.
PROGRESS_GROUPS: dict[str, str] = {
    "sandbox": "selfix: start",
    "start": "selfix: start",
    "setup": "selfix: setup_command",
    "reproduce": "selfix: reproduce the failure",
    "localize": "selfix: localize",
    "hypotheses": "selfix: hypotheses and candidates",
    "expose": "selfix: hypotheses and candidates",
    "memory": "selfix: hypotheses and candidates",
    "verify": "selfix: hypotheses and candidates",
    "confirm": "selfix: confirm and minimize",
    "minimize": "selfix: confirm and minimize",
    "stop": "selfix: outcome",
    "outcome": "selfix: outcome",
}
_PROGRESS_STEP = re.compile(r"^\[selfix\s+[0-9.]+s\] (?P<step>[a-z_]+): ")


class GroupedProgress:
    """A text stream for the heal's progress: each step's lines in a ``::group::`` of their own, and every line
    (progress quotes test names and failures; setup_command's output is the project's) inside a
    ``::stop-commands::`` block. Groups are opened only for the step names in ``PROGRESS_GROUPS``, so text from a
    test cannot name a group."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self._title = ""
        self._token = ""
        self._pending = ""

    def __enter__(self) -> GroupedProgress:
        self._switch("selfix: start")
        return self

    def __exit__(self, *_: object) -> None:
        if self._pending:
            self.line(self._pending)
            self._pending = ""
        self._close()

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        for line in lines:
            self.line(line)
        return len(text)

    def flush(self) -> None:
        self.log.stream.flush()

    def line(self, text: str) -> None:
        match = _PROGRESS_STEP.match(text)
        title = PROGRESS_GROUPS.get(match.group("step"), "") if match else ""
        if title and title != self._title:
            self._switch(title)
        self.log.line(text)

    def setup_line(self, text: str) -> None:
        """A line of ``setup_command``'s output, in a group of its own."""
        if self._title != PROGRESS_GROUPS["setup"]:
            self._switch(PROGRESS_GROUPS["setup"])
        self.log.line(text)

    def _switch(self, title: str) -> None:
        self._close()
        self._title = title
        self._token = secrets.token_hex(16)
        self.log.line(f"::group::{escape_data(title)}")
        self.log.line(f"::stop-commands::{self._token}")

    def _close(self) -> None:
        if self._token:
            self.log.line(f"::{self._token}::")
            self.log.line("::endgroup::")
            self._token = ""
