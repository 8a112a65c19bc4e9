"""Reported errors read from what real producers write: CPython's own traceback printing (run in a child
interpreter of several versions' shapes where available) and the Sentry SDK's events."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from selfix_action.errors import InputError
from selfix_action.repair.reported_error import locate_frames, render_error
from selfix_action.tracebacks import read_error, read_sentry, read_traceback

_PROGRAM = textwrap.dedent(
    """
    import logging, sys
    sys.path.insert(0, {folder!r})
    import shop.cart as cart
    logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    try:
        cart.total({{"apple": 2}})
    except Exception:
        logging.exception("checkout failed")
    """
)


def _project(tmp_path: Path) -> Path:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "cart.py").write_text(
        textwrap.dedent(
            """
            PRICES = {"pear": 3}


            def price(name):
                try:
                    return PRICES[name]
                except KeyError as exc:
                    raise LookupError(f"no price for {name}") from exc


            def total(items):
                return sum(price(name) * count for name, count in items.items())
            """
        )
    )
    return tmp_path


def _logged(tmp_path: Path) -> str:
    folder = _project(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", _PROGRAM.format(folder=str(folder))], capture_output=True, text=True, timeout=60
    )
    return proc.stdout


def test_a_logged_chained_traceback_reads_as_its_last_exception(tmp_path: Path) -> None:
    text = _logged(tmp_path)
    assert "Traceback (most recent call last):" in text
    error = read_traceback(text)
    assert error.exc_type == "LookupError"
    assert error.message == "no price for apple"
    assert [f.function for f in error.frames][-3:] == ["total", "<genexpr>", "price"]
    assert error.frames[-1].path.endswith("shop/cart.py")
    assert error.frames[-1].code == 'raise LookupError(f"no price for {name}") from exc'
    assert error.chained == ("KeyError: 'apple'",)


def test_a_log_prefix_before_each_line_is_taken_off() -> None:
    text = "\n".join(
        "2026-12-04 10:00:01 app[12]: " + line
        for line in [
            "Traceback (most recent call last):",
            '  File "/srv/app/releases/41/shop/cart.py", line 12, in total',
            "    return sum(price(name) * count for name, count in items.items())",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            '  File "/usr/lib/python3.12/site-packages/shop/cart.py", line 7, in price',
            "    return PRICES[name]",
            "KeyError: 'apple'",
        ]
    )
    error = read_error(text, origin="crash.log")
    assert (error.exc_type, error.message, error.origin) == ("KeyError", "'apple'", "crash.log")
    assert [(f.line, f.function) for f in error.frames] == [(12, "total"), (7, "price")]
    assert error.frames[0].code.startswith("return sum(")
    # An installed copy of the project looks like a library until a checkout says otherwise.
    assert [f.looks_like_library for f in error.frames] == [False, True]


def test_the_fingerprint_ignores_line_numbers_messages_and_deployment_paths() -> None:
    def report(path: str, line: int, message: str) -> str:
        return (
            "Traceback (most recent call last):\n"
            f'  File "{path}/shop/cart.py", line {line}, in total\n'
            f"ValueError: {message}\n"
        )

    first = read_error(report("/srv/a", 10, "order 17"))
    assert first.fingerprint == read_error(report("/app/src", 14, "order 99")).fingerprint
    other_type = read_error(report("/app/src", 14, "x").replace("ValueError", "TypeError"))
    assert other_type.fingerprint != first.fingerprint


@pytest.mark.parametrize(
    "text",
    [
        "",
        "just a log line\nand another",
        "Traceback (most recent call last):\n",  # cut short: no frame, no exception
        'Traceback (most recent call last):\n  File "a.py", line 3, in f\n',  # no exception line
    ],
)
def test_text_without_a_whole_traceback_is_bad_input(text: str) -> None:
    with pytest.raises(InputError):
        read_error(text)


def _sentry_event(tmp_path: Path) -> dict[str, Any]:
    """An event as the real Sentry SDK builds it (captured by a transport of our own, nothing sent)."""
    sentry_sdk = pytest.importorskip("sentry_sdk", reason="the Sentry SDK is a dev dependency")
    folder = _project(tmp_path)
    sys.path.insert(0, str(folder))
    captured: list[dict[str, Any]] = []

    class Capture(sentry_sdk.transport.Transport):  # type: ignore[misc]
        def capture_envelope(self, envelope: Any) -> None:
            for item in envelope.items:
                if item.type == "event":
                    captured.append(item.payload.json)

    try:
        import shop.cart as cart  # type: ignore[import-not-found]

        sentry_sdk.init(dsn="https://key@127.0.0.1:9/1", transport=Capture)
        try:
            cart.total({"apple": 2})
        except Exception as exc:
            sentry_sdk.capture_exception(exc)
        sentry_sdk.flush()
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("shop.cart", None)
        sys.modules.pop("shop", None)
        sentry_sdk.init()  # no DSN: the SDK off again for the rest of the session
    assert captured, "the SDK built no event"
    return json.loads(json.dumps(captured[0], default=str))


def test_a_sentry_sdk_event_and_its_issue_alert_read_alike(tmp_path: Path) -> None:
    event = _sentry_event(tmp_path)
    error = read_sentry(event)
    assert error.exc_type == "LookupError"
    assert error.message == "no price for apple"
    assert error.chained == ("KeyError: 'apple'",)
    assert [f.function for f in error.frames][-3:] == ["total", "<genexpr>", "price"]
    assert error.frames[-1].path.endswith("shop/cart.py")
    # The SDK records each frame's locals: the input that raised, which QA is shown.
    assert ("name", "'apple'") in error.frames[-1].variables
    alert = {
        "action": "triggered",
        "data": {
            "event": {**event, "web_url": "https://sentry.example/organizations/o/issues/7/events/1/"},
            "triggered_rule": "heal",
        },
        "installation": {"uuid": "0"},
    }
    from_alert = read_error(json.dumps(alert))
    assert (from_alert.exc_type, from_alert.frames) == (error.exc_type, error.frames)
    assert from_alert.origin == "https://sentry.example/organizations/o/issues/7/events/1/"
    assert from_alert.fingerprint == error.fingerprint


def test_an_api_event_with_entries_and_an_issue_webhook_read_too() -> None:
    frames = [
        {
            "filename": "shop/cart.py",
            "abs_path": "/app/shop/cart.py",
            "lineno": 12,
            "function": "total",
            "in_app": True,
        },
        {"filename": "shop/cart.py", "abs_path": "/app/shop/cart.py", "lineno": 7, "function": "price", "in_app": True},
    ]
    event = {
        "eventID": "abc",
        "entries": [
            {"type": "breadcrumbs", "data": {}},
            {
                "type": "exception",
                "data": {
                    "values": [
                        {"type": "KeyError", "value": "'apple'", "module": "builtins", "stacktrace": {"frames": frames}}
                    ]
                },
            },
        ],
    }
    error = read_error(json.dumps(event))
    assert (error.exc_type, len(error.frames)) == ("KeyError", 2)
    issue = {
        "action": "created",
        "data": {
            "issue": {
                "metadata": {"type": "KeyError", "value": "'apple'", "filename": "shop/cart.py", "function": "price"},
                "web_url": "https://sentry.example/issues/7/",
            }
        },
    }
    from_issue = read_error(json.dumps(issue))
    assert (from_issue.exc_type, from_issue.frames[0].function) == ("KeyError", "price")
    assert from_issue.origin == "https://sentry.example/issues/7/"


@pytest.mark.parametrize("text", ["{", "[1, 2]", '{"action": "resolved", "data": {"issue": {}}}'])
def test_json_that_is_no_sentry_exception_is_bad_input(text: str) -> None:
    with pytest.raises(InputError):
        read_error(text)


def test_a_frames_locals_reach_the_reproducers_view_of_the_error() -> None:
    event = {
        "exception": {
            "values": [
                {
                    "type": "KeyError",
                    "value": "'kiwi'",
                    "stacktrace": {
                        "frames": [
                            {
                                "abs_path": "/app/shop/cart.py",
                                "lineno": 7,
                                "function": "price",
                                "vars": {"name": "'kiwi'", "count": 2, "<ignore>": "x" * 1000},
                            }
                        ]
                    },
                }
            ]
        }
    }
    error = read_sentry(event)
    text = render_error(error, locate_frames(error, ["shop/cart.py"]), lambda path: "")
    assert "locals: name='kiwi', count=2" in text
    assert max(len(value) for _, value in error.frames[0].variables) == 300


def test_a_json_log_record_holding_a_traceback_reads_as_that_traceback() -> None:
    record = {
        "timestamp": "2026-12-01T09:12:44Z",
        "level": "error",
        "event": "checkout failed",
        "exc_info": 'Traceback (most recent call last):\n  File "/app/shop/cart.py", line 9, in average\n'
        "ZeroDivisionError: division by zero\n",
    }
    error = read_error(json.dumps(record), origin="app.log")
    assert (error.exc_type, error.frames[0].function, error.origin) == ("ZeroDivisionError", "average", "app.log")
