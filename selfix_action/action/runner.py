"""``selfix action``: one run of the GitHub Action, from the event to a PR, a comment, or a quiet skip.

Order of work: settings -> event -> (authorize a commenter) -> find the failing commit and its JUnit reports ->
heal with the ``selfix fix`` loop -> publish according to the mode -> job summary, annotations, outputs.

Like ``selfix fix``, every heal writes ``trace.jsonl`` (the trace schema of ``selfix_action.learn``), reads and
then updates the memory of past fixes (input ``memory_path``), and renders the trace as ``view.html`` beside
``report.md`` in the report folder that the example workflows upload.
"""

from __future__ import annotations

import fnmatch
import glob
import importlib
import io
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfix_action.action import publish
from selfix_action.action.events import (
    Command,
    CommentTrigger,
    DispatchTrigger,
    Skip,
    StepTrigger,
    Trigger,
    WorkflowRunTrigger,
    load_payload,
    parse_event,
)
from selfix_action.action.gitops import (
    Git,
    GitError,
    PushRefused,
    check_ref,
    fingerprint,
    push_fix_branch,
    push_onto_branch,
)
from selfix_action.action.publish import Log
from selfix_action.action.settings import Mode, Settings
from selfix_action.commands.fix_cmd import RunOutput, resolve_test_cmd
from selfix_action.engine.loop import HealResult, LoopConfig
from selfix_action.engine.paths import patch_violations
from selfix_action.engine.report import StopReason, render_markdown
from selfix_action.errors import InputError, SelfixError
from selfix_action.github.client import WRITE_PERMISSIONS, CommentInfo, GitHubClient, PullInfo, trusted_labels
from selfix_action.github.errors import ArtifactRefused, GitHubError
from selfix_action.heal import heal_repository
from selfix_action.junit import Outcome as CaseOutcome
from selfix_action.junit import parse_reports
from selfix_action.learn.hooks import attach_memory, learn_from_run, open_memory, outcome_fields, trace_header
from selfix_action.learn.memory import Memory
from selfix_action.learn.trace_schema import TraceError, read_trace
from selfix_action.learn.viewer import render_html
from selfix_action.offline.engine import OfflineEngine
from selfix_action.sandbox.isolation import IsolationConfig, detect_isolation
from selfix_action.sandbox.process import Limits

MAX_JUNIT_FILES = 200
REPORT_DIR = Path(".selfix") / "report"  # report.md, report.json, patch.diff, trace.jsonl, view.html
# Never handed to the project's setup command (the sandbox applies its own allowlist to test runs).
_SECRET_HINTS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "CREDENTIAL", "INPUT_", "ACTIONS_")


@dataclass(frozen=True)
class HealRequest:
    repo: Path
    junit: tuple[Path, ...]
    test_cmd: tuple[str, ...]
    hint: str
    settings: Settings
    env: Mapping[str, str]
    # Set by the runner: the trace.jsonl writer (trace(step, message, **data)) and the memory of past fixes.
    trace: Callable[..., None] | None = None
    memory: Memory | None = None


Healer = Callable[[HealRequest], HealResult]


@dataclass
class ActionOutcome:
    status: str
    pr_url: str = ""
    patch_path: str = ""
    report_path: str = ""
    cost_usd: float = 0.0
    tokens: int = 0
    notes: list[str] = field(default_factory=list)

    def outputs(self) -> dict[str, str]:
        return {
            "status": self.status,
            "pr_url": self.pr_url,
            "patch_path": self.patch_path,
            "report_path": self.report_path,
            "cost_usd": f"{self.cost_usd:.4f}",
            "tokens": str(self.tokens),
        }


@dataclass(frozen=True)
class Target:
    """The failing commit and where a fix goes."""

    sha: str
    branch: str  # the failing branch: the fix PR's base
    pull: PullInfo | None
    fork: bool
    default_branch: str


