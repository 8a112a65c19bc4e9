"""Attack tests: hostile projects run through the real sandbox (PytestSandbox / run_process + isolation).

Convention for a hostile test written into a project: it PASSES only if its attack worked. So the host-side
test asserts that it FAILED, with the exception the sandbox is expected to cause, and that the canary test
after it still ran and passed (the run went on).

Tests that need a given isolation level call ``need_level`` and are skipped with the reason (what was tried
and why it failed) when this machine does not provide it: they never pass silently without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from selfix_action.engine.models import TestRun, TestStatus
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel, detect_isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.conftest import write_project

ATTACK_FILE = "tests/test_attack.py"
ATTACK = f"{ATTACK_FILE}::test_attack"
CANARY = f"{ATTACK_FILE}::test_zz_canary"
CANARY_SOURCE = "\n\ndef test_zz_canary():\n    assert 1 + 1 == 2\n"

FAKE_GITHUB_TOKEN = "ghs_selfixFAKEgithubTOKEN0123456789"
FAKE_API_KEY = "sk-ant-selfixFAKEapiKEY0123456789"
FAKE_CHECKOUT_TOKEN = "eC1hY2Nlc3MtdG9rZW46Z2hzX3NlbGZpeEZBS0VjaGVja291dA=="
FAKE_CREDENTIAL = "ghp_selfixFAKEcredentialFILE0123456789"
ALL_FAKE_SECRETS = (FAKE_GITHUB_TOKEN, FAKE_API_KEY, FAKE_CHECKOUT_TOKEN, FAKE_CREDENTIAL)

_LEVEL_RANK = {IsolationLevel.NONE: 0, IsolationLevel.UNSHARE: 1, IsolationLevel.BWRAP: 2}


@pytest.fixture(scope="session")
def isolation() -> Isolation:
    # SELFIX_TEST_ISOLATION=unshare|none runs the suite at a weaker level than the best one available.
    return detect_isolation(IsolationConfig(mode=os.environ.get("SELFIX_TEST_ISOLATION", "auto")))


def need_level(isolation: Isolation, level: IsolationLevel, what: str) -> None:
    """Skip, loudly and with the reason, when this machine's isolation is weaker than ``level``."""
    if _LEVEL_RANK[isolation.level] < _LEVEL_RANK[level]:
        pytest.skip(
            f"{what} needs isolation level {level.value}, the level in use here is {isolation.level.value} "
            f"({'; '.join(isolation.fallbacks) or isolation.mechanism})"
        )


def need_process_limit(isolation: Isolation) -> None:
    if not isolation.nproc_enforced:
        pytest.skip(
            f"the process-count limit is not enforceable at isolation {isolation.kind} "
            f"({'; '.join(isolation.warnings)}): a fork bomb would not be bounded"
        )


def hostile_project(attack: str, extra_files: Mapping[str, str] | None = None) -> dict[str, str]:
    """A project whose ``test_attack`` performs ``attack`` (a test function body) and a canary after it."""
    body = "\n".join("    " + line if line.strip() else "" for line in attack.strip("\n").splitlines())
    source = f"def test_attack():\n{body}\n{CANARY_SOURCE}"
    # testpaths: pytest must not wander into links to /etc that some attacks plant in the project.
    files = {"pkg.py": "VALUE = 1\n", ATTACK_FILE: source, "pytest.ini": "[pytest]\ntestpaths = tests\n"}
    files.update(extra_files or {})
    return files


RunAttack = Callable[..., tuple[TestRun, PytestSandbox]]


@pytest.fixture
def run_attack(tmp_path: Path, isolation: Isolation) -> Iterator[RunAttack]:
    """Write a hostile project and run its whole suite once in a real, isolated PytestSandbox."""
    made: list[PytestSandbox] = []

    def run(
        attack: str,
        *,
        extra_files: Mapping[str, str] | None = None,
        limits: Limits | None = None,
        env_source: Mapping[str, str] | None = None,
        prepare: Callable[[Path], None] | None = None,
        use_isolation: Isolation | None = None,
        warm: bool = False,
        hot: bool = False,
    ) -> tuple[TestRun, PytestSandbox]:
        repo = write_project(tmp_path / f"repo{len(made)}", hostile_project(attack, extra_files))
        if prepare is not None:
            prepare(repo)
        sandbox = PytestSandbox(
            repo,
            [sys.executable, "-m", "pytest"],
            limits=limits or Limits(wall_seconds=60),
            env_source=env_source,
            scratch_parent=tmp_path,
            isolation=use_isolation or isolation,
        )
        made.append(sandbox)
        if hot:  # a candidate check in the hot worker (imported and collected once, forked per check)
            sandbox.run_tests()
            run = sandbox.run_tests([ATTACK, CANARY], warm=True)
            assert sandbox.hot_runs == 1, "the hot worker was not used"
            return run, sandbox
        if warm:  # through the warm fork-server worker that candidate verification uses
            sandbox.run_tests()
            return sandbox.run_tests(warm=True), sandbox
        return sandbox.run_tests(), sandbox

    yield run
    for sandbox in made:
        sandbox.close()


def assert_blocked(run: TestRun, *exc_types: str) -> None:
    """The attack test failed with one of ``exc_types`` and the canary after it still passed."""
    attack = run.results.get(ATTACK)
    assert attack is not None, f"the attack test did not run:\n{run.output_tail}"
    assert attack.status is TestStatus.FAILED, f"ATTACK SUCCEEDED: {attack.message}\n{run.output_tail}"
    assert attack.exc_type in exc_types, f"failed for another reason: {attack.exc_type}: {attack.message}"
    canary = run.results.get(CANARY)
    assert canary is not None and canary.status is TestStatus.PASSED, "the run did not go on after the attack"
    assert_no_secret(run)


def assert_no_secret(run: TestRun) -> None:
    text = run.output_tail + "".join(r.message for r in run.results.values())
    for secret in ALL_FAKE_SECRETS:
        assert secret not in text


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A real folder outside /tmp (private inside the sandbox anyway), wherever the checkout itself lives."""
    import shutil
    import tempfile

    for parent in ("/var/cache", "/var/lib", "/opt"):
        try:
            folder = Path(tempfile.mkdtemp(prefix="selfix-outside-tmp-", dir=parent))
        except OSError:
            continue
        folder.chmod(0o755)  # readable by the sandbox uid, like a checkout would be
        (folder / "pyproject.toml").write_text("[build-system]\n", encoding="utf-8")
        (folder / "pyproject.toml").chmod(0o644)
        yield folder
        shutil.rmtree(folder, ignore_errors=True)
        return
    pytest.skip("no writable folder outside /tmp to prove path hiding on")
