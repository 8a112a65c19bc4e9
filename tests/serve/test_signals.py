"""What each webhook asks for: the fingerprint and the heal's input, or why it asks for nothing."""

from __future__ import annotations

import json

import pytest

from selfix_action.serve.config import parse_config
from selfix_action.serve.signals import (
    MAX_DISPATCH_INPUT_CHARS,
    BadPayload,
    Ignored,
    Signal,
    read_generic,
    read_github,
    read_sentry_alert,
)
from selfix_action.tracebacks import read_error
from tests.helpers.serve_server import failed_run, traceback_text

CONFIG = parse_config(
    {"repositories": [{"repo": "octo-org/octo-repo", "ref": "release", "sentry_projects": ["backend"]}]}, {}
)


def _body(data: object) -> bytes:
    return json.dumps(data).encode()


def test_a_failed_run_is_a_heal_of_its_branch() -> None:
    signal = read_github("workflow_run", _body(failed_run(42)), CONFIG)
    assert isinstance(signal, Signal)
    assert signal.fingerprint == "github:octo-org/octo-repo:run:42"
    assert signal.heal["ref"] == "feature/x"
    assert signal.heal["description"] == "selfix serve: run 42 failed"
    timed_out = read_github("workflow_run", _body(failed_run(43, conclusion="timed_out")), CONFIG)
    assert isinstance(timed_out, Signal)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (failed_run(1, conclusion="success"), "concluded success"),
        (failed_run(1, conclusion="cancelled"), "concluded cancelled"),
        (failed_run(1, action="requested"), "workflow_run requested"),
        (failed_run(1, repo="someone/else"), "not configured"),
    ],
)
def test_runs_that_ask_for_nothing_are_ignored(payload: dict[str, object], reason: str) -> None:
    ignored = read_github("workflow_run", _body(payload), CONFIG)
    assert isinstance(ignored, Ignored) and reason in ignored.reason


def _comment(body: str, *, action: str = "created", on_pull: bool = True) -> bytes:
    issue: dict[str, object] = {"number": 7}
    if on_pull:
        issue["pull_request"] = {"url": "https://api.github.com/repos/octo-org/octo-repo/pulls/7"}
    return _body(
        {
            "action": action,
            "repository": {"full_name": "octo-org/octo-repo"},
            "issue": issue,
            "comment": {"id": 991, "body": body, "user": {"login": "mona"}},
        }
    )


def test_a_selfix_comment_on_a_pull_request_is_a_heal() -> None:
    signal = read_github("issue_comment", _comment("/selfix please fix the parser"), CONFIG)
    assert isinstance(signal, Signal)
    assert signal.fingerprint == "github:octo-org/octo-repo:comment:991"
    assert signal.heal == {"pull": 7, "description": "/selfix please fix the parser", "commenter": "mona"}
    for body, kw in (("looks good", {}), ("/selfix", {"action": "edited"}), ("/selfix", {"on_pull": False})):
        assert isinstance(read_github("issue_comment", _comment(body, **kw), CONFIG), Ignored)  # type: ignore[arg-type]


def test_errors_are_fingerprinted_across_messages_line_numbers_and_sources() -> None:
    first = read_generic(_body({"repo": "octo-org/octo-repo", "error": traceback_text(1)}), CONFIG)
    second = read_generic(_body({"repo": "octo-org/octo-repo", "error": traceback_text(2)}), CONFIG)
    other = read_generic(_body({"repo": "octo-org/octo-repo", "error": traceback_text(1, "total")}), CONFIG)
    assert first.fingerprint == second.fingerprint != other.fingerprint
    assert first.fingerprint.startswith("error:octo-org/octo-repo:")
    assert first.heal["ref"] == "release" and first.heal["error"] == traceback_text(1)


def _alert(project: str, frames: int = 2, vars_size: int = 0) -> dict[str, object]:
    stack = [
        {
            "abs_path": f"/srv/app/shop/m{i}.py",
            "function": f"f{i}",
            "lineno": i + 1,
            "in_app": True,
            "vars": {"blob": "x" * vars_size},
        }
        for i in range(frames)
    ]
    event = {
        "event_id": "abc",
        "url": f"https://sentry.io/api/0/projects/acme/{project}/events/abc/",
        "exception": {"values": [{"type": "KeyError", "value": "'id'", "stacktrace": {"frames": stack}}]},
        "breadcrumbs": {"values": [{"message": "y" * 1000}] * 50},
    }
    return {"action": "triggered", "data": {"event": event}}


def test_a_sentry_alert_maps_to_its_repository_and_fits_the_input_limit() -> None:
    signal = read_sentry_alert("event_alert", _body(_alert("backend")), CONFIG)
    assert isinstance(signal, Signal) and signal.repo == "octo-org/octo-repo"
    assert "breadcrumbs" not in signal.heal["error"]  # what the heal does not read stays out of the input
    huge = read_sentry_alert("event_alert", _body(_alert("backend", frames=60, vars_size=5000)), CONFIG)
    assert isinstance(huge, Signal)
    assert len(huge.heal["error"]) <= MAX_DISPATCH_INPUT_CHARS
    assert json.loads(huge.heal["error"])["data"]["event"]["exception"]  # still JSON the action can read
    assert isinstance(read_sentry_alert("installation", _body({}), CONFIG), Ignored)
    with pytest.raises(BadPayload, match="Sentry project frontend is not configured") as caught:
        read_sentry_alert("event_alert", _body(_alert("frontend")), CONFIG)
    assert caught.value.status == 422


def test_an_alert_whose_event_uses_the_apis_entries_layout_is_cut_to_the_limit_too() -> None:
    alert = _alert("backend", frames=60, vars_size=5000)
    event = alert["data"]["event"]  # type: ignore[index]
    event["entries"] = [{"type": "exception", "data": event.pop("exception")}]
    signal = read_sentry_alert("event_alert", _body(alert), CONFIG)
    assert isinstance(signal, Signal) and len(signal.heal["error"]) <= MAX_DISPATCH_INPUT_CHARS
    assert read_error(signal.heal["error"]).exc_type == "KeyError"  # still JSON the action can read


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[1, 2]", b'{"repo": "octo-org/octo-repo"}', b'{"repo": 5, "error": "x"}', b"\xff\xfe", b"{" * 5000],
)
def test_malformed_or_misshapen_bodies_are_bad_payloads(body: bytes) -> None:
    with pytest.raises(BadPayload):
        read_generic(body, CONFIG)


def test_a_long_traceback_keeps_its_end_within_the_input_limit() -> None:
    long = "log line\n" * 10_000 + traceback_text(3)
    signal = read_generic(_body({"repo": "octo-org/octo-repo", "error": long}), CONFIG)
    assert len(signal.heal["error"]) == MAX_DISPATCH_INPUT_CHARS
    assert signal.heal["error"].endswith(traceback_text(3))
