"""One ``selfix gitlab`` run: settings -> (skip) -> JUnit reports -> ``heal()`` -> plan -> publish -> outputs.

The heal is the one pipeline every front end uses (``selfix_action.heal.heal`` with the action's ``HealRequest``
for the options); the plan is ``publish.policy``'s and its texts ``publish.render``'s, the same as on GitHub; only
carrying the plan out (``publisher``) is GitLab's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from selfix_action.ci.gitops import AUTHOR_EMAIL, BRANCH_PREFIX, Git, fingerprint, token_header
from selfix_action.ci.request import heal_request
from selfix_action.gitlab.client import GitLabClient
from selfix_action.gitlab_ci.publisher import GitLabPublisher
from selfix_action.gitlab_ci.settings import GITLAB_OPTIONS_ADVICE, TOKEN_VARIABLE, GitLabSettings
from selfix_action.heal import Healer, HealOutcome, heal, heal_in_sandbox
from selfix_action.junit import find_reports
from selfix_action.publish import render
from selfix_action.publish.policy import Target, plan_escalation, plan_fix, plan_nothing

MAX_JUNIT_FILES = 200
# The escalation note's last line: GitLab has no comment commands; the note is edited, never posted twice.
AGAIN = (
    "Push a change to run again (or retry the pipeline). selfix edits this note when the same failure comes back "
    "here instead of posting another."
)
GIT_USER = "oauth2"  # GitLab takes a project access token over HTTPS basic auth with any user name


@dataclass
class GitLabOutcome:
    status: str  # healed, not_healed, nothing_to_heal, skipped, error
    mr_url: str = ""
    report_path: str = ""
    patch_path: str = ""
    confidence: str = ""
    publish_action: str = ""  # what the plan did: pr (a merge request), draft_pr, report, escalate, nothing
    publish_reason: str = ""  # and why, e.g. "medium confidence: draft MR (pr_confidence=high)"
    cost_usd: float = 0.0
    tokens: int = 0
    notes: list[str] = field(default_factory=list)

    def dotenv(self) -> str:
        """The job's outputs as a dotenv report (``artifacts: reports: dotenv``): later jobs read ``SELFIX_*``."""
        values = {
            "SELFIX_STATUS": self.status,
            "SELFIX_MR_URL": self.mr_url,
            "SELFIX_REPORT_PATH": self.report_path,
            "SELFIX_PATCH_PATH": self.patch_path,
            "SELFIX_CONFIDENCE": self.confidence,
            "SELFIX_PUBLISH_ACTION": self.publish_action,
            "SELFIX_PUBLISH_REASON": self.publish_reason,
            "SELFIX_COST_USD": f"{self.cost_usd:.4f}",
            "SELFIX_TOKENS": str(self.tokens),
        }
        return "".join(f"{key}={value.replace(chr(10), ' ')}\n" for key, value in values.items())


def skip_reason(settings: GitLabSettings) -> str:
    """Why this pipeline is left alone, or "" (pure)."""
    if settings.commit_tag:
        return f"a tag pipeline ({settings.commit_tag}): nothing to push a fix onto"
    branch = settings.failing_branch
    if branch.startswith(BRANCH_PREFIX):
        return f"{branch} is a selfix fix branch: its failures are not healed again"
    if AUTHOR_EMAIL in settings.commit_author:
        return "the failing commit is selfix's own"
    if settings.fork:
        return (
            f"merge request !{settings.mr_iid} comes from another project (a fork): selfix does not run a "
            "protected token on a fork's code"
        )
    if settings.mr_source_branch_sha and settings.mr_source_branch_sha != settings.sha:
        return (
            "a merged-results pipeline: the tested commit is not the source branch's head, so a fix could not "
            "be based on it"
        )
    if not branch:
        return "no branch (CI_COMMIT_REF_NAME is empty)"
    return ""


