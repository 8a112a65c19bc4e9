"""The layering contracts in pyproject.toml (``[tool.importlinter]``) hold, and they are not toothless."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> str:
    candidate = Path(sys.executable).with_name("lint-imports")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("lint-imports")
    if found is None:
        pytest.skip("import-linter is not installed (it comes with the dev extra: pip install -e '.[dev]')")
    return found


def _run(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [_lint_imports(), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def test_import_contracts_are_kept() -> None:
    proc = _run(REPO_ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    assert f"{len(contracts['contracts'])} kept, 0 broken" in proc.stdout


@pytest.mark.parametrize(
    ("module", "source", "broken"),
    [
        ("repair/_probe.py", "from selfix_action.sandbox import process\n", "The repair core (the loop)"),
        ("action/_probe.py", "from selfix_action.commands import fix_cmd\n", "Layers"),
        ("heal/_probe.py", "import subprocess\n", "Only sandbox/ starts processes"),
        ("action/_probe.py", "import github\n", "Only github/ imports PyGithub"),
        ("learn/_probe.py", "import anthropic\n", "Only providers/ imports the LLM SDKs"),
        ("action/_probe.py", "import gitlab\n", "Only gitlab/ imports python-gitlab"),
        ("gitlab_ci/_probe.py", "from selfix_action.action import publisher\n", "The GitLab front end and ci/"),
        ("gitlab_ci/_probe.py", "from selfix_action.publish import render\nimport github\n", "The GitLab front end"),
        ("publish/_probe.py", "from selfix_action.gitlab import client\n", "publish/ imports no forge client"),
        # The front ends are siblings; what they share is in ci/, which knows no forge's front end.
        ("action/_probe.py", "from selfix_action.gitlab_ci import runner\n", "A front end never imports another"),
        ("mcp_server/_probe.py", "from selfix_action.action import runner\n", "A front end never imports another"),
        ("gitlab_ci/_probe.py", "from selfix_action.mcp_server import results\n", "A front end never imports another"),
        ("ci/_probe.py", "from selfix_action.action import api\n", "The GitLab front end and ci/ import nothing"),
        ("ci/_probe.py", "from selfix_action.gitlab_ci import runner\n", "Layers"),
        ("repair/_probe.py", "from selfix_action.ci import settings\n", "The repair core (the loop)"),
        ("publish/_probe.py", "from selfix_action.action import settings\n", "Layers"),
        ("gitlab/_probe.py", "from selfix_action.gitlab_ci import runner\n", "Layers"),
        ("commands/_probe.py", "import mcp\n", "Only mcp_server/ imports the MCP SDK"),
        ("heal/_probe.py", "from mcp.server.mcpserver import MCPServer\n", "Only mcp_server/ imports the MCP SDK"),
        ("mcp_server/_probe.py", "from selfix_action.repair.verify import Verifier\n", "The MCP server heals only"),
        ("mcp_server/_probe.py", "from selfix_action.sandbox import pytest_sandbox\n", "The MCP server heals only"),
        ("mcp_server/_probe.py", "import subprocess\n", "Only sandbox/ starts processes"),
        ("mcp_server/_probe.py", "import gitlab\n", "Only gitlab/ imports python-gitlab"),
        ("gitlab_ci/_probe.py", "import mcp\n", "Only mcp_server/ imports the MCP SDK"),
        # selfix serve: the only Starlette/uvicorn import, a front end like the others, starting no process itself.
        ("commands/_probe.py", "import starlette\n", "Only serve/ imports Starlette and uvicorn"),
        ("serve/_probe.py", "from selfix_action.mcp_server import results\n", "A front end never imports another"),
        ("serve/_probe.py", "import subprocess\n", "Only sandbox/ starts processes"),
        ("serve/_probe.py", "import github\n", "Only github/ imports PyGithub"),
        # The product never imports the benchmark, not even inside a function.
        ("cli_probe.py", "def f():\n    import selfix_bench.runner\n", "The product never imports the benchmark"),
        ("../selfix_bench/_probe.py", "import subprocess\n", "Only sandbox/ starts processes"),
        ("../selfix_bench/_probe.py", "import github\n", "Only github/ imports PyGithub"),
        ("../selfix_bench/_probe.py", "import openai\n", "Only providers/ imports the LLM SDKs"),
        # Inside the benchmark (the import added to the module): the task kinds are independent, the
        # runner is below the measurements, and no measurement imports another.
        ("../selfix_bench/tasks.py", "import selfix_bench.realbugs\n", "Benchmark layers"),
        ("../selfix_bench/runner.py", "from selfix_bench import recall\n", "Benchmark layers"),
        ("../selfix_bench/priors.py", "import selfix_bench.learning\n", "Benchmark layers"),
    ],
)
def test_a_violation_breaks_its_contract(tmp_path: Path, module: str, source: str, broken: str) -> None:
    """The same contracts on a copy of the packages with one forbidden import added (to a new module, or at the
    end of an existing one)."""
    for package in ("selfix_action", "selfix_bench"):
        shutil.copytree(REPO_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    probe = tmp_path / "selfix_action" / module
    before = probe.read_text(encoding="utf-8") if probe.exists() else ""
    probe.write_text(before + source, encoding="utf-8")
    proc = _run(tmp_path)
    assert proc.returncode != 0, proc.stdout
    verdicts = [line for line in proc.stdout.splitlines() if line.startswith(broken)]
    assert verdicts and " BROKEN" in verdicts[0], proc.stdout
