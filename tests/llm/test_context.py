"""What the model sees (issue 23): slices that hold what localization ranks highest, the code errors and
tracebacks name, the fixtures and helpers the failing tests use; hypotheses naming several places and a Patcher
that sees each; the QA result and the failing output's code fed to the Patcher; prompts in the words of the
structured mode in use; schemas bounded by what was shown."""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import Any

import jsonschema

from selfix_action.llm.budget import Budget
from selfix_action.llm.engine import LLMEngine
from selfix_action.llm.prompts import SYSTEM_PROMPT, build_context, detective_request, qa_environment, qa_request
from selfix_action.llm.schemas import DETECTIVE_TOOL, MAX_SCHEMA_FILES, ProjectBounds, tool_specs
from selfix_action.providers.anthropic_model import output_format_schema
from selfix_action.providers.base import ModelRequest, answer_instruction
from selfix_action.repair.values import (
    Evidence,
    Frame,
    Hypothesis,
    Location,
    SuspiciousFunction,
    SuspiciousLine,
    TestResult,
    TestStatus,
    Verification,
    VerifyStage,
)
from tests.helpers.llm_sandbox import CachedSandbox
from tests.helpers.queued_model import QueuedModel


def files_reader(files: dict[str, str]) -> Callable[[str], str]:
    def read(path: str) -> str:
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    return read


def numbered(n: int, code: str) -> str:
    return f"{n:>5} | {code}"


def failure(nodeid: str, message: str = "assert 1 == 2", frames: tuple[Frame, ...] = ()) -> TestResult:
    return TestResult(
        nodeid=nodeid, status=TestStatus.FAILED, exc_type="AssertionError", message=message, frames=frames
    )


def evidence(**fields: Any) -> Evidence:
    base: dict[str, Any] = {
        "f2p_tests": ("tests/test_m.py::test_it",),
        "p2p_tests": (),
        "failures": (failure("tests/test_m.py::test_it"),),
        "suspicious_lines": (),
        "suspicious_functions": (),
        "coverage_used": True,
    }
    base.update(fields)
    return Evidence(**base)


# A long function: its top-ranked line sits after many lower-ranked ones.
LONG = ["def long_one(x):"] + [f"    x = x + {n}" for n in range(1, 90)] + ["    return x"]
SHORT = ["", "", "def short_one(y):", "    y = y * 2", "    return y - 1"]
MODULE = "\n".join(["import os", "", *LONG, *SHORT]) + "\n"
TOP_LINE = 80  # "    x = x + 78"


def test_the_top_ranked_line_is_shown_even_after_many_lower_ranked_ones() -> None:
    read = files_reader({"m.py": MODULE, "tests/test_m.py": "def test_it():\n    assert 1 == 2\n"})
    lower = [SuspiciousLine(file="m.py", line=n, score=0.5, function="long_one") for n in range(4, 12)]
    ev = evidence(
        suspicious_lines=(SuspiciousLine(file="m.py", line=TOP_LINE, score=1.0, function="long_one"), *lower),
        suspicious_functions=(SuspiciousFunction(file="m.py", name="long_one", start=3, end=93, score=1.0),),
    )
    context = build_context(ev, read)
    assert numbered(TOP_LINE, MODULE.splitlines()[TOP_LINE - 1]) in context


def test_a_ranked_line_outside_the_top_functions_is_shown_in_its_function() -> None:
    read = files_reader({"m.py": MODULE, "tests/test_m.py": "def test_it():\n    assert 1 == 2\n"})
    short_line = MODULE.splitlines().index("    y = y * 2") + 1
    ev = evidence(
        suspicious_lines=(SuspiciousLine(file="m.py", line=short_line, score=0.9, function="short_one"),),
        suspicious_functions=(),  # the function ranking has nothing for it
    )
    context = build_context(ev, read)
    assert numbered(short_line, "    y = y * 2") in context
    assert numbered(short_line - 1, "def short_one(y):") in context and numbered(1, "import os") in context