class GitLabRun:
    """The pieces of one run: settings, log stream, git (the token as a per-command header), the client."""

    def __init__(
        self, settings: GitLabSettings, env: Mapping[str, str], out: TextIO, *, healer: Healer | None = None
    ) -> None:
        self.settings = settings
        self.env = env
        self.out = out
        self.healer = healer or heal_in_sandbox
        token = settings.token.get_secret_value()
        self.git = Git(
            settings.workspace,
            env=env,
            token_credential=token_header(settings.server_url, token, user=GIT_USER) if token else None,
            remote=settings.push_url,
        )
        client = (
            GitLabClient(settings.server_url, settings.project_id, token, max_retries=settings.max_retries)
            if token
            else None
        )
        self.publisher = GitLabPublisher(settings, client, self.git, self.line)

    def line(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def run(self) -> GitLabOutcome:
        why = skip_reason(self.settings)
        if why:
            self.line(f"selfix: skipped: {why}")
            return GitLabOutcome("skipped", notes=[why])
        options = self.settings.options
        junit = find_reports(self.settings.workspace, options.junit_paths, MAX_JUNIT_FILES)
        self.line(f"selfix: {len(junit)} JUnit report(s) from the failed jobs' artifacts")
        # GitLab's runner writes the job token into origin's URL in .git/config; project code runs in the heal.
        taken = self.git.take_credentials()
        if taken:
            self.line(f"selfix: holding the checkout's credential outside .git/config ({taken} entry)")
        try:
            return self._heal_and_publish(junit)
        finally:
            self.git.restore_credentials()
            for message in self.git.warnings:
                self.line(f"selfix: warning: {message}")

    def _heal_and_publish(self, junit: tuple[Path, ...]) -> GitLabOutcome:
        options = self.settings.options
        healed = self._heal(junit)
        report = healed.report
        if healed.paths is None:  # the JUnit reports show no failing test: nothing ran
            self.line(f"selfix: {report.explanation}")
            return GitLabOutcome("nothing_to_heal", notes=[report.explanation])
        target = Target(
            sha=self.settings.sha,
            branch=self.settings.failing_branch,
            pull=None,  # a fix goes through a merge request of its own; notes go on the pipeline's MR
            fork=self.settings.fork,
            default_branch=self.settings.default_branch,
        )
        fp = fingerprint(target.branch, report.f2p_tests)
        outcome = GitLabOutcome(
            healed.status,
            report_path=str(healed.paths.report_md),
            patch_path=str(healed.paths.patch or ""),
            confidence=render.confidence_output(report),
            cost_usd=render.cost_usd(report),
            tokens=render.tokens(report),
        )
        if healed.status == "healed":
            plan = plan_fix(
                options,
                target,
                report,
                fp,
                tracked_files=self.git.tracked_files(target.sha),
                can_publish=self.publisher.can_publish,
                token_name=TOKEN_VARIABLE,
                change="MR",
                again=AGAIN,
            )
        elif healed.status == "not_healed":
            plan = plan_escalation(options, report, fp, target, explain=False, again=AGAIN)
        else:
            plan = plan_nothing(report, fp)
        published = self.publisher.publish(plan, target, healed.result.files)
        outcome.mr_url = published.mr_url
        outcome.notes += published.notes
        outcome.publish_action, outcome.publish_reason = plan.kind, plan.decision
        self.line(f"selfix: published: {plan.decision}")
        for note in outcome.notes:
            self.line(f"selfix: {note}")
        self.line(f"selfix: fingerprint {fp}, failing branch {target.branch}")
        return outcome

    def _heal(self, junit: tuple[Path, ...]) -> HealOutcome:
        request = heal_request(self.settings.options, self.env, junit, "", GITLAB_OPTIONS_ADVICE)
        warnings: list[str] = []
        outcome = heal(request, progress=self.out, warn=warnings.append, healer=self.healer)
        for message in warnings:
            self.line(f"selfix: warning: {message}")
        return outcome