def build_engine(settings: Settings) -> Any:
    if settings.engine == "offline":
        return OfflineEngine()
    try:
        factory = importlib.import_module("selfix_action.llm.factory")
    except ImportError as exc:
        raise InputError(
            f"engine {settings.engine!r} needs the LLM engines (selfix_action.llm), which this build does not "
            "include; use engine: offline"
        ) from exc
    key = settings.anthropic_api_key if settings.engine == "anthropic" else settings.openai_api_key
    try:
        return factory.build_engine(
            settings.engine,
            model=settings.model or None,
            base_url=settings.openai_base_url or None,
            api_key=key.get_secret_value() or None,
            max_calls=0,  # <= 0: no cap; the dollar budget and the time limit bound the run
            max_tokens=0,
            max_cost_usd=settings.max_cost_usd,
            time_limit=settings.timeout_minutes * 60,
            prices=None,
            env={},  # keys come from the inputs only, never from the runner environment
            protected_paths=protected_patterns(settings),
            hypotheses=settings.max_attempts,
        )
    except TypeError as exc:
        raise InputError(f"cannot build the {settings.engine} engine: {exc}") from exc


def junit_sets(paths: Sequence[Path], log: Log) -> tuple[list[str], list[str]]:
    """F2P and P2P node ids from JUnit files; unreadable or hostile files are skipped with a line each."""
    report = parse_reports(list(paths))
    for error in report.errors:
        log.note(f"selfix: skipping JUnit file {publish.clean(Path(error.path).name, 100)}: ", error.reason)
    failing = [c.nodeid for c in report.cases if c.outcome in (CaseOutcome.FAILED, CaseOutcome.ERROR) and c.nodeid]
    passing = [c.nodeid for c in report.cases if c.outcome is CaseOutcome.PASSED and c.nodeid]
    return failing, passing


def default_healer(request: HealRequest) -> HealResult:
    """The ``selfix fix`` machinery: pytest sandbox + healing loop + the configured engine."""
    settings = request.settings
    failing, passing = junit_sets(request.junit, Log(io.StringIO())) if request.junit else ([], [])
    time_limit = settings.timeout_minutes * 60
    config = LoopConfig(
        max_hypotheses=settings.max_attempts,
        time_limit_seconds=time_limit,
        protected_paths=protected_patterns(settings),
        user_hint=request.hint,
    )
    limits = Limits(wall_seconds=min(120.0, time_limit))
    engine = build_engine(settings)
    if request.trace is not None and hasattr(engine, "trace"):
        engine.trace = request.trace  # every prompt and response goes into trace.jsonl, as with selfix fix
    if request.memory is not None and request.trace is not None:
        attach_memory(engine, request.memory, request.trace)
    return heal_repository(
        request.repo,
        request.test_cmd,
        engine,
        config,
        limits=limits,
        isolation=detect_isolation(isolation_config(settings)),  # the report and the job summary say which
        env_source=request.env,
        trace=request.trace,
        repo_label=settings.repository or ".",
        junit_failing=failing,
        junit_passing=passing,
    )


def no_links(root: Path, path: Path) -> bool:
    """False if ``path`` (inside ``root``) goes through a symbolic link below ``root``: a committed link must not
    make selfix write outside the workspace. Paths outside ``root`` (an absolute memory_path input) are the
    workflow author's choice and pass."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return True
    current = root
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            return False
    return True


def isolation_config(settings: Settings) -> IsolationConfig:
    """The ``isolation`` and ``require_isolation`` inputs; the sandbox uid stays IsolationConfig's (nobody)."""
    return IsolationConfig(mode=settings.isolation, require_isolation=settings.require_isolation)


def protected_patterns(settings: Settings) -> tuple[str, ...]:
    rule_paths = tuple(p for rule in settings.rules if rule.protected for p in rule.paths)
    return (*settings.protected_paths, *rule_paths)


def mode_for(settings: Settings, files: Sequence[str]) -> Mode:
    """The first per-path rule with a mode that matches a patched file wins; else the configured mode."""
    for rule in settings.rules:
        if rule.mode is not None and any(fnmatch.fnmatch(f, p) for f in files for p in rule.paths):
            return rule.mode
    return settings.mode