def test_a_module_an_error_names_and_the_traceback_frames_are_shown() -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/codec.py": "import json\n\nSEP = ','\n\n\ndef encode(x):\n    return json.dumps(x)\n",
        "pkg/run.py": "from pkg import codec\n\n\ndef go(x):\n    y = x + 1\n    return codec.decode(y)\n",
        "tests/test_m.py": "from pkg.run import go\n\n\ndef test_it():\n    assert go(1)\n",
    }
    frames = (
        Frame(file="tests/test_m.py", line=5, function="test_it", code="assert go(1)"),
        Frame(file="pkg/run.py", line=6, function="go", code="return codec.decode(y)"),
    )
    ev = evidence(
        failures=(failure("tests/test_m.py::test_it", "module 'pkg.codec' has no attribute 'decode'", frames),),
    )
    context = build_context(ev, files_reader(files))
    # No localization at all: the frame's function and the module the message names are still shown.
    assert numbered(6, "    return codec.decode(y)") in context and numbered(4, "def go(x):") in context
    assert "### pkg/codec.py" in context and numbered(6, "def encode(x):") in context
    assert numbered(3, "SEP = ','") in context


CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef account():\n    return {'balance': 10}\n"
TEST_MODULE = """\
import pytest

from bank import withdraw


def make_amount(n):
    return n * 2


def unrelated():
    return 0


class TestBank:
    RATE = 3

    def setUp(self):
        self.fee = 1

    def test_withdraw(self, account):
        assert withdraw(account, make_amount(2)) == 6
"""


def test_the_failing_tests_fixtures_setup_and_helpers_are_shown() -> None:
    read = files_reader(
        {
            "bank.py": "def withdraw(a, n):\n    return a['balance'] - n\n",
            "tests/test_bank.py": TEST_MODULE,
            "tests/conftest.py": CONFTEST,
        }
    )
    ev = evidence(
        f2p_tests=("tests/test_bank.py::TestBank::test_withdraw",),
        failures=(failure("tests/test_bank.py::TestBank::test_withdraw"),),
    )
    context = build_context(ev, read)
    lines = TEST_MODULE.splitlines()
    for code in (
        "def make_amount(n):",
        "    def setUp(self):",
        "    RATE = 3",
        "    def test_withdraw(self, account):",
    ):
        assert numbered(lines.index(code) + 1, code) in context, code
    assert "def unrelated" not in context
    assert "### tests/conftest.py" in context and numbered(5, "def account():") in context


def test_prompts_name_no_answer_form_and_each_mode_says_its_own() -> None:
    spec = tool_specs()[0]
    texts = [SYSTEM_PROMPT, detective_request(3)]
    assert not any("call" in t.lower() and "tool" in t.lower() for t in texts)
    assert "calling the report_hypotheses tool" in answer_instruction("tools", spec)
    for mode in ("json-schema", "json"):
        assert "tool" not in answer_instruction(mode, spec) and "JSON object" in answer_instruction(mode, spec)
    hypothesis = Hypothesis(id="H1", rank=1, title="t", confidence=0.5, file="a.py", symbol="f", lines=(1,))
    assert "tool" not in qa_request(hypothesis, "test_qa_h1.py")


def file_enum(item: dict[str, Any]) -> list[str]:
    """The files a schema's location item allows, over its per-file variants when it has them."""
    variants = item.get("anyOf", [item])
    return [path for variant in variants for path in variant["properties"]["file"]["enum"]]


def test_schemas_bound_each_shown_file_s_lines_in_the_schema_itself() -> None:
    detective = tool_specs(ProjectBounds({"a.py": 40, "pkg/b.py": 300}))[0]
    item = detective.schema["properties"]["hypotheses"]["items"]
    assert file_enum(item) == ["a.py", "pkg/b.py"]
    first, second = item["anyOf"]
    assert first["properties"]["file"]["enum"] == ["a.py"] and first["properties"]["line_end"]["maximum"] == 40
    assert second["properties"]["file"]["enum"] == ["pkg/b.py"] and second["properties"]["line_start"]["maximum"] == 300
    also = first["properties"]["also"]["items"]["anyOf"]
    assert [(v["properties"]["file"]["enum"], v["properties"]["line_end"]["maximum"]) for v in also] == [
        (["a.py"], 40),
        (["pkg/b.py"], 300),
    ]
    hypothesis = {
        "title": "off by one",
        "confidence": 0.5,
        "symbol": "f",
        "reasoning": "r",
        "proposed_fix": "p",
        "also": [],
    }
    validator = jsonschema.Draft202012Validator(detective.schema)
    assert validator.is_valid({"hypotheses": [{**hypothesis, "file": "pkg/b.py", "line_start": 250, "line_end": 260}]})
    # Line 250 is in pkg/b.py's range, not in a.py's: the schema itself refuses it (a grammar could not emit it).
    assert not validator.is_valid({"hypotheses": [{**hypothesis, "file": "a.py", "line_start": 250, "line_end": 260}]})
    wrong_place = {"file": "a.py", "symbol": "g", "line_start": 41, "line_end": 41}
    assert not validator.is_valid(
        {"hypotheses": [{**hypothesis, "file": "a.py", "line_start": 1, "line_end": 2, "also": [wrong_place]}]}
    )
    # Anthropic's structured outputs take it too: every variant closed, the keywords they refuse dropped.
    closed = output_format_schema(detective.schema)["properties"]["hypotheses"]["items"]["anyOf"]
    assert all(v["additionalProperties"] is False and "maximum" not in v["properties"]["line_end"] for v in closed)


