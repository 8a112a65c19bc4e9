"""The package type checks with mypy (config in pyproject.toml, ``[tool.mypy]``): part of the test command, so CI
enforces it. The loop's contracts (repair, heal, providers, llm) are checked with mypy's strict flags."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
STRICT = ("repair", "heal", "providers", "llm")


def _mypy() -> str:
    candidate = Path(sys.executable).with_name("mypy")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("mypy")
    if found is None:
        pytest.skip("mypy is not installed (it comes with the dev extra: pip install -e '.[dev]')")
    return found


def _run(root: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    # The cache (``cache_dir``, relative to ``root``) makes a run on unchanged code take a second or two.
    return subprocess.run(
        [_mypy(), "--config-file", str(REPO_ROOT / "pyproject.toml"), *targets],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_the_packages_type_check() -> None:
    """The product and the benchmark (selfix_bench: mypy's defaults, none of the strict flags)."""
    proc = _run(REPO_ROOT, "selfix_action", "selfix_bench")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout


def test_strict_flags_hold_where_declared_and_only_there(tmp_path: Path) -> None:
    """The same config on a package of probes: an unannotated function is an error in the strict layers and
    allowed elsewhere (``strict = true`` in an override would make it strict everywhere, python/mypy#11401); an
    unneeded ``type: ignore`` is an error everywhere."""
    package = tmp_path / "selfix_action"
    probe = "def untyped(x):\n    return x\n\n\nvalue: int = 1  # type: ignore[assignment]\n"
    for layer in (*STRICT, "action", "sandbox"):
        (package / layer).mkdir(parents=True)
        (package / layer / "__init__.py").write_text("", encoding="utf-8")
        (package / layer / "_probe.py").write_text(probe, encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    proc = _run(tmp_path, "selfix_action")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = {line.split(": error: ")[0] + " " + line.rsplit("[", 1)[-1] for line in proc.stdout.splitlines()}
    for layer in STRICT:
        assert f"selfix_action/{layer}/_probe.py:1 no-untyped-def]" in errors, proc.stdout
    for layer in ("action", "sandbox"):
        assert not any(e.startswith(f"selfix_action/{layer}/_probe.py:1") for e in errors), proc.stdout
    for layer in (*STRICT, "action", "sandbox"):
        assert f"selfix_action/{layer}/_probe.py:5 unused-ignore]" in errors, proc.stdout
