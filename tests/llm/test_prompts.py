"""The shared context: pruned evidence and syntax-tree slices, never whole large files."""

from __future__ import annotations

from selfix_action.llm.prompts import SYSTEM_PROMPT, baseline_context, build_context, symbol_slice
from selfix_action.repair.values import (
    Evidence,
    Frame,
    SuspiciousFunction,
    SuspiciousLine,
    TestResult,
    TestStatus,
)

FILLER = "".join(f"\n\ndef helper_{n}(x):\n    return x + {n}\n" for n in range(200))
BANK = (
    '"""Accounts."""\n\nimport math\n\nFEE = 1\n\n\nclass Account:\n    LIMIT = 100\n\n'
    "    def __init__(self):\n        self.balance = 0\n\n"
    "    def deposit(self, amount):\n        self.balance += amount\n\n"
    "    def withdraw(self, amount):\n        self.balance += amount + FEE\n        return self.balance\n" + FILLER
)
TEST = (
    "from bank import Account\n\n\ndef test_other():\n    assert True\n\n\n"
    "def test_withdraw():\n    acct = Account()\n    acct.deposit(10)\n    assert acct.withdraw(3) == 6\n"
)
FILES = {"bank.py": BANK, "tests/test_bank.py": TEST}


def read(path: str) -> str:
    if path not in FILES:
        raise FileNotFoundError(path)
    return FILES[path]


WITHDRAW_LINE = BANK.splitlines().index("        self.balance += amount + FEE") + 1
EVIDENCE = Evidence(
    f2p_tests=("tests/test_bank.py::test_withdraw",),
    p2p_tests=("tests/test_bank.py::test_other",),
    failures=(
        TestResult(
            nodeid="tests/test_bank.py::test_withdraw",
            status=TestStatus.FAILED,
            exc_type="AssertionError",
            message="assert 14 == 6\n +  where 14 = withdraw(3)",
            frames=(Frame(file="tests/test_bank.py", line=12, function="test_withdraw", code="assert ..."),),
        ),
    ),
    suspicious_lines=(
        SuspiciousLine(file="bank.py", line=WITHDRAW_LINE, score=1.0, function="Account.withdraw"),
        SuspiciousLine(file="bank.py", line=WITHDRAW_LINE + 1, score=0.9, function="Account.withdraw"),
    ),
    suspicious_functions=(
        SuspiciousFunction(
            file="bank.py", name="Account.withdraw", start=WITHDRAW_LINE - 1, end=WITHDRAW_LINE + 1, score=1.0
        ),
    ),
    coverage_used=True,
    localization_note="per-test coverage of 1 failing and 1 passing tests",
    user_hint="the fee should be charged, not credited",
)


def test_context_holds_slices_not_whole_files() -> None:
    context = build_context(EVIDENCE, read)
    assert f"{WITHDRAW_LINE:>5} |         self.balance += amount + FEE" in context
    assert "    5 | FEE = 1" in context and "    3 | import math" in context  # module outline
    assert "    8 | class Account:" in context and "    9 |     LIMIT = 100" in context  # class outline
    assert "def deposit" not in context  # another method of the class is not a suspect
    assert "helper_17" not in context and f"bank.py ({len(BANK.splitlines())} lines)" in context
    assert "def test_withdraw():" in context and "def test_other" not in context
    assert "assert 14 == 6" in context and "bank.py:" in context
    assert "## Similar past fixes\n\n(none recorded yet)" in context
    assert "the fee should be charged, not credited" in context
    whole = baseline_context(EVIDENCE, read, ["bank.py", "tests/test_bank.py"])
    assert len(whole) > 5 * len(context)


def test_memory_slot_is_filled_when_given() -> None:
    context = build_context(EVIDENCE, read, similar_fixes="- 2024: fee sign flipped in bank.py")
    assert "fee sign flipped" in context and "(none recorded yet)" not in context


def test_context_is_deterministic() -> None:
    assert build_context(EVIDENCE, read) == build_context(EVIDENCE, read)
    assert "Never edit test files" in SYSTEM_PROMPT


def test_symbol_slice() -> None:
    assert symbol_slice("bank.py", "withdraw", (), read) == {
        "bank.py": set(range(WITHDRAW_LINE - 1, WITHDRAW_LINE + 2))
    }
    constant = symbol_slice("bank.py", "FEE", (5,), read)["bank.py"]
    assert 5 in constant and len(constant) < 12
    assert symbol_slice("missing.py", "x", (1,), read) == {}