def test_past_a_few_files_the_schema_keeps_one_bound_and_says_each_file_s_range() -> None:
    files = {f"pkg/m{n}.py": 10 * (n + 1) for n in range(MAX_SCHEMA_FILES + 1)}
    item = tool_specs(ProjectBounds(files))[0].schema["properties"]["hypotheses"]["items"]
    assert "anyOf" not in item and item["properties"]["line_end"]["maximum"] == 10 * (MAX_SCHEMA_FILES + 1)
    assert "pkg/m0.py: 1-10" in item["properties"]["line_start"]["description"]


# -- the engine's requests, recorded from a scripted model over a real sandbox ---------------------------
FINDER = {
    "finder.py": """\
import re

WORD = re.compile(r"\\w+")


def find(words, target):
    for i, word in enumerate(words):
        if word == target:
            return i + 1
    return -1
"""
    + "".join(f"\n\ndef filler_{n}(x):\n    return x + {n}\n" for n in range(40))
    + """

def lookup(text, target):
    words = WORD.findall(text)
    index = find(words, target)
    return words[index - 1] if index > 0 else None
""",
    "tests/test_finder.py": """\
from finder import find, lookup


def test_find():
    assert find(["a", "b"], "b") == 1


def test_lookup():
    assert lookup("a b", "b") == "b"
""",
}


def recording_model(answers: dict[str, list[dict[str, Any]]]) -> QueuedModel:
    """Answers as a server enforcing JSON schemas would."""
    return QueuedModel(answers, structured="json-schema", usage=(10, 10))


def lines_of(source: str, code: str) -> int:
    return source.splitlines().index(code) + 1


