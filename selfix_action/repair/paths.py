"""Which repository paths are tests, which are protected, and which are the project's own source.

Tests are the specification: no engine may "fix" a failure by editing them, their fixtures or the test
configuration. These checks run at the edit layer and again on the final diff.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterable
from pathlib import PurePosixPath

from selfix_action.repair.languages import is_node_file

# Scratch folder (inside the sandbox copy only) where QA reproduction tests are written.
QA_TEST_DIR = "_selfix_qa"
TEST_DIR_NAMES = frozenset({"test", "tests", "testing"})
# Folders that are never the project's own source: environments, caches, build output, selfix's own output.
IGNORED_DIR_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "env",
        ".env",
        ".tox",
        ".nox",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "node_modules",
        "build",
        "dist",
        ".eggs",
        ".selfix",
        "site-packages",
    }
)
PROTECTED_FILE_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "noxfile.py",
        ".coveragerc",
        "Makefile",
        ".gitlab-ci.yml",
        ".travis.yml",
        "azure-pipelines.yml",
        "Jenkinsfile",
        ".pre-commit-config.yaml",
        "poetry.lock",
        "uv.lock",
        "Pipfile.lock",
        "requirements.txt",
        "pytest.toml",
        ".pytest.ini",
        "constraints.txt",
        "pdm.lock",
        "pixi.lock",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
        "conda-lock.yml",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
# Files the interpreter runs at start-up: a patch must never add one (nor edit one).
STARTUP_HOOK_NAMES = frozenset({"sitecustomize.py", "usercustomize.py"})
# CI folders (.gitlab: the files a .gitlab-ci.yml includes, issue and MR templates).
PROTECTED_DIR_NAMES = frozenset({".github", ".gitlab", ".circleci", ".buildkite"})


# JavaScript/TypeScript: the names jest, vitest and mocha find tests by, and the folders they live in.
NODE_TEST_DIR_NAMES = frozenset({"__tests__", "__mocks__", "spec", "specs", "__fixtures__", "fixtures"})
NODE_TEST_MARKERS = (".test.", ".spec.", "-test.", "_test.", "-spec.", "_spec.")
# The runners' and build tools' configuration: what the tests run with is part of the specification.
NODE_CONFIG_NAMES = frozenset(
    {
        "package.json",
        ".mocharc.js",
        ".mocharc.cjs",
        ".mocharc.json",
        ".mocharc.jsonc",
        ".mocharc.yml",
        ".mocharc.yaml",
        ".babelrc",
        ".babelrc.js",
        ".nycrc",
        ".nycrc.json",
        "karma.conf.js",
        "Gruntfile.js",
        "gulpfile.js",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
    }
)
# Build and coverage output of Node tools (not ignored for Python: a Python package may be named ``coverage``).
NODE_OUTPUT_DIR_NAMES = frozenset({"coverage", ".nyc_output", ".next", ".nuxt", ".turbo", ".yarn", "lib-cov", "out"})
NODE_CONFIG_PREFIXES = ("jest.config.", "vitest.config.", "vitest.workspace.", "vite.config.", "babel.config.")


def _is_node_test(parts: tuple[str, ...]) -> bool:
    name = parts[-1] if parts else ""
    if not is_node_file(name):
        return False
    if any(marker in name for marker in NODE_TEST_MARKERS) or name.startswith("test."):
        return True
    return any(part in TEST_DIR_NAMES or part in NODE_TEST_DIR_NAMES for part in parts[:-1])


def is_test_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    if _is_node_test(parts):
        return True
    if name.startswith("test_") and name.endswith(".py"):
        return True
    if name.endswith("_test.py") or name == "conftest.py":
        return True
    return any(part in TEST_DIR_NAMES for part in parts[:-1])


def is_ignored_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return any(part in IGNORED_DIR_NAMES or part.endswith(".egg-info") for part in parts[:-1])


def protected_reason(path: str, extra_patterns: Iterable[str] = ()) -> str | None:
    """Why ``path`` must not be edited, or None when it may be."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        return "outside the repository"
    if is_test_path(path):
        return "test file"
    if pure.name in STARTUP_HOOK_NAMES or pure.suffix == ".pth":
        return "interpreter start-up hook"
    if pure.name in PROTECTED_FILE_NAMES or pure.name in NODE_CONFIG_NAMES:
        return "test, build or CI configuration"
    if pure.name.startswith(NODE_CONFIG_PREFIXES) or (pure.name.startswith("tsconfig") and pure.suffix == ".json"):
        return "test, build or CI configuration"
    if pure.suffix == ".lock" or (pure.name.startswith("requirements") and pure.suffix in (".txt", ".in")):
        return "lockfile or pinned requirements"
    if any(part in PROTECTED_DIR_NAMES for part in pure.parts):
        return "CI configuration"
    for pattern in extra_patterns:
        if fnmatch.fnmatch(path, pattern):
            return f"protected by pattern {pattern!r}"
    return None


def is_source_path(path: str) -> bool:
    """A Python file of the project's own code that engines may edit."""
    return path.endswith(".py") and not is_ignored_path(path) and protected_reason(path) is None


def is_node_source_path(path: str) -> bool:
    """A JavaScript or TypeScript file of the project's own code that engines may edit (not a declaration file
    nor a minified bundle: neither is what the project's authors edit)."""
    name = PurePosixPath(path).name
    if not is_node_file(name) or name.endswith((".d.ts", ".min.js", ".d.mts", ".d.cts")):
        return False
    if any(part in NODE_OUTPUT_DIR_NAMES for part in PurePosixPath(path).parts[:-1]):
        return False
    return not is_ignored_path(path) and protected_reason(path) is None


def is_code_path(path: str) -> bool:
    """The project's own code in any language selfix heals."""
    return is_source_path(path) or is_node_source_path(path)


def source_dirs(source_files: Iterable[str]) -> set[str]:
    """Folders that already hold project source ("." for the repository root)."""
    return {PurePosixPath(p).parent.as_posix() for p in source_files if is_code_path(p)}


def new_file_reason(path: str, existing_source_dirs: Collection[str]) -> str | None:
    """Why a patch may not create ``path`` (which does not exist yet), or None when it may."""
    pure = PurePosixPath(path)
    if pure.name in STARTUP_HOOK_NAMES or pure.suffix == ".pth":
        return "new interpreter start-up hook"
    if pure.parent.as_posix() not in existing_source_dirs:
        return "new file outside the project's source folders"
    return None


def patch_violations(
    files: Iterable[str],
    existing_files: Collection[str],
    extra_patterns: Iterable[str] = (),
) -> list[tuple[str, str]]:
    """Every ``(path, reason)`` that makes a patch unacceptable. ``existing_files``: all files of the unpatched
    tree (repo-relative POSIX paths); a patched path not among them is a new file and must land in a folder
    that already holds project source."""
    patterns = tuple(extra_patterns)
    dirs: set[str] | None = None
    out: list[tuple[str, str]] = []
    for path in files:
        reason = protected_reason(path, patterns)
        if reason is None and path not in existing_files:
            if dirs is None:
                dirs = source_dirs(existing_files)
            reason = new_file_reason(path, dirs)
        if reason is not None:
            out.append((path, reason))
    return out
