"""The server's structured logs (one JSON object per line) and its Prometheus metrics (text format 0.0.4).

The metrics are a handful of counters and gauges, written out by hand rather than through prometheus-client: the
format is a few lines of text, and one dependency fewer is one fewer thing for the image to keep up to date.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

LOGGER_NAME = "selfix.serve"
# The fields a log line may carry besides the message: what an operator filters on.
LOG_FIELDS = ("event", "source", "fingerprint", "delivery", "status", "reason", "repo", "count", "error", "url")


class JSONLineFormatter(logging.Formatter):
    """One JSON object per line: time, level, the message and the fields passed as ``extra``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "message": record.getMessage(),
        }
        for key in LOG_FIELDS:
            value = record.__dict__.get(key)
            if value is not None and value != "":
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure_logging(level: int = logging.INFO) -> logging.Logger:
    handler = logging.StreamHandler()
    handler.setFormatter(JSONLineFormatter())
    logger = logging.getLogger(LOGGER_NAME)
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
    return logger


def log() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)


_HELP = {
    "selfix_serve_received_total": "Webhook requests received, by source.",
    "selfix_serve_accepted_total": "Signals stored and acknowledged, by source.",
    "selfix_serve_ignored_total": "Valid deliveries that ask for no heal, by source.",
    "selfix_serve_refused_total": "Requests refused, by reason (signature, replay, size, body, content type, busy).",
    "selfix_serve_deduplicated_total": "Accepted signals whose fingerprint was already known.",
    "selfix_serve_dispatched_total": "Heals handed to GitHub Actions or the local pool.",
    "selfix_serve_dispatch_failures_total": "Dispatches that failed, by reason.",
}


Labels = tuple[tuple[str, str], ...]
Gauges = Mapping[str, tuple[str, Callable[[], Mapping[Labels, float]]]]


class Metrics:
    """Thread-safe counters (the event loop and the dispatcher thread both count)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()

    def count(self, name: str, **labels: str) -> None:
        with self._lock:
            self._counters[(name, tuple(sorted(labels.items())))] += 1

    def value(self, name: str, **labels: str) -> int:
        with self._lock:
            return self._counters[(name, tuple(sorted(labels.items())))]

    def render(
        self, gauges: Mapping[str, tuple[str, Callable[[], Mapping[tuple[tuple[str, str], ...], float]]]]
    ) -> str:
        """The Prometheus text: every counter (each declared once, even at zero) and ``gauges``, which map a name
        to its help and a function giving its labelled values when scraped."""
        with self._lock:
            counters = dict(self._counters)
        lines: list[str] = []
        for name, help_text in _HELP.items():
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
            samples = sorted((labels, v) for (n, labels), v in counters.items() if n == name)
            for labels, value in samples or [((), 0)]:
                lines.append(f"{name}{_labels(labels)} {value}")
        for name, (help_text, values) in gauges.items():
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
            for labels, level in sorted(values().items()):
                lines.append(f"{name}{_labels(labels)} {level:g}")
        return "\n".join(lines) + "\n"


def _labels(labels: tuple[tuple[str, str], ...]) -> str:
    if not labels:
        return ""
    escaped = (
        f'{key}="{value.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34)).replace(chr(10), " ")}"'
        for key, value in labels
    )
    return "{" + ",".join(escaped) + "}"
