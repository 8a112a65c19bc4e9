"""A Python traceback as text: what ``traceback.print_exc`` writes, alone or inside a log.

Read: the last ``Traceback (most recent call last):`` block (the exception that was finally raised; the ones it
was raised from or during are kept as ``chained``), its ``File "...", line N, in f`` frames with their code lines,
and the exception line after them. A log's prefix (a timestamp, a level) before the ``Traceback`` line is taken
off the lines that repeat it. Python 3.11's carets, ``[Previous line repeated N more times]`` and exception
notes are skipped.
"""

from __future__ import annotations

import re

from selfix_action.errors import InputError
from selfix_action.tracebacks.model import ReportedError, ReportedFrame

_HEADER = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>.+?))?\s*$')
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
_REPEATED = re.compile(r"^\s*\[Previous line repeated \d+ more times?\]\s*$")
# ``pkg.mod.Error: message`` or a bare ``Error``: a dotted identifier first on its line.
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
MAX_FRAMES = 200
MAX_MESSAGE_CHARS = 2000


def _blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """Each traceback block: its log prefix and its lines after the header, up to the next header."""
    blocks: list[tuple[str, list[str]]] = []
    for line in lines:
        at = line.find(_HEADER)
        if at >= 0:
            blocks.append((line[:at], []))
        elif blocks:
            blocks[-1][1].append(line)
    return blocks


def _unprefixed(prefix: str, line: str) -> str:
    return line[len(prefix) :] if prefix and line.startswith(prefix) else line


def _read_block(prefix: str, lines: list[str]) -> tuple[list[ReportedFrame], str, str]:
    frames: list[ReportedFrame] = []
    exc_type, message_lines = "", []
    index = 0
    while index < len(lines):
        line = _unprefixed(prefix, lines[index]).rstrip("\r")
        index += 1
        if match := _FRAME.match(line):
            code = ""
            if index < len(lines):
                following = _unprefixed(prefix, lines[index]).rstrip("\r")
                if following.startswith(" ") and not _FRAME.match(following) and not _CARETS.match(following):
                    code = following.strip()
                    index += 1
            frames.append(
                ReportedFrame(
                    path=match["path"],
                    line=int(match["line"]),
                    function=(match["function"] or "<module>").strip(),
                    code=code,
                )
            )
            continue
        if not line.strip() or _CARETS.match(line) or _REPEATED.match(line) or line.startswith(" "):
            continue
        if frames and (found := _EXCEPTION.match(line.strip())):
            exc_type = found["type"]
            message_lines = [found["message"] or ""]
            # A message may go on over lines, until a blank line or the log's next record.
            while index < len(lines):
                more = _unprefixed(prefix, lines[index]).rstrip("\r")
                if not more.strip() or (prefix and not lines[index].startswith(prefix) and more == lines[index]):
                    break
                if more.strip() in (
                    "The above exception was the direct cause of the following exception:",
                    "During handling of the above exception, another exception occurred:",
                ):
                    break
                message_lines.append(more)
                index += 1
            break
    message = "\n".join(message_lines).strip()[:MAX_MESSAGE_CHARS]
    return frames[-MAX_FRAMES:], exc_type, message


def read_traceback(text: str, *, origin: str = "") -> ReportedError:
    """The last exception of a traceback text; ``InputError`` when the text holds no readable Python traceback."""
    blocks = _blocks(text.splitlines())
    if not blocks:
        raise InputError(
            "no Python traceback found: expected a 'Traceback (most recent call last):' line followed by "
            "'File \"...\", line N, in ...' frames and the exception line"
        )
    read = [_read_block(prefix, lines) for prefix, lines in blocks]
    usable = [(frames, exc_type, message) for frames, exc_type, message in read if frames and exc_type]
    if not usable:
        raise InputError("the traceback has no frames or no exception line after them: it may be cut short")
    frames, exc_type, message = usable[-1]
    chained = tuple(f"{t}: {m}" if m else t for _, t, m in usable[:-1])
    return ReportedError(
        exc_type=exc_type, message=message, frames=tuple(frames), source="traceback", origin=origin, chained=chained
    )
