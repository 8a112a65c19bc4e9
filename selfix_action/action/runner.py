"""``selfix action``: one run of the GitHub Action, from the event to a PR, a comment, or a quiet skip.

The layers, each in its own module:

- ``events``: the event payload -> a trigger (or a reason to skip);
- ``locate``: the trigger -> the failing commit checked out, its pull request, the JUnit reports;
- ``request`` + ``selfix_action.heal``: the settings -> one ``HealRequest`` -> the ``HealOutcome`` (the same
  pipeline as ``selfix fix``: trace, memory of past fixes, report files, view.html);
- ``policy``: outcome + settings -> a ``PublishPlan`` value (mode, branch, labels, texts); pure;
- ``publisher``: carries the plan out, the only code that pushes or writes to GitHub;
- ``render`` and ``log``: PR body, comments, job summary; log lines, annotations and step outputs.

``ActionSteps`` holds the pieces one run shares; ``run_action_steps`` composes them for the full action, and
``split.py`` composes the same pieces for ``selfix heal`` and ``selfix publish``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfix_action.action.api import Api
from selfix_action.action.events import (
    Command,
    CommentTrigger,
    DispatchTrigger,
    Skip,
    Trigger,
    load_payload,
    parse_event,
)
from selfix_action.action.locate import Locator
from selfix_action.action.log import GroupedProgress, Log, step_annotations, write_summary
from selfix_action.action.publisher import Publisher
from selfix_action.action.settings import Settings
from selfix_action.ci.gitops import Git, fingerprint, token_header
from selfix_action.ci.request import heal_request, read_from_error_file
from selfix_action.errors import SelfixError
from selfix_action.github.client import WRITE_PERMISSIONS
from selfix_action.heal import Healer, HealOutcome, heal, heal_in_sandbox
from selfix_action.heal.error_input import read_error_text
from selfix_action.publish import render
from selfix_action.publish.policy import Target, plan_escalation, plan_fix, plan_nothing
from selfix_action.repair.report import HealReport, render_markdown
from selfix_action.tracebacks import ReportedError


@dataclass
class ActionOutcome:
    status: str
    pr_url: str = ""
    patch_path: str = ""
    report_path: str = ""
    cost_usd: float = 0.0
    tokens: int = 0
    confidence: str = ""  # high, medium or low for a verified patch; "" otherwise
    publish_action: str = ""  # what the plan did: pr, draft_pr, commit, suggest, report, escalate, nothing
    publish_reason: str = ""  # and why, e.g. "medium confidence: draft PR (pr_confidence=high)"
    notes: list[str] = field(default_factory=list)

    def outputs(self) -> dict[str, str]:
        return {
            "status": self.status,
            "pr_url": self.pr_url,
            "patch_path": self.patch_path,
            "report_path": self.report_path,
            "cost_usd": f"{self.cost_usd:.4f}",
            "tokens": str(self.tokens),
            "confidence": self.confidence,
            "publish_action": self.publish_action,
            "publish_reason": self.publish_reason,
        }

    @classmethod
    def of(cls, status: str, healed: HealOutcome) -> ActionOutcome:
        paths = healed.paths
        return cls(
            status,
            report_path=str(paths.report_md) if paths else "",
            patch_path=str(paths.patch or "") if paths else "",
            cost_usd=render.cost_usd(healed.report),
            tokens=render.tokens(healed.report),
            confidence=render.confidence_output(healed.report),
        )


class ActionSteps:
    """The pieces of one action run: settings, log, API, git, locator, publisher and the heal."""

    def __init__(self, settings: Settings, env: Mapping[str, str], log: Log, *, healer: Healer | None = None) -> None:
        self.settings = settings
        self.env = env
        self.log = log
        self.healer = healer or heal_in_sandbox
        self.api = Api(settings)
        token = settings.github_token.get_secret_value()
        self.git = Git(
            settings.workspace, env=env, token_credential=token_header(settings.server_url, token) if token else None
        )
        self.locator = Locator(settings, self.api, self.git, log)
        self.publisher = Publisher(settings, self.api, self.git, log)

    @contextmanager
    def credentials_taken(self) -> Iterator[None]:
        """The checkout's token out of .git/config while this run works (project code runs meanwhile); back
        afterwards, for the workflow's later steps. A .git/config changed meanwhile is restored and reported."""
        taken = self.git.take_credentials()  # 0 without a .git folder (a plain workspace)
        if taken:
            self.log.line(f"selfix: holding the checkout's credential outside .git/config ({taken} entry)")
        try:
            yield
        finally:
            try:
                self.git.restore_credentials()
            except SelfixError as exc:
                self.log.note("::warning::selfix: could not put the checkout's credential back: ", str(exc))
            for message in self.git.warnings:
                self.log.note("::warning::selfix: ", message)

    def trigger(self) -> tuple[Trigger | Skip, dict[str, Any]]:
        payload = load_payload(self.settings.event_path)
        trigger = parse_event(self.settings, payload)
        if isinstance(trigger, Skip):
            self.log.line(f"selfix: skipped: {trigger.reason}")
        else:
            self.log.line(f"selfix: triggered by {trigger.name}")
        return trigger, payload

    def heal(self, junit: tuple[Path, ...], hint: str, reported: ReportedError | None = None) -> HealOutcome:
        """The heal pipeline (``setup_command`` included); warnings become ``::warning::`` lines. ``reported``: a
        production error to heal instead of the JUnit reports' failing tests."""
        request = heal_request(self.settings, self.env, junit, hint, reported_error=reported)
        warnings: list[str] = []
        # The progress lines go to the log as the heal runs (a heal can take many minutes), one group per step;
        # they quote test output, so workflow commands are stopped meanwhile and the warnings are emitted after.
        try:
            with GroupedProgress(self.log) as progress:
                outcome = heal(
                    request,
                    progress=progress,  # type: ignore[arg-type]  # a line-oriented text stream
                    warn=warnings.append,
                    setup_output=progress.setup_line,
                    healer=self.healer,
                )
        finally:
            for message in warnings:
                self.log.note("::warning::selfix: ", message)
        if outcome.memory_recorded:
            self.log.line(f"selfix: recorded this run in the memory ({request.memory_path})")
        return outcome

    def summary(self, status: str, healed: HealOutcome, facts: list[str]) -> None:
        """The job summary: the report, or only why nothing ran (the JUnit reports show no failing test)."""
        if healed.paths is None:
            body = render.summary_markdown(status, healed.report.explanation + ".\n", facts)
        else:
            body = render.job_summary(status, healed.report, render_markdown(healed.report), facts)
        write_summary(self.settings.summary_path, body)


