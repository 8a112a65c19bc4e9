"""The preflight (``GET /v1/models``) through the real SDK clients against local servers on 127.0.0.1: a wrong
key, base URL or model name is a usage error (exit 2) naming what to fix, found before any test runs."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.errors import ExitCode
from selfix_action.providers.anthropic_model import AnthropicModel
from selfix_action.providers.base import ModelSetupError
from selfix_action.providers.openai_model import OpenAIModel
from tests.helpers.fake_providers import FakeProvider, Reply, anthropic_error, openai_error, serve
from tests.helpers.projects import write_project


def openai_model(url: str, **options: object) -> OpenAIModel:
    return OpenAIModel(api_key="sk-test", base_url=url + "/v1", **options)  # type: ignore[arg-type]


def anthropic_model(url: str, **options: object) -> AnthropicModel:
    return AnthropicModel(api_key="sk-ant-test", base_url=url, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "reply", "variable"),
    [
        (openai_model, openai_error(401, "invalid_api_key", "Incorrect API key provided"), "OPENAI_API_KEY"),
        (anthropic_model, anthropic_error(401, "authentication_error", "invalid x-api-key"), "ANTHROPIC_API_KEY"),
        (openai_model, openai_error(403, "permission_denied", "project has no access"), "OPENAI_API_KEY"),
        (anthropic_model, anthropic_error(403, "permission_error", "no access"), "ANTHROPIC_API_KEY"),
    ],
)
def test_a_rejected_key_names_the_variable(make, reply: Reply, variable: str) -> None:  # type: ignore[no-untyped-def]
    provider = FakeProvider(models_reply=reply)
    with serve(provider) as url, pytest.raises(ModelSetupError) as caught:
        make(url).preflight()
    assert caught.value.exit_code == ExitCode.BAD_INPUT
    assert variable in str(caught.value) and caught.value.fix.startswith(variable)
    assert str(reply.status) in str(caught.value)
    assert [g.path.split("?")[0] for g in provider.gets] == ["/v1/models"]
    assert provider.requests == []  # no completion was asked for


@pytest.mark.parametrize("make", [openai_model, anthropic_model])
def test_a_base_url_without_a_models_endpoint_names_the_base_url(make) -> None:  # type: ignore[no-untyped-def]
    provider = FakeProvider(models_reply=Reply(404, {"error": {"message": "File Not Found"}}))
    with serve(provider) as url, pytest.raises(ModelSetupError, match="base URL") as caught:
        make(url).preflight()
    assert caught.value.fix == "--base-url" and "--base-url" in str(caught.value)


@pytest.mark.parametrize("make", [openai_model, anthropic_model])
def test_an_unknown_model_names_the_model_flag(make) -> None:  # type: ignore[no-untyped-def]
    provider = FakeProvider(models=("gpt-5-mini", "gpt-5-nano", "claude-sonnet-4-6"))
    with serve(provider) as url, pytest.raises(ModelSetupError, match="--model") as caught:
        make(url, model="gpt-5-minii").preflight()
    assert "gpt-5-minii" in str(caught.value) and "gpt-5-mini" in str(caught.value)  # the close match
    # Not listed: it was asked for by name too (aliases are not listed), and refused.
    assert any(g.path.endswith("/models/gpt-5-minii") for g in provider.gets)


def test_an_alias_that_retrieves_by_name_passes() -> None:
    provider = FakeProvider(models=("claude-sonnet-4-6-20260101", "claude-haiku-4-5"), aliases=("claude-sonnet-4-6",))
    with serve(provider) as url:
        model = anthropic_model(url, model="claude-sonnet-4-6")
        assert model.preflight().note == ""
    assert provider.gets[-1].path.endswith("/models/claude-sonnet-4-6")


def test_a_single_model_server_answers_under_any_name_with_a_note() -> None:
    provider = FakeProvider(models=("/models/SmolLM2-135M-Instruct.Q4_1.gguf",))
    with serve(provider) as url:
        result = openai_model(url, model="smollm2").preflight()
    assert "serves one model" in result.note and result.models == ("/models/SmolLM2-135M-Instruct.Q4_1.gguf",)


def test_a_llamacpp_listing_starts_auto_at_the_modes_that_server_honours() -> None:
    listing = {
        "object": "list",
        "data": [{"id": "smollm2.gguf", "object": "model", "created": 1, "owned_by": "llamacpp"}],
    }
    provider = FakeProvider(models_reply=Reply(200, listing))
    with serve(provider) as url:
        openai_side = openai_model(url, model="smollm2.gguf")
        anthropic_side = anthropic_model(url, model="smollm2.gguf")
        fixed = openai_model(url, model="smollm2.gguf", structured="tools")
        assert (openai_side.preflight().server, openai_side.structured) == ("llamacpp", "json-schema")
        found = anthropic_side.preflight()
        assert (found.server, anthropic_side.structured) == ("llamacpp", "json")
        assert "structured answers use json" in found.note
        fixed.preflight()
        assert fixed.structured == "tools"  # a mode the user chose is kept


@pytest.mark.parametrize("make", [openai_model, anthropic_model])
def test_nothing_listening_names_the_base_url(make) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ModelSetupError, match="cannot reach") as caught:
        make(f"http://127.0.0.1:{port}").preflight()
    assert caught.value.fix == "--base-url"


@pytest.mark.parametrize(
    ("engine", "reply", "variable"),
    [
        ("openai", openai_error(401, "invalid_api_key", "Incorrect API key provided"), "OPENAI_API_KEY"),
        ("anthropic", anthropic_error(401, "authentication_error", "invalid x-api-key"), "ANTHROPIC_API_KEY"),
    ],
)
def test_selfix_fix_with_a_wrong_key_exits_2_before_the_suite_runs(
    engine: str, reply: Reply, variable: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A suite that would leave a mark if it ran: its test writes a file.
    marker = tmp_path / "suite-ran"
    repo = write_project(
        tmp_path / "p",
        {
            "m.py": "def f():\n    return 1\n",
            "tests/test_m.py": f"from pathlib import Path\n\ndef test_f():\n    Path({str(marker)!r}).touch()\n"
            "    from m import f\n    assert f() == 2\n",
        },
    )
    provider = FakeProvider(models_reply=reply)
    with serve(provider) as url:
        base = url + "/v1" if engine == "openai" else url
        code = main(["fix", str(repo), "--engine", engine, "--api-key", "wrong", "--base-url", base, "--quiet"])
    out = capsys.readouterr()
    assert code == ExitCode.BAD_INPUT, out.out + out.err
    assert variable in out.out + out.err
    assert not marker.exists() and not (repo / ".selfix").exists()  # refused before any test or output
    assert provider.requests == []
