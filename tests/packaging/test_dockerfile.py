"""The image builds next year and the same way twice: hadolint passes the Dockerfile; the base is pinned by
digest, apt names packages without versions that rot, and every Python package comes from the hashed lock into
selfix's own virtual environment (the install itself: test_lock_install.py)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.packaging import REPO_ROOT, run, tool

DOCKERFILE = REPO_ROOT / "Dockerfile"


def _hadolint(path: Path) -> str:
    proc = run([tool("hadolint"), "--no-color", "--failure-threshold", "info", str(path)])
    return proc.stdout + proc.stderr if proc.returncode else ""


def test_hadolint_passes_the_dockerfile() -> None:
    assert _hadolint(DOCKERFILE) == ""


def test_hadolint_catches_what_the_dockerfile_avoids(tmp_path: Path) -> None:
    """The check can fail: an unpinned base and an unpinned pip install are reported."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN pip install selfix-action\n")
    report = _hadolint(bad)
    assert "DL3006" in report  # image without a tag
    assert "DL3013" in report  # pip install without versions


def _instructions() -> list[str]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_base_image_is_pinned_by_digest() -> None:
    froms = [line for line in _instructions() if line.startswith("FROM ")]
    assert froms, "no FROM"
    for line in froms:
        assert re.fullmatch(r"FROM [\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}( AS \w+)?", line), line


def test_apt_installs_names_without_exact_versions() -> None:
    """An exact pin (git=1:2.39.*) breaks the build when Debian moves the package; the digest fixes the base."""
    installs = [line for line in _instructions() if "apt-get install" in line]
    assert installs
    for line in installs:
        assert not re.search(r"\b[a-z0-9.+-]+=\S", line.split("apt-get install", 1)[1].split("&&", 1)[0]), line


def test_python_packages_come_from_the_lock_into_selfix_venv() -> None:
    runs = [line for line in _instructions() if line.startswith("RUN ")]
    assert not [line for line in runs if re.search(r"\bpip3? install\b", line)], "pip outside packaging/install.sh"
    installs = [line for line in runs if "packaging/install.sh" in line]
    assert installs and all("/opt/selfix/venv" in line for line in installs)
    assert any(line.startswith("ENTRYPOINT") and "/opt/selfix/venv/bin/selfix" in line for line in _instructions())
    script = (REPO_ROOT / "packaging" / "install.sh").read_text()
    assert "--require-hashes --no-deps --only-binary :all:" in script


def test_the_image_and_the_composite_install_hold_the_product_without_the_benchmark() -> None:
    """A source install holds selfix_bench too (pyproject's packages); the image copies selfix_action/ only, its
    build context leaves the benchmark out, and install.sh (the composite variant's too) copies the product."""
    copies = [line for line in DOCKERFILE.read_text(encoding="utf-8").splitlines() if line.startswith("COPY ")]
    assert any(" selfix_action " in line for line in copies)
    assert not any("bench" in line or line.startswith("COPY . ") for line in copies), copies
    ignored = (REPO_ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "selfix_bench" in ignored and "bench" in ignored
    install = (REPO_ROOT / "packaging" / "install.sh").read_text(encoding="utf-8")
    assert '"$source/selfix_action"' in install and "selfix_bench" not in install
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'include = ["selfix_action*", "selfix_bench*"]' in pyproject
