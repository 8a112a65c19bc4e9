"""git for the action: fetch the failing commit, commit a verified patch, push it to ``origin`` safely.

Rules enforced here, whatever the caller asks: the fix branch is ``selfix/<fingerprint>``; never push to the base
or default branch; never force-push a branch selfix did not create (its tip must carry our trailer); pushes onto
an existing branch (``commit`` mode) are fast-forward only. Commits are built with a private index
(``git commit-tree``), so the user's working tree and index are never touched. Every git call is an argument
list with a timeout; branch names and refs are validated before they reach git.

selfix's own git is not steerable by the checkout: every command runs with the system and global config files
ignored and with hooks, ``core.fsmonitor``, credential helpers, askpass and ssh commands overridden (command-line
scope wins over the repository's ``.git/config``). ``take_credentials`` moves the checkout's token
(``http.<url>.extraheader``, written by actions/checkout; a remote URL's ``user:token@``, written by GitLab's
runner) out of ``.git/config`` before any project code runs; it is
then handed to network commands only, through their environment (not argv, which /proc shows to every uid), and
put back by ``restore_credentials``. Once taken, ``.git/config`` is compared with its snapshot before every
command: a change planted meanwhile is undone (and reported) before git reads it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from selfix_action.errors import SelfixError

BRANCH_PREFIX = "selfix/"
TRAILER = "Selfix-Fingerprint"
# The identity of every commit selfix makes: a run of a commit by it is selfix's own push, never healed again.
AUTHOR_NAME = "selfix"
AUTHOR_EMAIL = "selfix@users.noreply.github.com"
_SHA = re.compile(r"^[0-9a-f]{40}$")
_SAFE_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,200}$")
_UNSAFE_COMPONENT = re.compile(r"[^A-Za-z0-9._-]+")
# The user information of an HTTP(S) URL (https://user:token@host/...): a credential written into .git/config
# (an ssh URL's git@ is a user name, and stays).
_URL_USERINFO = re.compile(r"^(https?://)[^/@\s]+@", re.IGNORECASE)


class GitError(SelfixError):
    """A git command failed or a push was refused by selfix's own rules."""


class PushRefused(GitError):
    """Pushing would break a rule (protected branch, branch selfix did not create, fork, moved branch)."""


def fingerprint(target_branch: str, failing_tests: Iterable[str]) -> str:
    """A short, stable id for "these tests fail on this branch": same failure, same branch, same PR."""
    material = "\n".join([target_branch, *sorted(set(failing_tests))])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:12]


def sanitize_component(text: str, max_len: int = 60) -> str:
    """Make untrusted text safe as one branch-name component."""
    cleaned = _UNSAFE_COMPONENT.sub("-", text).strip(".-")
    cleaned = re.sub(r"\.{2,}", ".", cleaned)[:max_len].rstrip(".-")
    if cleaned.endswith(".lock"):
        cleaned = cleaned[: -len(".lock")]
    return cleaned or "fix"


def fix_branch(fp: str) -> str:
    return BRANCH_PREFIX + sanitize_component(fp)


def check_ref(name: str) -> str:
    """Refuse branch names that git would misread (options, ranges, reflog syntax) before they reach git."""
    if (
        not _SAFE_REF.match(name)
        or ".." in name
        or "//" in name
        or name.endswith((".", "/", ".lock"))
        or "/." in name
        or "@{" in name
    ):
        raise GitError(f"refusing unsafe branch name {name!r}")
    return name


def check_sha(sha: str) -> str:
    if not _SHA.match(sha):
        raise GitError(f"not a full commit SHA: {sha!r}")
    return sha


@dataclass(frozen=True)
class PushResult:
    branch: str
    sha: str
    pushed: bool  # False when the remote branch already held exactly this fix


# Repository config a planted .git/config (or a commit's tests) could use to run code in selfix's git, or to send
# the credential elsewhere; each is overridden for every command.
_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.untrackedCache", "false"),
    ("core.sshCommand", "ssh"),
    ("core.gitProxy", ""),
    ("core.askPass", ""),
    ("core.pager", "cat"),
    ("credential.helper", ""),
    ("protocol.ext.allow", "never"),
    ("diff.external", ""),
)
_NETWORK_COMMANDS = frozenset({"fetch", "ls-remote", "push", "pull", "clone"})


