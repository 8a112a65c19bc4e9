"""``--out``: a folder of selfix's own, never the repository's files, its tests or the user's git settings.

Real git repositories, the real ``selfix fix`` in process; every refusal comes before any test runs (the suite
leaves a mark when it does) and before anything is written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.errors import ExitCode
from selfix_action.heal.gitindex import find_checkout, tracked_paths
from selfix_action.heal.outputs import GITIGNORE
from tests.helpers.projects import write_project


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout


def project(root: Path, extra: dict[str, str] | None = None, *, commit: bool = True) -> Path:
    """A red project committed to git."""
    repo = write_project(
        root,
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
            "report.md": "# the project's own report\n",
            "docs/index.md": "docs\n",
            **(extra or {}),
        },
    )
    git(repo, "init", "-q")
    if commit:
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "start")
    return repo


def snapshot(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        ("tests", "inside the test folder 'tests'"),
        ("tests/selfix", "inside the test folder 'tests'"),
        (".", "is the repository itself"),
        ("report.md", "is an existing file"),
        ("pyproject.toml", "is an existing file"),
        ("docs", "a folder holding files git tracks (first: docs/index.md)"),
        ("checks", "a folder holding the project's tests (first: checks/test_more.py)"),
        ("spec/out", "a folder pytest collects tests from (testpaths)"),
    ],
)
def test_out_that_would_damage_the_repository_is_refused_before_anything_runs(
    out: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = project(
        tmp_path / "p",
        {"pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests", "spec"]\n'},
    )
    write_project(repo / "checks", {"test_more.py": "def test_more():\n    pass\n"})  # untracked: enough
    before = snapshot(repo)

    code = main(["fix", str(repo), "--out", str(repo / out)])  # not --quiet: every step would print a line

    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    assert err.count("\n") == 1 and err.startswith("selfix: error: --out ")  # refused before any step ran
    assert expected in err
    assert snapshot(repo) == before, "nothing written, .git/info/exclude included"


def test_a_relative_out_is_read_against_the_current_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = project(tmp_path / "p")
    monkeypatch.chdir(repo)
    assert main(["fix", ".", "--out", "tests", "--quiet"]) == ExitCode.BAD_INPUT
    assert "test folder 'tests'" in capsys.readouterr().err


def test_out_in_a_monorepo_folder_holding_tracked_files_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The project is a folder of a larger checkout: ``..`` holds the checkout's tracked files."""
    top = project(tmp_path / "mono", {"pkg/calc.py": "def add(a, b):\n    return a - b\n"})
    assert main(["fix", str(top / "pkg"), "--out", str(top / "docs"), "--quiet"]) == ExitCode.BAD_INPUT
    assert "files git tracks (first: docs/index.md)" in capsys.readouterr().err
    assert not (top / "pkg" / ".selfix").exists()


@pytest.mark.slow
def test_selfix_leaves_git_exclude_alone_and_keeps_its_own_folder_out_of_git(tmp_path: Path) -> None:
    repo = project(tmp_path / "p")
    exclude = repo / ".git" / "info" / "exclude"
    exclude_before = exclude.read_bytes()

    code = main(["fix", str(repo), "--out", str(repo / "selfix-out"), "--quiet", "--test-timeout", "30"])

    assert code in (ExitCode.HEALED, ExitCode.NOT_HEALED)
    assert (repo / "selfix-out" / "trace.jsonl").is_file(), "the heal ran"
    assert exclude.read_bytes() == exclude_before
    assert (repo / "selfix-out" / "report.md").is_file()
    assert (repo / "selfix-out" / ".gitignore").read_text() == GITIGNORE
    assert git(repo, "status", "--porcelain") == ""  # the output folder keeps itself out
    # A new test file is still seen by `git add -A`: nothing hides the project's folders.
    (repo / "tests" / "test_new.py").write_text("def test_new():\n    pass\n")
    git(repo, "add", "-A")
    assert git(repo, "status", "--porcelain").splitlines() == ["A  tests/test_new.py"]


@pytest.mark.slow
def test_an_existing_folder_of_the_user_gets_no_gitignore(tmp_path: Path) -> None:
    """A folder that existed is the user's (untracked, not a test folder): reports land in it, nothing else."""
    repo = project(tmp_path / "p")
    (repo / "notes").mkdir()
    (repo / "notes" / "todo.txt").write_text("mine\n")
    code = main(["fix", str(repo), "--out", str(repo / "notes"), "--quiet", "--test-timeout", "30"])
    assert code in (ExitCode.HEALED, ExitCode.NOT_HEALED)
    assert (repo / "notes" / "report.md").is_file() and (repo / "notes" / "todo.txt").read_text() == "mine\n"
    assert not (repo / "notes" / ".gitignore").exists()


@pytest.mark.parametrize("setup", ["v2", "v4", "split", "uncommitted", "worktree"])
def test_the_index_reader_agrees_with_git_ls_files(setup: str, tmp_path: Path) -> None:
    files = {
        "a.py": "1\n",
        "pkg/deep/er/module_with_a_rather_long_name.py": "2\n",
        "pkg/deep/er/module_with_a_rather_long_name_too.py": "3\n",
        "pkg/b.txt": "4\n",
        "tests/test_x.py": "5\n",
        "ünï/cödé.py": "6\n",
    }
    repo = project(tmp_path / "p", files, commit=setup != "uncommitted")
    if setup == "uncommitted":
        git(repo, "add", "calc.py", "pkg")
    if setup == "v4":
        git(repo, "update-index", "--index-version", "4")
    if setup == "split":
        git(repo, "update-index", "--split-index")
        (repo / "late.py").write_text("7\n")
        git(repo, "add", "late.py")
    where = repo
    if setup == "worktree":
        where = tmp_path / "linked"
        git(repo, "worktree", "add", "-q", str(where))
    checkout = find_checkout(where / "pkg")
    assert checkout is not None and checkout.root == where.resolve()
    expected = git(where, "-c", "core.quotepath=off", "ls-files").splitlines()
    assert sorted(tracked_paths(checkout.git_dir)) == sorted(expected)