def rule_labels(settings: Settings, files: Sequence[str]) -> list[str]:
    labels = list(settings.labels)
    for rule in settings.rules:
        if any(fnmatch.fnmatch(f, p) for f in files for p in rule.paths):
            labels += rule.labels
    return trusted_labels(labels)


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not any(h in k.upper() for h in _SECRET_HINTS)}


class ActionRunner:
    def __init__(
        self,
        settings: Settings,
        env: Mapping[str, str],
        log: Log,
        *,
        healer: Healer | None = None,
    ) -> None:
        self.settings = settings
        self.env = env
        self.log = log
        self.healer = healer or default_healer
        self.git = Git(settings.workspace, env=env)
        self._client: GitHubClient | None = None
        self._tracking: CommentInfo | None = None
        # In the workspace, not RUNNER_TEMP: a container action's RUNNER_TEMP is not visible to the later
        # actions/upload-artifact step, the workspace is (the example workflows upload .selfix/report/).
        self.out_dir = settings.workspace / REPORT_DIR

    # -- entry -------------------------------------------------------------------------------------------
    def run(self) -> ActionOutcome:
        payload = load_payload(self.settings.event_path)
        trigger = parse_event(self.settings, payload)
        if isinstance(trigger, Skip):
            self.log.line(f"selfix: skipped: {trigger.reason}")
            return ActionOutcome("skipped", notes=[trigger.reason])
        self.log.line(f"selfix: triggered by {trigger.name}")
        default_branch = str((payload.get("repository") or {}).get("default_branch") or "")
        try:
            if isinstance(trigger, CommentTrigger):
                return self._on_comment(trigger, default_branch)
            target, junit = self._locate(trigger, default_branch, payload)
            return self._heal_and_publish(trigger, target, junit, hint=self._hint(trigger))
        except SelfixError as exc:
            self._report_error(exc)
            raise

    @property
    def client(self) -> GitHubClient:
        if self._client is None:
            token = self.settings.github_token.get_secret_value()
            if not token or not self.settings.repository:
                raise InputError("github_token and GITHUB_REPOSITORY are needed to talk to GitHub")
            self._client = GitHubClient(
                token,
                self.settings.repository,
                self.settings.api_url,
                write_interval=self.settings.api_write_interval,
                max_rate_limit_wait=self.settings.api_max_rate_limit_wait,
                backoff=self.settings.api_backoff,
            )
        return self._client

    @property
    def can_publish(self) -> bool:
        return bool(self.settings.github_token.get_secret_value() and self.settings.repository)

    @staticmethod
    def _hint(trigger: Trigger) -> str:
        if isinstance(trigger, DispatchTrigger):
            return trigger.description
        if isinstance(trigger, CommentTrigger):
            return trigger.text
        return ""

    # -- comment commands ----------------------------------------------------------------------------
    def authorized(self, trigger: CommentTrigger) -> tuple[bool, str]:
        login = trigger.login
        # A "[bot]" suffix or Bot type is never trusted by itself: only exact names listed in allowed_bots.
        if login.endswith("[bot]") or trigger.user_type == "Bot":
            if login in self.settings.allowed_bots:
                return True, f"{login} is listed in allowed_bots"
            return False, f"{login} is a bot not listed in allowed_bots"
        if self.settings.allowed_users and login not in self.settings.allowed_users:
            return False, f"{login} is not listed in allowed_users"
        permission = self.client.permission(login)
        if permission in WRITE_PERMISSIONS:
            return True, f"{login} has {permission} permission"
        return False, f"{login} has {permission} permission; write, maintain or admin is required"

    def _on_comment(self, trigger: CommentTrigger, default_branch: str) -> ActionOutcome:
        ok, why = self.authorized(trigger)
        if not ok:
            self.log.line(f"selfix: refused: {why}")
            self.client.react_to_comment(trigger.comment_id, "confused")
            return ActionOutcome("skipped", notes=[f"refused: {why}"])
        self.client.react_to_comment(trigger.comment_id, "eyes")
        marker = publish.comment_marker(trigger.pull_number)
        if trigger.command is Command.HELP:
            self._tracking = self.client.upsert_issue_comment(trigger.pull_number, marker, publish.HELP_TEXT)
            return ActionOutcome("skipped", notes=["help"])
        pull = self.client.get_pull(trigger.pull_number)
        if pull.state != "open":
            self._tracking = self.client.upsert_issue_comment(
                trigger.pull_number, marker, f"selfix: #{pull.number} is {pull.state}; nothing to do."
            )
            return ActionOutcome("skipped", notes=["pull request not open"])
        self._tracking = self.client.upsert_issue_comment(
            pull.number, marker, self._progress(f"working on `/selfix {trigger.command.value}`")
        )
        target = Target(
            sha=pull.head_sha,
            branch=pull.head_ref,
            pull=pull,
            fork=pull.head_repo != self.settings.repository,
            default_branch=default_branch,
        )
        self.git.ensure_commit(target.sha, target.branch if not target.fork else "")
        self.git.checkout_detached(target.sha)
        return self._heal_and_publish(trigger, target, (), hint=trigger.text)

    def _progress(self, text: str) -> str:
        link = f" ([run]({self.settings.run_url}))" if self.settings.run_url else ""
        return f"## selfix\n\n:hourglass: {text}{link}"

    # -- locating the failure ----------------------------------------------------------------------------
    def _locate(
        self, trigger: Trigger, default_branch: str, payload: dict[str, Any]
    ) -> tuple[Target, tuple[Path, ...]]:
        if isinstance(trigger, WorkflowRunTrigger):
            fork = bool(trigger.head_repo) and trigger.head_repo != self.settings.repository
            pull = self._pull_for(trigger.pull_numbers, trigger.head_sha)
            target = Target(trigger.head_sha, trigger.head_branch, pull, fork, default_branch)
            junit = self._artifact_junit(trigger.run_id)
            self.git.ensure_commit(target.sha, "" if fork else target.branch)
            self.git.checkout_detached(target.sha)
            return target, junit
        if isinstance(trigger, DispatchTrigger):
            branch = check_ref(trigger.ref.removeprefix("refs/heads/"))
            sha = self.git.remote_branch_sha(branch)
            if sha is None:
                raise InputError(f"workflow_dispatch ref {branch!r} is not a branch on origin")
            pull = self._pull_for((), sha)
            self.git.ensure_commit(sha, branch)
            self.git.checkout_detached(sha)
            return Target(sha, branch, pull, False, default_branch), self._local_junit()
        assert isinstance(trigger, StepTrigger)
        head = self.git.head()
        pr = payload.get("pull_request") if isinstance(payload.get("pull_request"), dict) else None
        fork = False
        notes_sha = head
        if pr is not None:
            head_repo = str(((pr.get("head") or {}).get("repo") or {}).get("full_name") or "")
            fork = head_repo != self.settings.repository
            pr_head = str((pr.get("head") or {}).get("sha") or "")
            if pr_head and pr_head != head:
                # The checkout is GitHub's merge commit: a patch based on it cannot go onto the PR branch.
                self.log.line("selfix: the checkout is a merge commit, not the PR head: report mode")
                fork = True
            notes_sha = pr_head or head
        pull = self._pull_for((int(pr["number"]),) if pr and isinstance(pr.get("number"), int) else (), notes_sha)
        return Target(head, trigger.branch, pull, fork, default_branch), self._local_junit()

    def _pull_for(self, numbers: Sequence[int], sha: str) -> PullInfo | None:
        if not self.can_publish:
            return None
        if numbers:
            return self.client.get_pull(numbers[0])
        pulls = self.client.pulls_for_commit(sha)
        return pulls[0] if pulls else None

    def _local_junit(self) -> tuple[Path, ...]:
        root = self.settings.workspace.resolve()
        found: list[Path] = []
        for pattern in self.settings.junit_paths:
            if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
                raise InputError(f"junit_paths must be relative to the workspace: {pattern!r}")
            for name in sorted(glob.glob(pattern, root_dir=root, recursive=True)):
                path = (root / name).resolve()
                # A link planted in the repo must not make us read files outside it.
                if path.is_file() and path.is_relative_to(root) and path not in found:
                    found.append(path)
        return tuple(found[:MAX_JUNIT_FILES])

    def _artifact_junit(self, run_id: int) -> tuple[Path, ...]:
        if not self.can_publish:
            return ()
        dest_root = Path(tempfile.mkdtemp(prefix="selfix-artifacts-", dir=self.settings.temp_dir))
        found: list[Path] = []
        with self.log.group("selfix: JUnit artifacts"):
            for artifact in self.client.run_artifacts(run_id, self.settings.junit_artifact):
                try:
                    files = self.client.download_artifact(artifact, dest_root / str(artifact.id))
                except ArtifactRefused as exc:
                    self.log.note("::warning::selfix refused artifact: ", str(exc))
                    continue
                xml = [f for f in files if f.suffix.lower() == ".xml"]
                self.log.note("artifact ", f"{artifact.name}: {len(xml)} XML file(s)")
                found += xml
        return tuple(found[:MAX_JUNIT_FILES])

    # -- heal --------------------------------------------------------------------------------------------
    def _setup(self) -> None:
        if not self.settings.setup_command:
            return
        try:
            argv = shlex.split(self.settings.setup_command)
        except ValueError as exc:
            raise InputError(f"cannot parse setup_command: {exc}") from exc
        with self.log.group("selfix: setup_command"):
            try:
                proc = subprocess.run(
                    argv,
                    cwd=self.settings.workspace,
                    env=child_env(self.env),
                    capture_output=True,
                    text=True,
                    timeout=self.settings.timeout_minutes * 60,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise InputError(f"setup_command failed to run: {exc}") from exc
            self.log.untrusted((proc.stdout + proc.stderr)[-20000:])
        if proc.returncode != 0:
            raise InputError(f"setup_command exited with {proc.returncode}")

    def _checked_out_dir(self) -> Path:
        """The report folder, refused if the checked-out commit plants a link on the way to it."""
        if not no_links(self.settings.workspace, self.out_dir):
            raise InputError(f"{REPORT_DIR} is a symbolic link in the checked-out commit; not writing through it")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        return self.out_dir

    def _heal(self, junit: tuple[Path, ...], hint: str) -> HealResult:
        """One heal, as ``selfix fix`` does it: trace.jsonl in the trace schema, the memory read before (by the
        engine) and updated after. The memory never fails a run: problems become warnings."""
        self._setup()
        test_cmd = resolve_test_cmd(self.settings.test_command or None, self.settings.workspace.resolve())
        trace_path = self._checked_out_dir() / "trace.jsonl"
        header = trace_header(self.settings.repository or ".", self.settings.engine)
        trace = RunOutput(trace_path, io.StringIO(), quiet=True, header=header)
        memory: Memory | None = None
        memory_file = self.settings.memory_file
        warned: list[str] = []

        def warn(message: str) -> None:
            warned.append(message)
            self.log.note("::warning::selfix: ", message)

        try:
            if memory_file is not None and not no_links(self.settings.workspace, memory_file):
                warn(f"memory disabled: {self.settings.memory_path} goes through a symbolic link in the workspace")
            elif memory_file is not None:
                memory = open_memory(memory_file, warn)
            request = HealRequest(
                self.settings.workspace.resolve(),
                junit,
                test_cmd,
                hint,
                self.settings,
                self.env,
                trace=trace,
                memory=memory,
            )
            with self.log.group("selfix: heal"):
                result = self.healer(request)
            trace("outcome", result.report.stop_reason.value, **outcome_fields(result.report))
            trace.close()
            if memory is not None:
                recorded = learn_from_run(memory, trace_path, result.report)
                for message in [m for m in memory.warnings if m not in warned]:
                    warn(message)
                if recorded:
                    self.log.line(f"selfix: recorded this run in the memory ({memory_file})")
            return result
        finally:
            trace.close()
            if memory is not None:
                memory.close()

    def _write_view(self) -> None:
        """view.html: the trace as one self-contained page, uploaded with the report (best effort)."""
        view = self.out_dir / "view.html"
        view.unlink(missing_ok=True)
        trace_path = self.out_dir / "trace.jsonl"
        if not trace_path.is_file():
            return
        try:
            view.write_text(render_html(read_trace(trace_path)), encoding="utf-8")
        except (TraceError, OSError) as exc:
            self.log.note("::warning::selfix: no view.html: ", str(exc))

    def _write_outputs(self, result: HealResult) -> tuple[Path, Path | None]:
        self._checked_out_dir()
        report = result.report
        (self.out_dir / "report.json").write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        report_md = self.out_dir / "report.md"
        report_md.write_text(render_markdown(report), encoding="utf-8")
        self._write_view()
        patch_path = self.out_dir / "patch.diff"
        patch_path.unlink(missing_ok=True)
        if report.patch is not None:
            patch_path.write_text(report.patch.diff, encoding="utf-8")
            return report_md, patch_path
        return report_md, None

    def _heal_and_publish(self, trigger: Trigger, target: Target, junit: tuple[Path, ...], hint: str) -> ActionOutcome:
        if junit:
            failing, _ = junit_sets(junit, self.log)
            if not failing:
                self.log.line("selfix: the JUnit reports show no failing test: nothing to heal")
                return self._finish_nothing(target, "the JUnit reports show no failing test")
        result = self._heal(junit, hint)
        report = result.report
        report_md, patch_path = self._write_outputs(result)
        fp = fingerprint(target.branch, report.f2p_tests)
        outcome = ActionOutcome(
            "healed" if report.stop_reason is StopReason.HEALED else "not_healed",
            report_path=str(report_md),
            patch_path=str(patch_path or ""),
            cost_usd=publish.cost_usd(report),
            tokens=publish.tokens(report),
        )
        explain = isinstance(trigger, CommentTrigger) and trigger.command is Command.EXPLAIN
        if report.stop_reason.exit_code == 3:
            outcome.status = "nothing_to_heal"
        elif explain:
            outcome.status = "explained"  # a diagnosis comment, never a fix: not "healed", even if a patch held
        for line in publish.annotations(report):
            self.log.command(line)
        with self.log.group("selfix: publish"):
            if outcome.status == "healed":
                self._publish_fix(target, result, fp, outcome)
            elif outcome.status in ("not_healed", "explained"):
                self._escalate(target, result, fp, explain)
            elif self._tracking is not None and target.pull is not None:
                self._tracking = self.client.upsert_issue_comment(
                    target.pull.number,
                    publish.comment_marker(target.pull.number),
                    f"## selfix: nothing to heal\n\n{publish.clean(report.explanation, 500)}.",
                    known=self._tracking,
                )
        extra = [f"Trigger: {trigger.name}", f"Failing branch: `{target.branch}`", f"Fingerprint: `{fp}`"]
        extra += publish.isolation_lines(report)
        if outcome.pr_url:
            extra.append(f"Pull request: {outcome.pr_url}")
        extra += outcome.notes
        publish.write_summary(
            self.settings.summary_path,
            publish.summary_markdown(outcome.status, render_markdown(report), extra),
        )
        return outcome

    def _finish_nothing(self, target: Target, why: str) -> ActionOutcome:
        publish.write_summary(self.settings.summary_path, publish.summary_markdown("nothing_to_heal", why + ".\n"))
        return ActionOutcome("nothing_to_heal", notes=[why])

    # -- publish -----------------------------------------------------------------------------------------
    def _comment(self, target: Target, body: str) -> None:
        if not self.can_publish:
            self.log.line("selfix: no github_token: not commenting")
            return
        if target.pull is not None:
            self._tracking = self.client.upsert_issue_comment(
                target.pull.number, publish.comment_marker(target.pull.number), body, known=self._tracking
            )
        else:
            self.client.upsert_commit_comment(target.sha, publish.comment_marker(target.sha), body)

    def _publish_fix(self, target: Target, result: HealResult, fp: str, outcome: ActionOutcome) -> None:
        report = result.report
        assert report.patch is not None and result.files is not None
        files = list(report.patch.files)
        # Checked again here, on the final diff, right before anything is committed.
        patterns = protected_patterns(self.settings)
        blocked = [f"{f} ({why})" for f, why in patch_violations(files, self.git.tracked_files(target.sha), patterns)]
        mode = mode_for(self.settings, files)
        if blocked:
            outcome.notes.append("patch touches protected paths: " + ", ".join(blocked))
            mode = Mode.REPORT
        if target.fork and mode is not Mode.REPORT:
            outcome.notes.append("the failing commit is on a fork: report mode, nothing pushed")
            mode = Mode.REPORT
        if mode in (Mode.COMMIT, Mode.SUGGEST) and target.pull is None:
            outcome.notes.append(f"{mode.value} mode needs a pull request; opening a fix PR instead")
            mode = Mode.PR
        if not self.can_publish:
            outcome.notes.append("no github_token: patch written, nothing published")
            return
        protected_branches = {b for b in (target.default_branch, target.branch) if b}
        message = publish.pr_title(report) + "\n\n" + report.patch.description
        run_link = self.settings.run_url
        try:
            if mode is Mode.PR:
                pushed = push_fix_branch(
                    self.git,
                    fp=fp,
                    base_sha=target.sha,
                    files=result.files,
                    message=message,
                    protected=protected_branches,
                )
                body = publish.pr_body(report, run_url=run_link, fp=fp)
                existing = self.client.find_open_pull(pushed.branch)
                if existing is not None:
                    pull = self.client.update_pull(existing.number, title=publish.pr_title(report), body=body)
                    outcome.notes.append(f"updated the existing fix PR #{pull.number}")
                else:
                    pull = self.client.create_pull(
                        base=target.branch,
                        head=pushed.branch,
                        title=publish.pr_title(report),
                        body=body,
                        draft=self.settings.draft,
                    )
                    self.client.add_labels(pull.number, rule_labels(self.settings, files))
                outcome.pr_url = pull.html_url
                if target.pull is not None:
                    self._comment(target, f"## selfix: fix proposed in #{pull.number}\n\n{publish.pr_title(report)}")
            elif mode is Mode.COMMIT:
                assert target.pull is not None
                pushed = push_onto_branch(
                    self.git,
                    branch=target.branch,
                    base_sha=target.sha,
                    files=result.files,
                    message=message,
                    fp=fp,
                    protected={target.default_branch, target.pull.base_ref},
                )
                outcome.pr_url = target.pull.html_url
                self._comment(target, f"## selfix: pushed a fix to `{target.branch}`\n\nCommit {pushed.sha[:12]}.")
            elif mode is Mode.SUGGEST:
                assert target.pull is not None
                suggestions = publish.suggestions_from_diff(report.patch.diff)
                try:
                    self.client.create_review(target.pull.number, target.sha, publish.pr_title(report), suggestions)
                    self._comment(target, "## selfix: fix posted as review suggestions\n\n" + publish.pr_title(report))
                except GitHubError as exc:
                    # GitHub only accepts suggestions on lines in the PR's diff; fall back to the patch itself.
                    outcome.notes.append(f"suggestions refused ({exc.status}); posted the patch as a comment")
                    self._comment(target, publish.pr_body(report, run_url=run_link, fp=fp))
                outcome.pr_url = target.pull.html_url
            else:
                self._comment(target, publish.pr_body(report, run_url=run_link, fp=fp))
        except PushRefused as exc:
            outcome.notes.append(f"not pushed: {exc}")
            self._comment(target, publish.pr_body(report, run_url=run_link, fp=fp) + f"\n\nNot pushed: {exc}")
        except GitError:
            raise

    def _escalate(self, target: Target, result: HealResult, fp: str, explain: bool) -> None:
        self._comment(
            target,
            publish.escalation_body(result.report, run_url=self.settings.run_url, fp=fp, explain_only=explain),
        )

    def _report_error(self, exc: SelfixError) -> None:
        """Best effort: say in the tracking comment that the run failed (never raise from here)."""
        if self._tracking is None or self._client is None:
            return
        try:
            number = int(self._tracking.body.split("selfix:tracking ", 1)[1].split(" ", 1)[0])
            self._client.upsert_issue_comment(
                number,
                publish.comment_marker(number),
                f"## selfix: error\n\n{publish.clean(str(exc), 500)}",
                known=self._tracking,
            )
        except (SelfixError, IndexError, ValueError):
            pass
