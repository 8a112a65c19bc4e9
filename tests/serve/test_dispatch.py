"""The dispatcher against a local server that speaks GitHub's REST API (tests/helpers/fake_github.py): the
inputs of each kind of heal, and each failure (rate limit, 404 workflow, 422 inputs) reported in the store, the
log and the metrics. The local pool with a job passed in, in real worker processes."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.github.client import GitHubClient
from selfix_action.serve.config import ServeConfig, parse_config
from selfix_action.serve.dispatch import ActionsDispatcher, DispatchLoop, LocalJob, LocalPool, run_local_heal
from selfix_action.serve.observe import Metrics
from selfix_action.serve.signals import Signal
from selfix_action.serve.store import Store, accept
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.serve_jobs import crash_job, record_job
from tests.helpers.serve_server import REPO, traceback_text

SHA = "a" * 40


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub(REPO, "main").start()
    server.state.workflows = {"selfix.yml"}
    server.state.declared_inputs = {"ref", "description", "error", "signal"}
    yield server
    server.stop()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "serve.sqlite3")
    yield opened
    opened.close()


def _config(fake: FakeGitHub, **extra: object) -> ServeConfig:
    data: dict[str, object] = {
        "github_api_url": fake.url,
        "repositories": [{"repo": REPO, "workflow": "selfix.yml", "ref": "release"}],
        **extra,
    }
    return parse_config(data, {"SELFIX_SERVE_GITHUB_TOKEN": "t"})


def _loop(config: ServeConfig, store: Store, metrics: Metrics, pool: LocalPool | None = None) -> DispatchLoop:
    def client(token: str, repo: str, url: str) -> GitHubClient:
        return GitHubClient(token, repo, url, retries=0, write_interval=0, backoff=0)

    actions = ActionsDispatcher(config.repositories, "t", config.github_api_url, client)
    return DispatchLoop(config, store, metrics, actions, pool)


def _signal(store: Store, signal: Signal, delivery: str) -> None:
    store.write(accept(delivery, signal.source, "digest-" + delivery, signal))


ERROR = Signal("error", "error", f"error:{REPO}:abc123", REPO, {"ref": "release", "error": traceback_text(1),
                                                               "headline": "ValueError: x"})  # fmt: skip
RUN = Signal("github", "workflow_run", f"github:{REPO}:run:9", REPO,
             {"ref": "feature/x", "description": "selfix serve: run 9 failed", "run_id": 9})  # fmt: skip


def test_each_kind_of_heal_is_dispatched_with_its_inputs(fake: FakeGitHub, store: Store) -> None:
    number = fake.add_pull(head_ref="fix-parser", head_sha=SHA, base_ref="main")
    fake.state.permissions["mona"] = "write"
    comment = Signal("github", "comment", f"github:{REPO}:comment:5", REPO,
                     {"pull": number, "description": "/selfix the parser", "commenter": "mona"})  # fmt: skip
    for n, signal in enumerate((ERROR, RUN, comment)):
        _signal(store, signal, f"d{n}")
    metrics = Metrics()
    assert _loop(_config(fake), store, metrics).run_once() == 3
    by_ref = {d["ref"]: d["inputs"] for d in fake.state.dispatches}
    assert by_ref["release"] == {
        "ref": "release",
        "description": "selfix serve: production error ValueError: x",
        "error": traceback_text(1),
        "signal": ERROR.fingerprint,
    }
    assert by_ref["feature/x"] == {"ref": "feature/x", "description": "selfix serve: run 9 failed"}
    assert by_ref["fix-parser"] == {"ref": "fix-parser", "description": "/selfix the parser"}
    assert {d["workflow"] for d in fake.state.dispatches} == {"selfix.yml"}
    for signal in (ERROR, RUN, comment):
        state = store.fingerprint(signal.fingerprint)
        assert state is not None and state["state"] == "dispatched"
        assert state["run_url"].startswith(f"https://github.com/{REPO}/actions/runs/")
    assert metrics.value("selfix_serve_dispatched_total") == 3
    assert _loop(_config(fake), store, metrics).run_once() == 0  # nothing twice


def test_a_comment_by_someone_without_write_access_is_not_dispatched(fake: FakeGitHub, store: Store) -> None:
    number = fake.add_pull(head_ref="fix-parser", head_sha=SHA, base_ref="main")
    fake.state.permissions["drive-by"] = "read"
    comment = Signal("github", "comment", f"github:{REPO}:comment:6", REPO,
                     {"pull": number, "description": "/selfix", "commenter": "drive-by"})  # fmt: skip
    _signal(store, comment, "d1")
    _loop(_config(fake), store, Metrics()).run_once()
    assert fake.state.dispatches == []
    state = store.fingerprint(comment.fingerprint)
    assert state is not None and state["state"] == "failed" and "drive-by may not ask for a heal" in state["last_error"]


def test_a_rate_limit_keeps_the_heal_pending_until_the_reset(
    fake: FakeGitHub, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    fake.rate_limit("POST", r"/dispatches$", reset_in=600)
    _signal(store, RUN, "d1")
    metrics = Metrics()
    loop = _loop(_config(fake), store, metrics)
    with caplog.at_level(logging.INFO, logger="selfix.serve"):
        assert loop.run_once() == 0
    state = store.fingerprint(RUN.fingerprint)
    assert state is not None and state["state"] == "pending"
    assert 590 < state["not_before"] - time.time() <= 601  # x-ratelimit-reset, not a guess
    assert "rate limit" in state["last_error"]
    assert metrics.value("selfix_serve_dispatch_failures_total", reason="rate_limited") == 1
    assert [r.__dict__["event"] for r in caplog.records] == ["dispatch_deferred"]
    assert loop.run_once() == 0 and fake.state.dispatches == []  # not before the reset
    assert len(fake.calls_of("POST", "/dispatches$")) == 1


def test_an_unknown_workflow_fails_with_what_to_check(
    fake: FakeGitHub, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    fake.state.workflows = {"other.yml"}
    _signal(store, RUN, "d1")
    metrics = Metrics()
    with caplog.at_level(logging.INFO, logger="selfix.serve"):
        _loop(_config(fake), store, metrics).run_once()
    state = store.fingerprint(RUN.fingerprint)
    assert state is not None and state["state"] == "failed"
    assert "workflow not found (file name? on the default branch?)" in state["last_error"]
    assert metrics.value("selfix_serve_dispatch_failures_total", reason="http_404") == 1
    (record,) = [r for r in caplog.records if r.__dict__.get("event") == "dispatch_failed"]
    assert record.__dict__["fingerprint"] == RUN.fingerprint and "workflow not found" in record.__dict__["error"]


def test_inputs_the_workflow_does_not_declare_fail_with_githubs_message(
    fake: FakeGitHub, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    fake.state.declared_inputs = {"ref", "description"}  # a workflow from before error and signal
    _signal(store, ERROR, "d1")
    metrics = Metrics()
    with caplog.at_level(logging.INFO, logger="selfix.serve"):
        _loop(_config(fake), store, metrics).run_once()
    (record,) = [r for r in caplog.records if r.__dict__.get("event") == "dispatch_failed"]
    assert record.__dict__["reason"] == "http_422" and "Unexpected inputs provided" in record.__dict__["error"]
    state = store.fingerprint(ERROR.fingerprint)
    assert state is not None and state["state"] == "failed"
    assert 'the workflow rejected the inputs: Unexpected inputs provided: ["error", "signal"]' in state["last_error"]
    assert "(does it declare them under on.workflow_dispatch.inputs?)" in state["last_error"]
    assert metrics.value("selfix_serve_dispatch_failures_total", reason="http_422") == 1


def test_a_server_error_is_retried_later_then_given_up(fake: FakeGitHub, store: Store) -> None:
    fake.fail("POST", r"/dispatches$", 502, times=10)
    _signal(store, RUN, "d1")
    metrics = Metrics()
    loop = _loop(_config(fake, max_dispatch_attempts=2), store, metrics)
    loop.run_once()
    state = store.fingerprint(RUN.fingerprint)
    assert state is not None and state["state"] == "pending" and state["not_before"] > time.time()
    store.write(lambda conn: conn.execute("UPDATE fingerprints SET not_before = 0"))
    loop.run_once()
    state = store.fingerprint(RUN.fingerprint)
    assert state is not None and state["state"] == "failed" and "502" in state["last_error"]
    assert metrics.value("selfix_serve_dispatch_failures_total", reason="transient") == 1
    assert metrics.value("selfix_serve_dispatch_failures_total", reason="http_502") == 1


def test_the_local_pool_runs_jobs_in_worker_processes_a_bounded_number_at_once(tmp_path: Path, store: Store) -> None:
    project = tmp_path / "project"
    project.mkdir()
    config = parse_config(
        {"local": {"repo": "tools", "path": str(project), "test_command": "pytest -q", "engine": "offline",
                   "workers": 2}},
        {},
    )  # fmt: skip
    metrics = Metrics()
    assert config.local is not None
    pool = LocalPool(config.local, record_job, store, metrics)
    signals = [
        Signal("error", "error", f"error:tools:{n}", "tools", {"ref": "", "error": "fail" if n == 2 else f"e{n}"})
        for n in range(4)
    ]
    for n, signal in enumerate(signals):
        _signal(store, signal, f"d{n}")
    loop = DispatchLoop(config, store, metrics, None, pool)
    try:
        assert loop.run_once() == 2  # two workers: the other two wait in the database
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and store.states().get("pending", 0):
            loop.run_once()
            time.sleep(0.1)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and store.states().get("dispatched", 0):
            time.sleep(0.1)
    finally:
        pool.close()
    assert store.states() == {"done": 3, "failed": 1}
    failed = store.fingerprint("error:tools:2")
    assert failed is not None and failed["last_error"] == "selfix fix exited 1"
    outputs = sorted(project.glob("job-*.txt"))
    assert len(outputs) == 4
    assert all(f"-{os.getpid()}-" not in p.name for p in outputs)  # never in the server's own process
    assert outputs[0].read_text().startswith("offline\npytest -q\n")


def test_a_crashing_local_job_is_a_failed_heal_not_a_dead_server(tmp_path: Path, store: Store) -> None:
    config = parse_config({"local": {"repo": "tools", "path": str(tmp_path), "test_command": "pytest"}}, {})
    assert config.local is not None
    metrics = Metrics()
    pool = LocalPool(config.local, crash_job, store, metrics)
    _signal(store, Signal("error", "error", "error:tools:1", "tools", {"ref": "", "error": "e"}), "d1")
    loop = DispatchLoop(config, store, metrics, None, pool)
    try:
        loop.run_once()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and store.states().get("dispatched", 0):
            time.sleep(0.1)
    finally:
        pool.close()
    state = store.fingerprint("error:tools:1")
    assert state is not None and state["state"] == "failed"
    assert "RuntimeError: the heal blew up" in state["last_error"]
    assert metrics.value("selfix_serve_dispatch_failures_total", reason="local") == 1


def test_the_real_local_job_runs_selfix_fix_from_error_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job the server wires in: ``selfix fix PATH --from-error FILE --engine E --test-cmd C`` through the CLI's
    own checks (here the offline engine, which cannot write the reproduction test: exit 2 with the reason)."""
    job = LocalJob(tmp_path, "python -m pytest -q", "offline", traceback_text(1), f"error:tools:{'f' * 16}")
    assert run_local_heal(job) == 2
    assert "healing a reported error needs an LLM engine" in capsys.readouterr().err


