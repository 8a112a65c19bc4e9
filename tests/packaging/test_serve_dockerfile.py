"""The ``selfix serve`` image (packaging/serve/Dockerfile): hadolint passes it; the base is the action image's
pinned digest; Python packages come only from the serve lock (hashed) into selfix's venv; it runs as a non-root
user with the database on a volume and a HEALTHCHECK on /healthz. No Docker engine here: not built."""

from __future__ import annotations

import re

from tests.helpers.packaging import REPO_ROOT, run, tool

DOCKERFILE = REPO_ROOT / "packaging" / "serve" / "Dockerfile"
LOCK = REPO_ROOT / "packaging" / "serve" / "requirements.lock"


def _instructions() -> list[str]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_hadolint_passes_the_serve_dockerfile() -> None:
    proc = run([tool("hadolint"), "--no-color", "--failure-threshold", "info", str(DOCKERFILE)])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_base_is_the_action_images_pinned_digest() -> None:
    froms = [line for line in _instructions() if line.startswith("FROM ")]
    action_from = [line for line in (REPO_ROOT / "Dockerfile").read_text().splitlines() if line.startswith("FROM ")]
    assert froms == action_from
    assert re.fullmatch(r"FROM [\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", froms[0])


def test_python_packages_come_from_the_hashed_serve_lock() -> None:
    runs = [line for line in _instructions() if line.startswith("RUN ")]
    assert not [line for line in runs if re.search(r"\bpip3? install\b", line)]
    assert "COPY packaging/serve/requirements.lock /opt/selfix/src/packaging/requirements.lock" in _instructions()
    lock = LOCK.read_text(encoding="utf-8")
    pins = dict(re.findall(r"^([a-z0-9_.-]+)==([^\s;]+)", lock, re.MULTILINE))
    assert {"starlette", "uvicorn", "pygithub", "setuptools"} <= set(pins)
    for block in re.split(r"\n(?=[a-z0-9_.-]+==)", lock.split("\n", 2)[2]):
        assert "--hash=sha256:" in block, block[:80]
    copies = [line for line in _instructions() if line.startswith("COPY ")]
    assert not any("bench" in line or line.startswith("COPY . ") for line in copies)


def test_it_runs_as_a_user_with_the_database_on_a_volume_and_a_healthcheck() -> None:
    instructions = _instructions()
    users = [line for line in instructions if line.startswith("USER ")]
    assert users and users[-1] != "USER root" and not users[-1].startswith("USER 0")
    assert 'VOLUME ["/var/lib/selfix"]' in instructions
    health = [line for line in instructions if line.startswith("HEALTHCHECK ")]
    assert len(health) == 1 and "/healthz" in health[0]
    assert any(line.startswith("ENTRYPOINT") and '"serve"' in line for line in instructions)