def hint_of(trigger: Trigger) -> str:
    if isinstance(trigger, DispatchTrigger):
        return trigger.description
    if isinstance(trigger, CommentTrigger):
        return trigger.text
    return ""


def authorized(steps: ActionSteps, trigger: CommentTrigger) -> tuple[bool, str]:
    """May this commenter run selfix? Bots only by exact name; people need write access (asked of the API)."""
    login = trigger.login
    settings = steps.settings
    # A "[bot]" suffix or Bot type is never trusted by itself: only exact names listed in allowed_bots.
    if login.endswith("[bot]") or trigger.user_type == "Bot":
        if login in settings.allowed_bots:
            return True, f"{login} is listed in allowed_bots"
        return False, f"{login} is a bot not listed in allowed_bots"
    if settings.allowed_users and login not in settings.allowed_users:
        return False, f"{login} is not listed in allowed_users"
    permission = steps.api.client.permission(login)
    if permission in WRITE_PERMISSIONS:
        return True, f"{login} has {permission} permission"
    return False, f"{login} has {permission} permission; write, maintain or admin is required"


def run_action_steps(steps: ActionSteps) -> ActionOutcome:
    """The full action: trigger -> (authorize) -> locate -> heal -> plan -> publish -> summary."""
    with steps.credentials_taken():
        return _run_action(steps)


def _run_action(steps: ActionSteps) -> ActionOutcome:
    trigger, payload = steps.trigger()
    if isinstance(trigger, Skip):
        return ActionOutcome("skipped", notes=[trigger.reason])
    default_branch = str((payload.get("repository") or {}).get("default_branch") or "")
    try:
        if isinstance(trigger, CommentTrigger):
            located = _on_comment(steps, trigger, default_branch)
            if isinstance(located, ActionOutcome):
                return located
            target, junit = located, tuple[Path, ...]()
        else:
            located_run = steps.locator.locate(trigger, default_branch, payload)
            if isinstance(located_run, Skip):
                steps.log.line(f"selfix: skipped: {located_run.reason}")
                return ActionOutcome("skipped", notes=[located_run.reason])
            target, junit = located_run
        return _heal_and_publish(steps, trigger, target, junit)
    except SelfixError as exc:
        steps.publisher.report_error(exc)
        raise


