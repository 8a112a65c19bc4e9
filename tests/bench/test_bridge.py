"""Answering the file bridge (selfix_bench/bridge.py): the real bridge server (``../shared/tools/model_bridge.py``)
on 127.0.0.1, the real OpenAI client asking it with a JSON schema, and the tool answering; an answer that does not
fit the schema is refused and nothing is written."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema
import pytest

from selfix_bench.bridge import main, pending, schema_problem

BRIDGE = Path(__file__).resolve().parents[3] / "shared" / "tools" / "model_bridge.py"
SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["complete", "partial", "wrong"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}


def test_an_answer_is_checked_against_the_schema_and_reaches_the_client(tmp_path: Path) -> None:
    if not BRIDGE.is_file():
        pytest.skip(f"the bridge is not beside the repository ({BRIDGE})")
    openai = pytest.importorskip("openai")
    folder = tmp_path / "bridge"
    server = subprocess.Popen([sys.executable, str(BRIDGE), str(folder), "reader-1"])
    try:
        for _ in range(100):
            if (folder / "port").is_file() and (folder / "port").read_text():
                break
            time.sleep(0.1)
        port = int((folder / "port").read_text())
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="bridge", timeout=60)
        answers: list[str | None] = []

        def ask() -> None:
            response = client.chat.completions.create(
                model="reader-1",
                messages=[{"role": "user", "content": "Is the patch complete?"}],
                response_format={"type": "json_schema", "json_schema": {"name": "review", "schema": SCHEMA}},
            )
            answers.append(response.choices[0].message.content)

        asking = threading.Thread(target=ask)
        asking.start()
        for _ in range(100):
            if pending(folder):
                break
            time.sleep(0.1)
        assert pending(folder) == [1]
        wrong = tmp_path / "wrong.json"
        wrong.write_text(json.dumps({"verdict": "fine"}), encoding="utf-8")
        assert main(["answer", str(folder), "1", str(wrong)]) == 2
        assert not (folder / "resp-001.json").exists()
        right = tmp_path / "right.json"
        right.write_text(json.dumps({"verdict": "partial"}), encoding="utf-8")
        assert main(["answer", str(folder), "1", str(right)]) == 0
        asking.join(timeout=30)
        assert answers and json.loads(answers[0] or "") == {"verdict": "partial"}
        assert pending(folder) == []
    finally:
        server.kill()
        server.wait(timeout=10)


def test_readers_sharing_a_bridge_never_claim_the_same_request(tmp_path: Path) -> None:
    for number in (1, 2):
        (tmp_path / f"req-{number:03d}.json").write_text(json.dumps({"messages": []}), encoding="utf-8")
    (tmp_path / "resp-001.json").write_text("{}", encoding="utf-8")
    assert main(["next", str(tmp_path)]) == 0  # request 2, the one still pending
    assert (tmp_path / "claim-002").is_dir()
    assert main(["next", str(tmp_path)]) == 3  # claimed already: nothing left for another reader


def test_a_refused_answer_names_each_alternatives_own_problem() -> None:
    # The Patcher's per-file schema: an edit is one of several objects (one per file, each with its own bounds).
    edit_schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"file": {"const": "a.py"}, "replace": {"type": "string", "maxLength": 5}},
                "required": ["file", "replace"],
            },
            {
                "type": "object",
                "properties": {"file": {"const": "b.py"}, "replace": {"type": "string", "maxLength": 50}},
                "required": ["file", "replace"],
            },
        ]
    }
    schema = {"type": "object", "properties": {"edits": {"type": "array", "items": edit_schema}}}
    [refused] = jsonschema.Draft202012Validator(schema).iter_errors(
        {"edits": [{"file": "a.py", "replace": "too long a text"}]}
    )
    problem = schema_problem(refused)
    assert problem.startswith("at edits/0, no alternative fits; ")
    assert "edits/0/replace: 'too long a text' is too long" in problem and "'b.py' was expected" in problem
