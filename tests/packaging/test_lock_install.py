"""The hashed lock (packaging/requirements.lock, made by packaging/lock.sh) holds every dependency of selfix and
its LLM extras, each pinned with hashes, and installs into a clean virtual environment with --require-hashes
through packaging/install.sh, the same script the Dockerfile and the composite action run.

The install downloads from PyPI (about 45 files; 3 to 7 minutes on this project's CI machine, where pip fetches
each index page slowly) and skips with a reason where PyPI cannot be reached."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tomllib
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers.packaging import LOCK, REPO_ROOT, run

INSTALL_SCRIPT = REPO_ROOT / "packaging" / "install.sh"
INSTALL_TIMEOUT = 1200.0
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>[^\s;\\]+)(?P<marker>\s*;[^\\]*)?\s*\\$")


def _locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of every requirement in the lock."""
    locked: dict[str, tuple[str, list[str]]] = {}
    current = ""
    for line in LOCK.read_text().splitlines():
        if match := _PIN.match(line):
            current = canonicalize_name(match["name"])
            locked[current] = (match["version"], [])
        elif line.strip().startswith("--hash=sha256:"):
            locked[current][1].append(line.strip().removeprefix("--hash=sha256:").rstrip(" \\"))
        elif line.strip() and not line.lstrip().startswith("#"):
            pytest.fail(f"unexpected line in the lock: {line!r}")
    return locked


def _project_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    build = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    names = [*project["project"]["dependencies"], *project["project"]["optional-dependencies"]["llm"], *build]
    return [Requirement(name) for name in names]


def test_lock_pins_every_requirement_with_hashes() -> None:
    locked = _locked()
    assert len(locked) > 20
    for name, (version, hashes) in locked.items():
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", value) for value in hashes), name
        assert re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", version), (name, version)


def test_lock_satisfies_pyproject() -> None:
    """Every dependency, the LLM extras and the build backend are in the lock at a version pyproject.toml allows
    (after editing pyproject.toml: packaging/lock.sh)."""
    locked = _locked()
    for requirement in _project_requirements():
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{name} is not in the lock: run packaging/lock.sh"
        assert requirement.specifier.contains(locked[name][0], prereleases=True), (
            f"{name}=={locked[name][0]} does not satisfy {requirement}: run packaging/lock.sh"
        )
    assert {"anthropic", "openai", "setuptools"} <= set(locked)


def _base_python_with_pip() -> str:
    """The interpreter this venv was made from, whose pip (>= 22.3, for --python) install.sh uses."""
    base = getattr(sys, "_base_executable", sys.executable)
    proc = run([base, "-c", "import pip; print(pip.__version__)"])
    version = tuple(int(part) for part in re.findall(r"\d+", proc.stdout)[:2]) if proc.returncode == 0 else ()
    if version < (22, 3):
        pytest.skip(f"{base} has no pip >= 22.3 (packaging/install.sh runs the base interpreter's pip)")
    return base


def _pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=15):
            return True
    except (urllib.error.URLError, OSError):
        return False


@pytest.mark.slow
def test_lock_installs_into_a_clean_venv_with_require_hashes(tmp_path: Path) -> None:
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable: the hashed lock cannot be installed here")
    # Nothing of this machine's pip setup (config files, extra indexes, find-links, constraints): PyPI and the
    # lock's hashes only. Proxies stay.
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PYTHONNOUSERSITE": "1"})
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    venv = tmp_path / "selfix-venv"
    base_python = _base_python_with_pip()
    before = {path.name for path in REPO_ROOT.iterdir()}
    proc = run(["bash", str(INSTALL_SCRIPT), base_python, str(venv), str(REPO_ROOT)], timeout=INSTALL_TIMEOUT, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert {path.name for path in REPO_ROOT.iterdir()} == before, "the install wrote into the checkout"
    python = venv / "bin" / "python"
    pip = [base_python, "-m", "pip", "--python", str(python)]  # selfix's environment has no pip of its own
    check = run([*pip, "check"], env=env, cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr  # the lock is complete: no missing dependency
    probe = run(
        [str(python), "-I", "-c", "import anthropic, openai, selfix_action; print(selfix_action.__file__)"],
        env=env,
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    assert Path(probe.stdout.strip()).is_relative_to(venv)  # selfix itself, installed (not the checkout)
    listed = run([*pip, "list", "--format=freeze"], env=env, cwd=tmp_path).stdout
    installed = {canonicalize_name(line.split("==")[0]): line.split("==")[1] for line in listed.split()}
    for name, (version, _hashes) in _locked().items():
        if name in installed:  # markers leave some out on this platform (colorama: Windows only)
            assert installed[name] == version, name
    assert installed["anthropic"] == _locked()["anthropic"][0]
    assert installed["openai"] == _locked()["openai"][0]


def _wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel (one module), made here so the offline tests need no index."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": "VALUE = 1\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{dist}/RECORD,,\n"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in {**files, f"{dist}/RECORD": record}.items():
            archive.writestr(member, text)
    return path


@pytest.mark.slow
def test_install_script_takes_only_files_the_lock_hashes(tmp_path: Path) -> None:
    """packaging/install.sh installs what the lock hashes and refuses, installing nothing, a file whose sha256
    the lock does not name (offline: a local wheel, the index switched off)."""
    wheelhouse = tmp_path / "wheels"
    wheelhouse.mkdir()
    wheel = _wheel(wheelhouse, "tinylocked", "1.0")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse)})
    base_python = _base_python_with_pip()
    for name, hashed, ok in (("good", digest, True), ("tampered", "0" * 64, False)):
        scripts = tmp_path / name
        scripts.mkdir()
        shutil.copy(INSTALL_SCRIPT, scripts / "install.sh")
        (scripts / "requirements.lock").write_text(f"tinylocked==1.0 \\\n    --hash=sha256:{hashed}\n")
        venv = tmp_path / f"venv-{name}"
        proc = run(["bash", str(scripts / "install.sh"), base_python, str(venv)], env=env, cwd=tmp_path)
        installed = list((venv / "lib").glob("python*/site-packages/tinylocked.py"))
        if ok:
            assert proc.returncode == 0, proc.stderr
            assert len(installed) == 1
        else:
            assert proc.returncode != 0
            assert "DO NOT MATCH THE HASHES" in proc.stderr, proc.stderr
            assert installed == []


def test_install_script_usage_error_is_exit_2(tmp_path: Path) -> None:
    proc = run(["bash", str(INSTALL_SCRIPT)], cwd=tmp_path)
    assert proc.returncode == 2 and "usage:" in proc.stderr