def _on_comment(steps: ActionSteps, trigger: CommentTrigger, default_branch: str) -> Target | ActionOutcome:
    ok, why = authorized(steps, trigger)
    publisher = steps.publisher
    if not ok:
        steps.log.line(f"selfix: refused: {why}")
        publisher.react(trigger.comment_id, "confused")
        return ActionOutcome("skipped", notes=[f"refused: {why}"])
    publisher.react(trigger.comment_id, "eyes")
    if trigger.command is Command.HELP:
        publisher.track(trigger.pull_number, render.HELP_TEXT)
        return ActionOutcome("skipped", notes=["help"])
    pull = steps.api.client.get_pull(trigger.pull_number)
    if pull.state != "open":
        publisher.track(trigger.pull_number, f"selfix: #{pull.number} is {pull.state}; nothing to do.")
        return ActionOutcome("skipped", notes=["pull request not open"])
    link = f" ([run]({steps.settings.run_url}))" if steps.settings.run_url else ""
    publisher.track(pull.number, f"## selfix\n\n:hourglass: working on `/selfix {trigger.command.value}`{link}")
    return steps.locator.for_pull(pull, default_branch)


def reported_error_of(steps: ActionSteps, trigger: Trigger) -> ReportedError | None:
    """The production error this run heals: a dispatch's ``error`` input (the text, as ``selfix serve`` sends it),
    else the ``from_error`` input's file in the workspace; None for a heal of failing tests."""
    if isinstance(trigger, DispatchTrigger) and trigger.error.strip():
        signal = f" (selfix serve signal {trigger.signal})" if trigger.signal else ""
        steps.log.line(f"selfix: healing the production error given to this workflow_dispatch run{signal}")
        return read_error_text(trigger.error, origin=f"the error sent to this workflow_dispatch run{signal}")
    if steps.settings.from_error:
        return read_from_error_file(steps.settings.from_error, steps.settings.workspace)
    return None


def _heal_and_publish(steps: ActionSteps, trigger: Trigger, target: Target, junit: tuple[Path, ...]) -> ActionOutcome:
    reported = reported_error_of(steps, trigger)
    healed = steps.heal(() if reported is not None else junit, hint_of(trigger), reported)
    report = healed.report
    if healed.paths is None:  # the JUnit reports show no failing test: nothing ran
        steps.log.line(f"selfix: {report.explanation}")
        steps.summary("nothing_to_heal", healed, [])
        return ActionOutcome("nothing_to_heal", notes=[report.explanation])
    fp = fingerprint(target.branch, report.f2p_tests)
    explain = isinstance(trigger, CommentTrigger) and trigger.command is Command.EXPLAIN
    status = healed.status
    if explain and status != "nothing_to_heal":
        status = "explained"  # a diagnosis comment, never a fix: not "healed", even if a patch held
    outcome = ActionOutcome.of(status, healed)
    for line in step_annotations(report):
        steps.log.command(line)
    return plan_and_publish(
        steps, outcome, report, target, fp, healed.result.files, explain=explain, fact=f"Trigger: {trigger.name}"
    )


def plan_and_publish(
    steps: ActionSteps,
    outcome: ActionOutcome,
    report: HealReport,
    target: Target,
    fp: str,
    files: dict[str, str] | None,
    *,
    explain: bool = False,
    fact: str,
    tracked: set[str] | None = None,
) -> ActionOutcome:
    """The publish tail of ``selfix action`` and ``selfix publish``: the plan for ``outcome.status`` (a fix PR, an
    escalation or diagnosis comment, or only a tracking comment's update), published, then the job summary with
    the facts (``fact``: how this run came to heal, the trigger or the bundle). ``tracked``: the files git tracks
    at ``target.sha``, when the caller has them already."""
    settings = steps.settings
    if outcome.status == "healed":
        tracked_files = tracked if tracked is not None else steps.git.tracked_files(target.sha)
        plan = plan_fix(
            settings, target, report, fp, tracked_files=tracked_files, can_publish=steps.publisher.can_publish
        )
    elif outcome.status in ("not_healed", "explained"):
        plan = plan_escalation(settings, report, fp, target, explain=explain)
    else:
        plan = plan_nothing(report, fp)
    with steps.log.group("selfix: publish"):
        published = steps.publisher.publish(plan, target, files)
    outcome.pr_url = published.pr_url
    outcome.notes += published.notes
    outcome.publish_action, outcome.publish_reason = plan.kind, plan.decision
    facts = [f"Published: {plan.decision}"] if plan.decision else []
    facts += [f"Pull request: {outcome.pr_url}"] if outcome.pr_url else []
    facts += render.isolation_lines(report)
    facts += [fact, f"Failing branch: `{target.branch}`", f"Fingerprint: `{fp}`", *outcome.notes]
    write_summary(settings.summary_path, render.job_summary(outcome.status, report, render_markdown(report), facts))
    return outcome