# -- the imports of every module shown, whole ---------------------------------------------------------------
COMPAT_IMPORTS = (
    '"""Requests."""\n\nimport os\nimport sys\nimport json\nimport re\n\n'
    "from .compat import (\n" + "".join(f"    name_{n},\n" for n in range(30)) + "    basestring,\n)\n\n"
    "try:\n    import simplejson as fastjson\nexcept ImportError:\n    fastjson = None\n\n"
    "if sys.version_info >= (3, 8):\n    from typing import Protocol\nelse:\n    Protocol = object\n\n"
    "LIMIT = 3\n\n\n"
    "def to_native(x):\n    if isinstance(x, int):\n        return str(x)\n    return x\n"
)


def test_a_shown_module_s_imports_appear_whole_multi_line_and_guarded_ones_too() -> None:
    files = {"req/utils.py": COMPAT_IMPORTS, "tests/test_utils.py": "from req.utils import to_native\n"}
    line = COMPAT_IMPORTS.splitlines().index("    if isinstance(x, int):") + 1
    evidence = Evidence(
        f2p_tests=("tests/test_utils.py::test_native",),
        p2p_tests=(),
        failures=(),
        suspicious_lines=(SuspiciousLine(file="req/utils.py", line=line, score=1.0, function="to_native"),),
        suspicious_functions=(),
        coverage_used=True,
        localization_note="n",
    )
    context = build_context(evidence, files.__getitem__)
    source = COMPAT_IMPORTS.splitlines()
    for text in (
        "from .compat import (",
        "    name_29,",
        "    basestring,",
        ")",
        "try:",
        "    import simplejson as fastjson",
    ):
        n = source.index(text) + 1
        assert f"{n:>5} | {text}" in context, text
    for text in ("except ImportError:", "    fastjson = None", "    from typing import Protocol", "else:"):
        assert f"{source.index(text) + 1:>5} | {text}" in context, text
    assert "if sys.version_info >= (3, 8):" in context and "LIMIT = 3" in context


# -- what the failing tests build and call -------------------------------------------------------------------
TYPES = (
    "class Command:\n"
    "    kind = 'shell'\n\n"
    "    def __init__(self, script, output):\n"
    "        self.script = script.strip()\n"
    "        self.output = output\n\n"
    + "".join(f"    def method_{n}(self):\n        return {n}\n\n" for n in range(40))
    + "    def __repr__(self):\n"
    "        return f'Command(script={self.script!r})'\n"
)
RULES = "from app.types import Command\n\n\ndef match(command):\n    return 'push' in command.script\n"
USES = {
    "app/__init__.py": "",
    "app/types.py": TYPES,
    "app/rules.py": RULES,
    "tests/__init__.py": "",
    "tests/utils.py": "def make(script):\n    return script + ' --force'\n\n\ndef unused():\n    return 0\n",
    "tests/test_rules.py": "from app.rules import match\nfrom app.types import Command\nfrom tests.utils import make\n"
    "\n\ndef test_match():\n    assert match(Command(make('git push'), ''))\n",
}


def test_the_class_a_failing_test_builds_shows_its_constructor_and_the_helpers_it_calls_are_shown() -> None:
    repr_line = TYPES.splitlines().index("    def __repr__(self):") + 1
    match_line = RULES.splitlines().index("    return 'push' in command.script") + 1
    evidence = Evidence(
        f2p_tests=("tests/test_rules.py::test_match",),
        p2p_tests=(),
        failures=(),
        suspicious_lines=(
            SuspiciousLine(file="app/types.py", line=repr_line + 1, score=1.0, function="Command.__repr__"),
            SuspiciousLine(file="app/rules.py", line=match_line, score=0.9, function="match"),
        ),
        suspicious_functions=(),
        coverage_used=True,
        localization_note="n",
    )
    context = build_context(evidence, USES.__getitem__)
    assert "    4 |     def __init__(self, script, output):" in context
    assert "    5 |         self.script = script.strip()" in context
    assert "    1 | def make(script):" in context and "    2 |     return script + ' --force'" in context
    assert "def unused" not in context and "def method_3" not in context
    # Nothing of Command ranked at all: the class the test builds is still shown with its constructor.
    only_rules = evidence.model_copy(update={"suspicious_lines": evidence.suspicious_lines[1:]})
    context = build_context(only_rules, USES.__getitem__)
    assert "### app/types.py" in context and "    5 |         self.script = script.strip()" in context
    assert "    1 | class Command:" in context and "    2 |     kind = 'shell'" in context