def token_header(server_url: str, token: str, *, user: str = "x-access-token") -> tuple[str, str]:
    """The ``http.<server>/.extraheader`` entry actions/checkout writes, for ``token``: how selfix's own git
    authenticates with the github_token input when the checkout left no credential (persist-credentials: false).
    GitLab takes a project access token the same way with any user name (``oauth2``). Passed per command through
    the environment, never written to .git/config nor put in a URL."""
    basic = base64.b64encode(f"{user}:{token}".encode()).decode()
    return f"http.{server_url.rstrip('/')}/.extraheader", f"AUTHORIZATION: basic {basic}"


class Git:
    def __init__(
        self,
        repo: Path,
        *,
        timeout: float = 120.0,
        env: Mapping[str, str] | None = None,
        token_credential: tuple[str, str] | None = None,
        remote: str = "origin",
    ) -> None:
        self.repo = repo.resolve()
        # Where fetches and pushes go: ``origin``, or a URL without credentials (the GitLab front end's: the
        # runner's origin URL carries the job token, which cannot push).
        self.remote = remote
        self.timeout = timeout
        self._credentials: list[tuple[str, str]] = []  # http.<url>.extraheader entries taken from .git/config
        # remote.<name>.url entries whose URL carried a credential (user:token@, as GitLab's runner writes the
        # job token into origin's URL), taken out of .git/config the same way: key -> the original values.
        self._url_credentials: dict[str, list[str]] = {}
        # The github_token input's header (token_header): used by network commands instead of the checkout's
        # credential, which may be another token (pushes made with an App token start CI; GITHUB_TOKEN's do not).
        self._token_credential = token_credential
        self._config_snapshot: bytes | None = None
        self.warnings: list[str] = []
        base = dict(env if env is not None else os.environ)
        # No prompts (a hang is worse than an error); identity for commits made by selfix.
        self._env = {
            **{k: v for k, v in base.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE")},
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": AUTHOR_NAME,
            "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
            "GIT_COMMITTER_NAME": AUTHOR_NAME,
            "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL,
        }
        self._env.setdefault("PATH", os.defpath)

    @property
    def _config_file(self) -> Path | None:
        config = self.repo / ".git" / "config"
        return config if (self.repo / ".git").is_dir() and not (self.repo / ".git").is_symlink() else None

    def _config_env(self, network: bool) -> dict[str, str]:
        """The overrides (and, for network commands, the credential) as command-scope config in the environment."""
        # safe.directory: inside the Docker action the workspace belongs to another uid.
        entries = [*_OVERRIDES, ("safe.directory", str(self.repo))]
        if network:
            entries += [self._token_credential] if self._token_credential else self._credentials
        env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_COUNT": str(len(entries))}
        for index, (key, value) in enumerate(entries):
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
        return env

    def _check_config(self) -> None:
        """Undo any change to .git/config since the credentials were taken, before git reads it."""
        config = self._config_file
        if self._config_snapshot is None or config is None:
            return
        try:
            current = config.read_bytes() if not config.is_symlink() else b""
        except OSError:
            current = b""
        if current != self._config_snapshot or config.is_symlink():
            config.unlink(missing_ok=True)
            config.write_bytes(self._config_snapshot)
            self.warnings.append("the workspace .git/config was changed while the project's code ran; restored")

    def take_credentials(self) -> int:
        """Move the checkout's ``http.<url>.extraheader`` entries out of .git/config (see the module docstring);
        returns how many. From now on, .git/config is kept as it is now."""
        if self._config_file is None:
            return 0
        try:
            listing = self.run("config", "--local", "--null", "--get-regexp", r"^http\..*\.extraheader$")
        except GitError:
            listing = ""  # exit 1: no such entry
        entries = []
        for item in listing.split("\0"):
            key, _, value = item.partition("\n")
            if key:
                entries.append((key, value))
        for key in dict.fromkeys(k for k, _ in entries):
            self.run("config", "--local", "--unset-all", key)
        self._credentials = entries
        urls = self._url_entries()
        for key, values in urls.items():
            self.run("config", "--local", "--unset-all", key)
            for value in values:
                self.run("config", "--local", "--add", key, _URL_USERINFO.sub(r"\1", value))
        self._url_credentials = urls
        config = self._config_file
        self._config_snapshot = config.read_bytes() if config is not None and config.is_file() else None
        return len(entries) + sum(len(values) for values in urls.values())

    def _url_entries(self) -> dict[str, list[str]]:
        """The remotes' URLs of .git/config, by key, of the keys one of whose URLs carries a credential."""
        try:
            listing = self.run("config", "--local", "--null", "--get-regexp", r"^remote\..*\.(push)?url$")
        except GitError:
            return {}  # exit 1: no remote
        found: dict[str, list[str]] = {}
        for item in listing.split("\0"):
            key, _, value = item.partition("\n")
            if key:
                found.setdefault(key, []).append(value)
        return {key: values for key, values in found.items() if any(_URL_USERINFO.match(v) for v in values)}

    def restore_credentials(self) -> None:
        """Put the taken entries back into .git/config, for the workflow's later steps."""
        self._check_config()
        self._config_snapshot = None
        entries, self._credentials = self._credentials, []
        for key, value in entries:
            self.run("config", "--local", "--add", key, value)
        urls, self._url_credentials = self._url_credentials, {}
        for key, values in urls.items():
            self.run("config", "--local", "--unset-all", key)
            for value in values:
                self.run("config", "--local", "--add", key, value)

    def run(self, *args: str, input_text: str | None = None, extra_env: Mapping[str, str] | None = None) -> str:
        self._check_config()
        argv = ["git", *args]
        try:
            proc = subprocess.run(
                argv,
                cwd=self.repo,
                input=input_text,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env={**self._env, **self._config_env(args[0] in _NETWORK_COMMANDS), **(extra_env or {})},
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise GitError(f"git {args[0]} timed out after {self.timeout:.0f}s") from exc
        except OSError as exc:
            raise GitError(f"cannot run git: {exc}") from exc
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise GitError(f"git {args[0]} failed: {detail[0][:300]}")
        return proc.stdout

    # -- reading --------------------------------------------------------------------------------------
    def head(self) -> str:
        return self.run("rev-parse", "HEAD").strip()

    def has_commit(self, sha: str) -> bool:
        try:
            self.run("cat-file", "-e", f"{check_sha(sha)}^{{commit}}")
        except GitError:
            return False
        return True

    def remote_branch_sha(self, branch: str) -> str | None:
        out = self.run("ls-remote", "--heads", self.remote, f"refs/heads/{check_ref(branch)}")
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            if ref == f"refs/heads/{branch}":
                return sha
        return None

    def ensure_commit(self, sha: str, *branches: str) -> None:
        """Make ``sha`` available locally, fetching it (or the branches that hold it) from origin."""
        check_sha(sha)
        if self.has_commit(sha):
            return
        try:
            self.run("fetch", "--no-tags", self.remote, sha)
        except GitError:
            for branch in branches:
                if branch:
                    try:
                        self.run("fetch", "--no-tags", self.remote, f"refs/heads/{check_ref(branch)}")
                    except GitError:
                        continue
        if not self.has_commit(sha):
            raise GitError(f"commit {sha[:12]} is not in the checkout and could not be fetched from origin")

    def is_clean(self) -> bool:
        return not self.run("status", "--porcelain", "--untracked-files=no").strip()

    def checkout_detached(self, sha: str) -> None:
        if self.head() == sha:
            return
        if not self.is_clean():
            raise GitError("the workspace has uncommitted changes; refusing to switch it to the failing commit")
        self.run("checkout", "--quiet", "--detach", check_sha(sha))

    def message(self, sha: str) -> str:
        return self.run("log", "-1", "--format=%B", check_sha(sha))

    def parents(self, sha: str) -> list[str]:
        return self.run("log", "-1", "--format=%P", check_sha(sha)).split()

    def tracked_files(self, sha: str) -> set[str]:
        """Every file path in the commit's tree (repo-relative, POSIX)."""
        out = self.run("ls-tree", "-r", "-z", "--name-only", check_sha(sha))
        return {name for name in out.split("\0") if name}

    def tree(self, sha: str) -> str:
        return self.run("rev-parse", f"{check_sha(sha)}^{{tree}}").strip()

    # -- writing --------------------------------------------------------------------------------------
    def commit_files(self, base_sha: str, files: Mapping[str, str], message: str) -> str:
        """A commit on top of ``base_sha`` with ``files`` replaced, built in a private index."""
        check_sha(base_sha)
        with tempfile.TemporaryDirectory(prefix="selfix-index-") as tmp:
            index_env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self.run("read-tree", base_sha, extra_env=index_env)
            for path, text in sorted(files.items()):
                if path.startswith(("/", "-")) or ".." in Path(path).parts:
                    raise GitError(f"refusing to commit a file outside the repository: {path!r}")
                listing = self.run("ls-tree", base_sha, "--", path).split()
                mode = listing[0] if listing else "100644"
                blob = self.run("hash-object", "-w", "--stdin", "--path", path, input_text=text).strip()
                self.run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", extra_env=index_env)
            tree = self.run("write-tree", extra_env=index_env).strip()
        return self.run("commit-tree", tree, "-p", base_sha, "-F", "-", input_text=message).strip()

    def push(self, sha: str, branch: str, *, lease: str | None = None) -> None:
        args = ["push", "--porcelain", self.remote, f"{check_sha(sha)}:refs/heads/{check_ref(branch)}"]
        if lease is not None:
            # Replace only the exact commit we inspected: a concurrent push by anyone makes this fail.
            args.insert(1, f"--force-with-lease=refs/heads/{branch}:{check_sha(lease)}")
        self.run(*args)


def with_trailer(message: str, fp: str) -> str:
    return f"{message.rstrip()}\n\n{TRAILER}: {fp}\n"


def carries_trailer(message: str) -> bool:
    """A commit message selfix wrote (its fingerprint trailer on a line of its own)."""
    return any(line.startswith(f"{TRAILER}: ") for line in message.splitlines())


def _holds_same_fix(git: Git, tip: str, base_sha: str, commit: str, fp: str) -> bool:
    """``tip`` (fetched) is selfix's commit of this very fix: on ``base_sha``, with our trailer, the same tree."""
    return (
        f"{TRAILER}: {fp}" in git.message(tip) and git.parents(tip) == [base_sha] and git.tree(tip) == git.tree(commit)
    )


def push_fix_branch(
    git: Git,
    *,
    fp: str,
    base_sha: str,
    files: Mapping[str, str],
    message: str,
    protected: Iterable[str],
) -> PushResult:
    """Commit the fix on ``selfix/<fp>`` (from ``base_sha``) and push it to origin."""
    branch = fix_branch(fp)
    if branch in set(protected):
        raise PushRefused(f"{branch} is a protected (base or default) branch")
    commit = git.commit_files(base_sha, files, with_trailer(message, fp))
    existing = git.remote_branch_sha(branch)
    if existing is None:
        git.push(commit, branch)
        return PushResult(branch, commit, pushed=True)
    git.run("fetch", "--no-tags", git.remote, f"refs/heads/{branch}")
    if f"{TRAILER}: {fp}" not in git.message(existing):
        raise PushRefused(f"{branch} exists on origin and was not created by selfix; not overwriting it")
    if _holds_same_fix(git, existing, base_sha, commit, fp):
        return PushResult(branch, existing, pushed=False)  # the same fix is already there
    git.push(commit, branch, lease=existing)
    return PushResult(branch, commit, pushed=True)


def push_onto_branch(
    git: Git,
    *,
    branch: str,
    base_sha: str,
    files: Mapping[str, str],
    message: str,
    fp: str,
    protected: Iterable[str],
) -> PushResult:
    """``commit`` mode: a fast-forward commit on the failing PR's own branch (never base/default). A rerun that
    finds this very fix already on top of the failing commit pushes nothing (``pushed=False``)."""
    check_ref(branch)
    if branch in set(protected):
        raise PushRefused(f"not pushing to {branch}: it is the base or default branch")
    commit = git.commit_files(base_sha, files, with_trailer(message, fp))
    tip = git.remote_branch_sha(branch)
    if tip is not None and tip != base_sha:
        git.run("fetch", "--no-tags", git.remote, f"refs/heads/{branch}")
        if _holds_same_fix(git, tip, base_sha, commit, fp):
            return PushResult(branch, tip, pushed=False)
    if tip != base_sha:
        raise PushRefused(f"{branch} moved since the failing run (now {str(tip)[:12]}); not pushing")
    git.push(commit, branch)  # no force: a fast-forward or nothing
    return PushResult(branch, commit, pushed=True)
