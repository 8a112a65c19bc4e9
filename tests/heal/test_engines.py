"""Setting up the engine a request asks for: ``--engine auto`` runs the offline engine even when its LLM engine
cannot be set up (a rejected key, nothing listening, a cost cap without a price), then reports the problem.

Real pytest runs in the real sandbox; the LLM servers are local HTTP servers on 127.0.0.1 reached by the real
openai and anthropic clients (a 401 from ``GET /v1/models``), or a port nothing listens on."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.errors import ExitCode
from tests.helpers.fake_providers import FakeProvider, anthropic_error, openai_error, serve
from tests.helpers.projects import write_project
from tests.helpers.tally import TALLY

# A bug the offline engine heals (the operator swapped), and one no template can fix (tests/helpers/tally.py).
SWAPPED = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}


@contextmanager
def llm_server(provider: str, problem: str) -> Iterator[tuple[str, FakeProvider | None]]:
    """The base URL of a server that rejects the key (401) or of a port nothing listens on."""
    if problem == "closed port":
        with socket.socket() as sock:  # a port that was free a moment ago
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        yield (f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")), None
        return
    reply = (
        openai_error(401, "invalid_api_key", "Incorrect API key provided")
        if provider == "openai"
        else anthropic_error(401, "authentication_error", "invalid x-api-key")
    )
    fake = FakeProvider(models_reply=reply)
    with serve(fake) as url:
        yield (url + "/v1" if provider == "openai" else url), fake


def auto(repo: Path, provider: str, url: str) -> list[str]:
    return [
        "fix", str(repo), "--engine", "auto", "--provider", provider, "--api-key", "wrong", "--base-url", url,
        "--no-memory", "--test-timeout", "30", "--quiet",
    ]  # fmt: skip


PROBLEMS = [
    ("openai", "401", "OPENAI_API_KEY"),
    ("anthropic", "401", "ANTHROPIC_API_KEY"),
    ("openai", "closed port", "cannot reach"),
    ("anthropic", "closed port", "cannot reach"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("provider", "problem", "named"), PROBLEMS)
def test_auto_heals_with_the_offline_engine_when_the_llm_setup_fails_and_warns(
    provider: str, problem: str, named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(tmp_path / "p", SWAPPED)
    with llm_server(provider, problem) as (url, fake):
        code = main(auto(repo, provider, url))
    out = capsys.readouterr()
    assert code == ExitCode.HEALED, out.out + out.err
    assert f"selfix: warning: the {provider} engine could not be used, so only the offline engine ran" in out.err
    assert named in out.err
    report = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert report["stop_reason"] == "healed" and "return a + b" in report["patch"]["diff"]
    assert named in report["llm_problem"] and report["exit_code"] == 0
    markdown = (repo / ".selfix" / "report.md").read_text(encoding="utf-8")
    assert named in "\n".join(markdown.splitlines()[:6])  # said near the top, not deep in the notes
    assert fake is None or fake.requests == []  # no completion was asked for


@pytest.mark.slow
@pytest.mark.parametrize(("provider", "problem", "named"), PROBLEMS[:1] + PROBLEMS[3:])
def test_auto_not_healed_by_the_offline_engine_exits_2_for_the_llm_setup(
    provider: str, problem: str, named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(tmp_path / "p", TALLY)
    with llm_server(provider, problem) as (url, _fake):
        code = main(auto(repo, provider, url))
    out = capsys.readouterr()
    assert code == ExitCode.BAD_INPUT, out.out + out.err
    assert named in out.err
    report = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert report["exit_code"] == 2 and report["stop_reason"] != "healed" and report["candidates_tried"] > 0
    assert named in report["llm_problem"]


def test_an_llm_engine_alone_still_refuses_a_bad_setup_before_any_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(tmp_path / "p", SWAPPED)
    with llm_server("openai", "401") as (url, _fake):
        argv = auto(repo, "openai", url)
        argv[argv.index("auto")] = "openai"
        code = main(argv)
    assert code == ExitCode.BAD_INPUT
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert not (repo / ".selfix").exists()