def test_a_javascript_failing_test_is_shown_from_the_spec_file_its_stack_names() -> None:
    """The spec mocha loaded (test/index.js) only requires the file that defines the test: the failure's stack
    names that file, and the test is shown from there."""
    from selfix_action.llm.prompts import test_slices
    from selfix_action.repair.values import Evidence, Frame, TestResult, TestStatus

    nodeid = "test/index.js::Hexo > toc > default"
    files = {
        "test/index.js": "require('./scripts/toc');\n",
        "test/scripts/toc.js": "describe('toc', () => {\n  it('default', () => {\n    toc(1);\n  });\n});\n",
    }
    failure = TestResult(
        nodeid=nodeid, status=TestStatus.FAILED, frames=(Frame(file="test/scripts/toc.js", line=3, function="x"),)
    )
    evidence = Evidence(
        f2p_tests=(nodeid,), p2p_tests=(), failures=(failure,), suspicious_lines=(), suspicious_functions=(),
        coverage_used=False,
    )  # fmt: skip
    assert test_slices(evidence, files.__getitem__) == {"test/scripts/toc.js": {2, 3, 4}}


def test_a_javascript_failing_test_no_stack_names_is_found_through_the_specs_requires() -> None:
    """An assertion library's error names no test file (Hexo-3's is_home: "expected false to be true"): the test
    is looked up in the files test/index.js loads, and those they load in turn, never in the project's modules."""
    from selfix_action.llm.prompts import test_slices
    from selfix_action.repair.values import Evidence, TestResult, TestStatus

    nodeid = "test/index.js::Hexo > Helpers > is > is_home"
    files = {
        "test/index.js": "require('chai');\nrequire('../lib/hexo');\nrequire('./scripts/helpers');\n",
        "test/scripts/helpers/index.js": "describe('Helpers', () => {\n  require('./is');\n});\n",
        "test/scripts/helpers/is.js": "describe('is', () => {\n  it('is_home', () => {\n    home();\n  });\n});\n",
        "lib/hexo.js": "it('is_home', () => {});\n",  # a project module is not a test file
    }

    def read(path: str) -> str:
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    failure = TestResult(nodeid=nodeid, status=TestStatus.FAILED, message="expected false to be true")
    evidence = Evidence(
        f2p_tests=(nodeid,), p2p_tests=(), failures=(failure,), suspicious_lines=(), suspicious_functions=(),
        coverage_used=False,
    )  # fmt: skip
    assert test_slices(evidence, read) == {"test/scripts/helpers/is.js": {2, 3, 4}}


def test_settling_a_javascript_disagreement_asks_for_a_spec_for_the_projects_runner() -> None:
    """Two verified patches disagree on inputs the probe tried: for a Node project QA settles it with a spec
    file for the project's own runner beside the failing test, never a pytest module."""
    from selfix_action.llm.prompts import settle_request
    from selfix_action.repair.values import Evidence, Hypothesis

    hypothesis = Hypothesis(id="H1", rank=1, title="plain objects are not maps", confidence=0.7, file="lib/e.js",
                            symbol="Encoder.writeMap", lines=(5,))  # fmt: skip
    node = Evidence(
        f2p_tests=("test/e.spec.js::writeMap > plain",), p2p_tests=(), failures=(), suspicious_lines=(),
        suspicious_functions=(), coverage_used=False, toolchain="mocha 10.8.2 on Node v20.20.2",
    )  # fmt: skip
    text = settle_request(hypothesis, "test/test-settle-h1.test.js", "| row |", "", node)
    assert "mocha 10.8.2 on Node v20.20.2" in text and "failing test test/e.spec.js:" in text and "pytest" not in text
    python = settle_request(hypothesis, "test_settle_h1.py", "| row |", "", node.model_copy(update={"toolchain": ""}))
    assert "Write a small pytest module (saved as\n_selfix_qa/test_settle_h1.py" in python


def test_qa_is_asked_again_saying_why_broken_or_disputed() -> None:
    """A broken test failed in its own code; a disputed one failed on candidates that pass every failing test:
    the request says which, with the test and its failure, for Python and JavaScript alike."""
    from selfix_action.llm.prompts import node_qa_request, qa_request, qa_retry
    from selfix_action.repair.values import Evidence, Hypothesis

    hypothesis = Hypothesis(id="H1", rank=1, title="add subtracts", confidence=0.7, file="calc.py", symbol="add",
                            lines=(2,))  # fmt: skip
    disputed = qa_retry(disputed="The test (_selfix_qa/test_qa_h1.py):\nassert add(2, 2) == 5")
    assert "failed on candidate patches that make every failing test of the project pass" in disputed
    assert "assert add(2, 2) == 5" in disputed and "did not run as a test" not in disputed
    broken = qa_retry(feedback="NameError: name 'ad' is not defined")
    assert "did not run as a test" in broken and qa_retry() == ""
    assert disputed in qa_request(hypothesis, "test_qa_h1.py", disputed)
    node = Evidence(
        f2p_tests=("test/a.spec.js::a",), p2p_tests=(), failures=(), suspicious_lines=(), suspicious_functions=(),
        coverage_used=False, toolchain="mocha 10 on Node v20",
    )  # fmt: skip
    assert disputed in node_qa_request(hypothesis, "test/test-qa-h1.test.js", node, disputed)