def test_a_storm_of_distinct_errors_is_dispatched_within_the_hourly_budget(fake: FakeGitHub, store: Store) -> None:
    for n in range(5):
        _signal(store, Signal("github", "workflow_run", f"github:{REPO}:run:{n}", REPO,
                              {"ref": "main", "description": f"run {n}", "run_id": n}), f"d{n}")  # fmt: skip
    loop = _loop(_config(fake, max_dispatches_per_hour=3), store, Metrics())
    assert loop.run_once() == 3
    assert loop.run_once() == 0  # the rest wait for the hour to roll on
    assert store.states() == {"dispatched": 3, "pending": 2}
    assert [d["inputs"]["description"] for d in fake.state.dispatches] == ["run 0", "run 1", "run 2"]  # oldest first
    store.write(lambda conn: conn.execute("UPDATE fingerprints SET dispatched_at = dispatched_at - 3601"))
    assert loop.run_once() == 2


def test_a_server_answering_204_without_run_details_is_a_dispatch(fake: FakeGitHub, store: Store) -> None:
    fake.state.dispatch_status = 204  # GitHub before return_run_details, or GHES
    _signal(store, RUN, "d1")
    assert _loop(_config(fake), store, Metrics()).run_once() == 1
    state = store.fingerprint(RUN.fingerprint)
    assert state is not None and state["state"] == "dispatched" and state["run_url"] == ""
    assert len(fake.state.dispatches) == 1
