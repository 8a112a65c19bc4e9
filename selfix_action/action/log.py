"""The runner's channels: log lines and ``::group::`` blocks, annotations, step outputs and the job summary file.

Untrusted text is echoed only between ``::stop-commands::`` markers with a random token, so a test that prints
``::set-output`` or ``::add-mask::`` cannot steer the runner.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from unidiff import PatchSet

from selfix_action.action.render import SUMMARY_LIMIT, clean
from selfix_action.engine.report import HealReport, StopReason


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


def annotations(report: HealReport, limit: int = 5) -> list[str]:
    """Annotations for the step (GitHub shows up to 10): when healed, a ``::notice`` at each hunk the verified
    patch changes (a fix is not an error); otherwise ``::error`` at the most suspicious lines."""
    out = []
    if report.stop_reason is StopReason.HEALED and report.patch is not None:
        try:
            patched = PatchSet(report.patch.diff)
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
