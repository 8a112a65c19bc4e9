"""The suite's own shape: a test module imports shared helpers from ``tests/helpers/``, never from another test
module or a ``conftest.py`` (pytest imports those itself, under names of its choosing, and a test module imported
as a library runs its collection twice); fixtures live in ``conftest.py`` files; every marker is declared.

The projects under a ``fixtures/`` folder are data (the bundled and scripted projects the tests heal), not the
suite, and are left out.
"""

from __future__ import annotations

import ast
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from tests.helpers.projects import REPO_ROOT

TESTS = REPO_ROOT / "tests"
# ``from tests.x.test_y import``, ``import tests.x.conftest``, also inside a string a test runs as a script; and
# the module's name quoted whole, as ``__import__`` and ``importlib.import_module`` take it.
_ABSOLUTE = re.compile(
    r"^\s*(?:from|import)\s+tests(?:\.\w+)*\.(?:test_\w+|conftest)\b"
    r"|(?:__import__|import_module)\(\s*[\"']tests(?:\.\w+)*\.(?:test_\w+|conftest)[\"']",
    re.M,
)


def _suite_modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "fixtures" not in p.relative_to(root).parts)


def _is_test_or_conftest(name: str) -> bool:
    return name.startswith("test_") or name == "conftest"


def shape_violations(root: Path) -> list[str]:
    """What breaks the suite's shape in the test folder ``root``, one line each (empty: none)."""
    found: list[str] = []
    for path in _suite_modules(root):
        rel = path.relative_to(root.parent).as_posix()
        source = path.read_text(encoding="utf-8")
        for match in _ABSOLUTE.finditer(source):
            line = source.count("\n", 0, match.start()) + 1
            found.append(f"{rel}:{line}: imports a test module or a conftest: {match.group(0).strip()}")
        tree = ast.parse(source, filename=rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > 0:  # from .test_x import / from . import conftest
                module = (node.module or "").split(".")
                names = [alias.name for alias in node.names]
                if _is_test_or_conftest(module[-1]) or (node.module is None and any(map(_is_test_or_conftest, names))):
                    found.append(f"{rel}:{node.lineno}: imports a test module or a conftest (relative import)")
        is_helper = path.parent.name == "helpers"
        if is_helper and re.search(r"@pytest\.fixture\b", source):
            found.append(f"{rel}: a fixture in a helper module (fixtures belong in a conftest.py)")
        if not is_helper and path.name != "__init__.py" and not _is_test_or_conftest(path.stem):
            found.append(f"{rel}: a helper module outside tests/helpers/")
    return found


def test_the_suite_keeps_its_shape() -> None:
    assert shape_violations(TESTS) == []


@pytest.mark.parametrize(
    ("module", "source", "broken"),
    [
        ("repair/test_probe.py", "from tests.repair.test_loop import hyp\n", "imports a test module"),
        ("llm/test_probe.py", "def f():\n    from tests.llm.conftest import calc\n", "or a conftest"),
        ("test_probe.py", "import tests.conftest\n", "or a conftest"),
        # (split in two, or this module would break its own check)
        ("action/test_probe.py", 'HEALABLE = __import__("tests.action.' + 'conftest").HEALABLE\n', "or a conftest"),
        ("learn/test_probe.py", 'SCRIPT = """\nfrom tests.learn.test_memory import x\n"""\n', "imports a test module"),
        ("repair/test_probe.py", "from .test_loop import hyp\n", "relative import"),
        ("repair/test_probe.py", "from . import conftest\n", "relative import"),
        ("helpers/probe.py", "import pytest\n\n\n@pytest.fixture\ndef thing():\n    return 1\n", "a fixture in"),
        ("llm/shared.py", "X = 1\n", "a helper module outside tests/helpers/"),
    ],
)
def test_a_break_of_the_shape_is_found(tmp_path: Path, module: str, source: str, broken: str) -> None:
    """The same check on a test folder of the suite's layout (a test module, a helper, a conftest) and one
    offending module."""
    copy = tmp_path / "tests"
    for rel in ("__init__.py", "conftest.py", "helpers/__init__.py", "helpers/projects.py", "repair/test_loop.py"):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(TESTS / rel, copy / rel)
    (copy / module).parent.mkdir(parents=True, exist_ok=True)
    (copy / module).write_text(source, encoding="utf-8")
    found = shape_violations(copy)
    assert len(found) == 1 and broken in found[0] and module in found[0], found


def test_a_project_under_fixtures_is_data_not_the_suite(tmp_path: Path) -> None:
    copy = tmp_path / "tests"
    (copy / "bench" / "fixtures" / "proj").mkdir(parents=True)
    (copy / "bench" / "fixtures" / "proj" / "helper.py").write_text("from tests.conftest import x\n")
    assert shape_violations(copy) == []


def test_every_marker_the_suite_uses_is_declared() -> None:
    """``--strict-markers`` refuses an undeclared marker when a module using it is collected; this also covers the
    modules a run does not collect (deselected, or skipped at import)."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    assert "--strict-markers" in config["ini_options"]["addopts"].split()
    declared = {line.split(":", 1)[0].strip() for line in config["ini_options"]["markers"]}
    builtin = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}
    used: set[str] = set()
    for path in _suite_modules(TESTS):
        # The suite's own code, not the test projects it writes out as strings (a Django project's django_db).
        tree = ast.parse(path.read_text(encoding="utf-8"))
        used |= {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark"
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "pytest"
        }
    assert {"slow", "parametrize"} <= used  # the reading finds markers at all
    assert used - builtin - declared == set(), f"used but not declared in pyproject.toml: {used - builtin - declared}"
