"""What to publish, decided from the heal's outcome and the settings alone: a ``PublishPlan`` value.

Pure: no git, no API. The publisher (``publisher.py``) carries a plan out; the tests check plans directly.
The rules: a patch that touches a protected path, or a failing commit on a fork, is only reported; ``commit``
and ``suggest`` need a pull request (else a fix PR); nothing is pushed to the default branch or, for a fix PR,
to the failing branch itself; without a token the patch is written and nothing is published. The patch's
confidence against ``pr_confidence`` (``bar.py``) decides how far it goes: at the bar, as the mode says; one level
below, a draft PR or review suggestions led by the evidence against it; further below, one escalation carrying the
patch, nothing pushed. Every plan says what it does and why in one line (``decision``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, TypedDict

from selfix_action.publish import render
from selfix_action.publish.bar import LEVELS, Treatment, treatment
from selfix_action.publish.values import Mode, PathRule, PullInfo, ReviewSuggestion, trusted_labels
from selfix_action.repair.paths import patch_violations
from selfix_action.repair.report import HealReport


class Options(Protocol):
    """The options a plan depends on (the GitHub Action's ``Settings`` and the GitLab front end's hold them)."""

    @property
    def rules(self) -> tuple[PathRule, ...]: ...
    @property
    def protected_paths(self) -> tuple[str, ...]: ...
    @property
    def mode(self) -> Mode: ...
    @property
    def labels(self) -> tuple[str, ...]: ...
    @property
    def draft(self) -> bool: ...
    @property
    def pr_confidence(self) -> str: ...
    @property
    def run_url(self) -> str: ...
    @property
    def ci_on_fix_branch(self) -> str: ...
    @property
    def opt_out_label(self) -> str: ...


@dataclass(frozen=True)
class Target:
    """The failing commit and where a fix goes."""

    sha: str
    branch: str  # the failing branch: the fix PR's base
    pull: PullInfo | None
    fork: bool
    default_branch: str
    workflow_id: int | None = None  # the failed workflow (a workflow_run trigger), to run again on a fix branch


class Action(StrEnum):
    OPEN_PR = "pr"  # push selfix/<fingerprint>, open (or update) a PR into the failing branch
    COMMIT = "commit"  # push the fix onto the PR's own branch
    SUGGEST = "suggest"  # review suggestions on the PR
    REPORT = "report"  # a comment with the verified patch, nothing pushed
    ESCALATE = "escalate"  # one comment: what failed and what was tried (or the diagnosis, for explain)
    NOTHING = "nothing"  # nothing to publish (no token, or nothing to heal)


@dataclass(frozen=True)
class PublishPlan:
    action: Action
    fingerprint: str
    title: str = ""
    body: str = ""  # PR body, or the comment to post
    commit_message: str = ""
    labels: tuple[str, ...] = ()
    draft: bool = False
    protected_branches: frozenset[str] = frozenset()  # never pushed to
    suggestions: tuple[ReviewSuggestion, ...] = ()
    fallback_body: str = ""  # posted when a push or the suggestions are refused
    ci_workflow_id: int | None = None  # dispatch this workflow on the fix branch (GITHUB_TOKEN pushes start none)
    notes: tuple[str, ...] = field(default_factory=tuple)
    decision: str = ""  # what the plan does and why, one line (the job summary's and the outputs')

    @property
    def kind(self) -> str:
        """The ``publish_action`` output: the action, with a draft PR told apart from a ready one."""
        return "draft_pr" if self.action is Action.OPEN_PR and self.draft else self.action.value


class _FixPlanText(TypedDict):
    """What every plan for a verified patch carries, whatever its action."""

    fingerprint: str
    title: str
    commit_message: str
    fallback_body: str
    notes: tuple[str, ...]
    decision: str


def opted_out(settings: Options, labels: Iterable[str], what: str) -> str:
    """Why selfix leaves ``what`` alone (it carries the ``opt_out_label``), else ""."""
    label = settings.opt_out_label
    return f"{what} has the {label!r} label (opt_out_label)" if label in set(labels) else ""


def protected_patterns(settings: Options) -> tuple[str, ...]:
    rule_paths = tuple(p for rule in settings.rules if rule.protected for p in rule.paths)
    return (*settings.protected_paths, *rule_paths)


def mode_for(settings: Options, files: Sequence[str]) -> Mode:
    """The first per-path rule with a mode that matches a patched file wins; else the configured mode."""
    for rule in settings.rules:
        if rule.mode is not None and any(fnmatch.fnmatch(f, p) for f in files for p in rule.paths):
            return rule.mode
    return settings.mode


def rule_labels(settings: Options, files: Sequence[str]) -> list[str]:
    labels = list(settings.labels)
    for rule in settings.rules:
        if any(fnmatch.fnmatch(f, p) for f in files for p in rule.paths):
            labels += rule.labels
    return trusted_labels(labels)


def plan_fix(
    settings: Options,
    target: Target,
    report: HealReport,
    fp: str,
    *,
    tracked_files: Iterable[str],
    can_publish: bool,
    token_name: str = "github_token",
    change: str = "PR",
    again: str = "",
) -> PublishPlan:
    """The plan for a verified patch. ``tracked_files``: the files of the failing commit (protected-path check,
    made again here on the final diff, right before anything is committed); ``token_name``: what the user sets to
    publish (the forge's token); ``change``: what the forge calls a change request ("PR", "MR"); ``again``: as for
    ``plan_escalation``.

    The confidence decides against ``pr_confidence`` (``bar.treatment``): at the bar, the mode's action; one level
    below, a draft or review suggestions, never a push onto the failing branch; further below, the escalation with
    the patch attached and nothing pushed."""
    assert report.patch is not None
    files = list(report.patch.files)
    notes: list[str] = []
    refused = patch_violations(files, set(tracked_files), protected_patterns(settings))
    mode = mode_for(settings, files)
    if refused:
        notes.append("patch touches protected paths: " + ", ".join(f"{f} ({why})" for f, why in refused))
        mode = Mode.REPORT
    if target.fork and mode is not Mode.REPORT:
        notes.append("the failing commit is on a fork: report mode, nothing pushed")
        mode = Mode.REPORT
    level = render.confidence_level(report)
    treated = treatment(level, settings.pr_confidence)
    if mode in (Mode.COMMIT, Mode.SUGGEST) and target.pull is None:
        notes.append(f"{mode.value} mode needs a pull request; opening a fix {change} instead")
        mode = Mode.PR
    not_pushed = treated is Treatment.DRAFT and mode is Mode.COMMIT
    if not_pushed:
        mode = Mode.SUGGEST  # the pull request's author takes the suggestions or not: nothing pushed onto it
    draft = mode is Mode.PR and (settings.draft or treated is Treatment.DRAFT)
    decision = _decision(
        level, settings.pr_confidence, treated, mode, draft=draft, not_pushed=not_pushed, change=change
    )
    if not can_publish:
        notes.append(f"no {token_name}: patch written, nothing published")
        return PublishPlan(
            Action.NOTHING, fp, notes=tuple(notes), decision=f"{decision}; not published: no {token_name}"
        )
    if treated is Treatment.HELD_BACK:
        return _held_back(settings, report, fp, target, decision=decision, notes=tuple(notes), again=again)
    title = render.pr_title(report)
    verified_body = render.pr_body(report, run_url=settings.run_url, fp=fp)
    common: _FixPlanText = {
        "fingerprint": fp,
        "title": title,
        "commit_message": title + "\n\n" + report.patch.description,
        "fallback_body": verified_body,
        "notes": tuple(notes),
        "decision": decision,
    }
    if mode is Mode.PR:
        return PublishPlan(
            Action.OPEN_PR,
            body=verified_body,
            labels=tuple(rule_labels(settings, files)),
            draft=draft,
            protected_branches=frozenset(b for b in (target.default_branch, target.branch) if b),
            ci_workflow_id=target.workflow_id if settings.ci_on_fix_branch == "dispatch" else None,
            **common,
        )
    if mode is Mode.COMMIT:
        assert target.pull is not None
        protected = frozenset(b for b in (target.default_branch, target.pull.base_ref) if b)
        return PublishPlan(Action.COMMIT, protected_branches=protected, **common)
    if mode is Mode.SUGGEST:
        suggestions = tuple(render.suggestions_from_diff(report.patch.diff))
        return PublishPlan(Action.SUGGEST, suggestions=suggestions, **common)
    return PublishPlan(Action.REPORT, body=verified_body, **common)


def _decision(
    level: str, pr_confidence: str, treated: Treatment, mode: Mode, *, draft: bool, not_pushed: bool, change: str
) -> str:
    """One line: what is done with the patch and the setting that made it so, e.g. "medium confidence: draft PR
    (pr_confidence=high)". ``not_pushed``: commit mode, turned into suggestions below the bar."""
    bar = f"pr_confidence={pr_confidence}"
    what = "confidence not assessed" if level not in LEVELS else f"{level} confidence"
    if treated is Treatment.HELD_BACK:
        return f"{what}: one escalation with the patch attached, nothing pushed ({bar})"
    if mode is Mode.PR:
        done = f"draft {change}" if draft else f"ready {change}"
        why = bar if treated is Treatment.DRAFT else "draft=true" if draft else bar
    elif not_pushed:
        done, why = "review suggestions, not pushed onto the branch", bar
    else:
        done, why = (
            {
                Mode.COMMIT: "pushed onto the branch",
                Mode.SUGGEST: "review suggestions",
                Mode.REPORT: "a comment with the patch, nothing pushed",
            }[mode],
            bar,
        )
    if level not in LEVELS:
        why = "an older report without a confidence: treated as at the bar"
    return f"{what}: {done} ({why})"


def _held_back(
    settings: Options,
    report: HealReport,
    fp: str,
    target: Target,
    *,
    decision: str,
    notes: tuple[str, ...],
    again: str,
) -> PublishPlan:
    """A verified patch below the draft level: the escalation (one comment on a pull request, else one issue per
    failure fingerprint, edited by later runs) with the patch attached."""
    on_pull = target.pull is not None
    body = render.held_back_body(
        report, run_url=settings.run_url, fp=fp, decision=decision, on_pull=on_pull, again=again
    )
    title = "" if on_pull else render.escalation_title(report, target.branch, held_back=True)
    return PublishPlan(Action.ESCALATE, fp, title=title, body=body, notes=notes, decision=decision)


def plan_escalation(
    settings: Options, report: HealReport, fp: str, target: Target, *, explain: bool, again: str = ""
) -> PublishPlan:
    """One message saying what failed and what was tried (``explain``: the diagnosis asked for). On a pull
    request it is the tracking comment, which offers the ``/selfix`` commands; without one (a push) it is one
    issue per failure fingerprint, edited by later runs of the same failure, so nothing is lost on a commit page
    nobody watches and nothing is repeated."""
    on_pull = target.pull is not None
    body = render.escalation_body(
        report, run_url=settings.run_url, fp=fp, explain_only=explain, on_pull=on_pull, again=again
    )
    title = "" if on_pull else render.escalation_title(report, target.branch)
    decision = "diagnosis: one comment" if explain else "not healed: one escalation"
    return PublishPlan(Action.ESCALATE, fp, title=title, body=body, decision=decision)


def plan_nothing(report: HealReport, fp: str) -> PublishPlan:
    """Nothing to heal: only an existing tracking comment (a ``/selfix`` command) is updated to say so."""
    return PublishPlan(
        Action.NOTHING,
        fp,
        body=f"## selfix: nothing to heal\n\n{render.clean(report.explanation, 500)}.",
        decision="nothing to heal: nothing published",
    )