def test_the_detective_may_name_several_places_and_the_patcher_sees_each(
    project_sandbox: Callable[..., CachedSandbox],
) -> None:
    sandbox = project_sandbox(files=FINDER)
    source = sandbox.read_file("finder.py")
    find_line = lines_of(source, "            return i + 1")
    lookup_line = lines_of(source, "    return words[index - 1] if index > 0 else None")
    ev = evidence(
        f2p_tests=("tests/test_finder.py::test_find",),
        failures=(failure("tests/test_finder.py::test_find", "assert 2 == 1"),),
        suspicious_lines=(SuspiciousLine(file="finder.py", line=find_line, score=1.0, function="find"),),
        suspicious_functions=(SuspiciousFunction(file="finder.py", name="find", start=6, end=10, score=1.0),),
    )
    hypothesis = {
        "title": "find returns a 1-based index",
        "confidence": 0.8,
        "file": "finder.py",
        "symbol": "find",
        "line_start": find_line,
        "line_end": find_line,
        "reasoning": "test_find expects 1 for the second word",
        "proposed_fix": "return i, and lookup uses the index as is",
        "also": [{"file": "finder.py", "symbol": "lookup", "line_start": lookup_line, "line_end": lookup_line}],
    }
    fix = {"explanation": "0-based", "edits": [{"file": "finder.py", "search": "return i + 1", "replace": "return i"}]}
    again = {
        "explanation": "0-based",
        "edits": [{"file": "finder.py", "search": "return i + 1", "replace": "return i + 0"}],
    }
    model = recording_model({DETECTIVE_TOOL: [{"hypotheses": [hypothesis]}], "propose_edits": [fix, again]})
    engine = LLMEngine(model, Budget(model="scripted"))
    (found,) = engine.hypotheses(ev, sandbox, 3)
    assert found.also == (Location(file="finder.py", symbol="lookup", lines=(lookup_line,)),)
    # The context shows find, not lookup (nothing ranks it); the Patcher's request shows both, with imports.
    assert numbered(lookup_line, "    return words[index - 1] if index > 0 else None") not in model.requests[0].context
    exposed = found.model_copy(update={"reproduction": "QA test fails on the unpatched code with AssertionError"})
    history: list[Verification] = []
    candidates = engine.candidates(exposed, ev, sandbox, history)
    next(candidates)
    (first,) = model.text("propose_edits")
    assert numbered(lookup_line, "    return words[index - 1] if index > 0 else None") in first
    assert numbered(find_line, "            return i + 1") in first and numbered(1, "import re") in first
    assert "also: finder.py lookup" in first and "QA test fails on the unpatched code with AssertionError" in first
    # A failed attempt whose output points elsewhere (filler_7) shows that code in the retry.
    filler = lines_of(source, "def filler_7(x):") + 1
    history.append(
        Verification(
            candidate_id="H1-P1",
            ok=False,
            stage=VerifyStage.P2P,
            failing_tests=("tests/test_finder.py::test_lookup",),
            detail=f"tests/test_finder.py::test_lookup: TypeError at finder.py:{filler}: bad operand",
        )
    )
    next(candidates)
    second = model.text("propose_edits")[1]
    assert numbered(filler, "    return x + 7") in second and "failing output points at" in second
    # The schemas' file enum holds the files shown, not every source file.
    detective_spec = next(t for t in model.requests[0].tools if t.name == DETECTIVE_TOOL)
    assert detective_spec.schema["properties"]["hypotheses"]["items"]["properties"]["file"]["enum"] == ["finder.py"]


def test_the_qa_request_lists_the_fixtures_and_plugins_a_reproduction_test_can_use(
    project_sandbox: Callable[..., CachedSandbox],
) -> None:
    sandbox = project_sandbox(
        files={
            "conftest.py": "import pytest\n\n\n@pytest.fixture\ndef account():\n    return 1\n",
            "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef deep():\n    return 2\n",
            "m.py": "def f():\n    return 1\n",
            "tests/test_m.py": "from m import f\n\n\ndef test_f(account, deep):\n    assert f() == 2\n",
        }
    )
    run = sandbox.inner.run_tests(coverage=True)  # the real collector in the project's pytest, uncached
    fixtures = dict(run.root_fixtures)
    # The root conftest's fixture is visible under the scratch folder; the test folder's is not.
    assert fixtures["account"] == "conftest.py" and fixtures["tmp_path"] == "pytest" and "deep" not in fixtures
    ev = evidence(pytest_plugins=("pytest-mock",), root_fixtures=run.root_fixtures)
    hypothesis = Hypothesis(id="H1", rank=1, title="t", confidence=0.5, file="m.py", symbol="f", lines=(1,))
    text = qa_request(hypothesis, "test_qa_h1.py", environment=qa_environment(ev))
    assert "conftest.py: account" in text and "tmp_path" in text and "installed pytest plugins: pytest-mock" in text
    assert "deep" not in text


def test_a_decorated_function_is_shown_with_its_decorators() -> None:
    module = "import click\n\n\n@click.command()\n@click.option('--n', default=1)\ndef main(n):\n    return n + 1\n"
    read = files_reader({"cli.py": module, "tests/test_m.py": "def test_it():\n    assert 1 == 2\n"})
    ev = evidence(
        suspicious_lines=(SuspiciousLine(file="cli.py", line=7, score=1.0, function="main"),),
        suspicious_functions=(SuspiciousFunction(file="cli.py", name="main", start=6, end=7, score=1.0),),
    )
    context = build_context(ev, read)
    assert numbered(5, "@click.option('--n', default=1)") in context and numbered(4, "@click.command()") in context


def test_a_source_file_an_ask_showed_joins_the_file_enum(project_sandbox: Callable[..., CachedSandbox]) -> None:
    sandbox = project_sandbox(files=FINDER | {"helpers.py": "def unused(x):\n    return x\n"})
    ev = evidence(
        f2p_tests=("tests/test_finder.py::test_find",),
        failures=(failure("tests/test_finder.py::test_find", "assert 2 == 1"),),
        suspicious_lines=(SuspiciousLine(file="finder.py", line=9, score=1.0, function="find"),),
        suspicious_functions=(SuspiciousFunction(file="finder.py", name="find", start=6, end=10, score=1.0),),
    )
    elsewhere = {
        "title": "helpers.unused is the culprit",
        "confidence": 0.4,
        "file": "helpers.py",
        "symbol": "unused",
        "line_start": 1,
        "line_end": 2,
        "reasoning": "asked for it",
        "proposed_fix": "change it",
    }
    model = recording_model(
        {
            DETECTIVE_TOOL: [
                {"asks": [{"kind": "file", "path": "helpers.py", "line_start": 1, "line_end": 2}]},
                {"hypotheses": [elsewhere]},
            ]
        }
    )
    engine = LLMEngine(model, Budget(model="scripted"))
    (found,) = engine.hypotheses(ev, sandbox, 3)
    assert found.file == "helpers.py"

    def enum(request: ModelRequest) -> list[str]:
        spec = next(t for t in request.tools if t.name == DETECTIVE_TOOL)
        return file_enum(spec.schema["properties"]["hypotheses"]["items"])

    first, second = model.requests
    assert enum(first) == ["finder.py"] and enum(second) == ["finder.py", "helpers.py"]
    assert numbered(2, "    return x") in second.messages[-1].content


def test_the_context_states_the_python_the_project_s_tests_run_on(
    project_sandbox: Callable[..., CachedSandbox],
) -> None:
    sandbox = project_sandbox(files={"m.py": "def f():\n    return 1\n", "tests/test_m.py": TEST_M})
    run = sandbox.inner.run_tests(coverage=True)  # the real collector in the project's pytest, uncached
    assert run.python_version == platform.python_version()  # the sandbox runs the project on this interpreter
    context = build_context(evidence(python_version=run.python_version), files_reader({}))
    assert f"The project's tests run on Python {platform.python_version()}" in context


TEST_M = "from m import f\n\n\ndef test_f():\n    assert f() == 2\n"


def test_the_qa_request_says_which_test_helpers_it_may_import_and_how_its_functions_are_judged(
    project_sandbox: Callable[..., CachedSandbox],
) -> None:
    sandbox = project_sandbox(
        files={
            "m.py": "def f():\n    return 1\n",
            "tests/__init__.py": "",
            "tests/utils.py": "def expect(x):\n    return x\n",
            "tests/sub/__init__.py": "",
            "tests/sub/helpers.py": "ONE = 1\n",
            "tests/sub/test_m.py": "from m import f\nfrom tests.utils import expect\nfrom .helpers import ONE\n"
            "from . import test_other\n\n\ndef test_f():\n    assert f() == expect(2) + ONE\n",
            "tests/sub/test_other.py": "def test_o():\n    pass\n",
        }
    )
    qa = {"test_source": "from m import f\n\n\ndef test_qa():\n    assert f() == 2\n", "expected_failure": "Assert"}
    model = recording_model({"write_reproduction_test": [qa]})
    engine = LLMEngine(model, Budget(model="scripted"), max_asks=0)
    ev = evidence(f2p_tests=("tests/sub/test_m.py::test_f",))
    hypothesis = Hypothesis(id="H1", rank=1, title="t", confidence=0.5, file="m.py", symbol="f", lines=(1,))
    assert engine.qa_test(hypothesis, ev, sandbox) is not None
    (text,) = model.text("write_reproduction_test")
    assert "from tests.utils import expect" in text and "from tests.sub.helpers import ONE" in text
    assert "from tests.sub import test_other" not in text  # a test module is not a helper
    assert "at least one\nof its test functions fails" in text and "EVERY test function in the module must pass" in text


def test_the_qa_tool_names_the_projects_own_runner_not_pytest() -> None:
    """One tool list serves every language (the cached prompt prefix): QA's description may not say pytest to a
    JavaScript project (readers of the BugsJS run were told to write a pytest test)."""
    from selfix_action.llm.schemas import QA_TOOL, tool_specs

    (qa,) = [spec for spec in tool_specs() if spec.name == QA_TOOL]
    assert "pytest" not in qa.description and "project's own test runner" in qa.description
