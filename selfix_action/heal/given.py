"""Verify a patch someone else wrote (a coding agent's, a developer's) with the heal's own gate.

``verify_patch`` is ``heal()`` with one engine swapped in: ``GivenPatch``, whose one hypothesis is "the given
patch" and whose one candidate is that patch (and whose QA test, if given, is the reproduction test). So the
given patch goes through exactly what every engine's candidates go through: the failure reproduced in the
sandbox (flaky tests left out), the protected-path refusal and static sanity, the QA test on the unpatched code,
F2P then the guarding P2P tests, minimization, the whole-suite confirmation and the confidence rule with its
reasons. Nothing is verified here a second time; this module only builds the engine and reads the diff.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TextIO

from selfix_action.errors import InputError
from selfix_action.heal.pipeline import HealContext, HealOutcome, heal, heal_in_sandbox
from selfix_action.heal.request import HealRequest
from selfix_action.repair.localize import enclosing_function, function_spans
from selfix_action.repair.loop import HealResult
from selfix_action.repair.patches import DiffError, apply_unified_diff, hunks
from selfix_action.repair.paths import protected_reason
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.report import Confidence, Usage
from selfix_action.repair.review import Review, ReviewRequest
from selfix_action.repair.values import (
    CandidatePatch,
    Evidence,
    Hypothesis,
    Location,
    PlanChange,
    QATest,
    Verification,
)

GIVEN_ID = "given"
QA_FILE = "test_given_qa.py"


def read_in_repo(repo: Path) -> Callable[[str], str | None]:
    """``read(path)`` for ``apply_unified_diff``: a file's text under ``repo``, None when there is none; a path
    outside the repository (absolute, ``..``, or through a symbolic link that leaves it) is bad input."""
    root = repo.resolve()

    def read(path: str) -> str | None:
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts:
            raise InputError(f"{path}: outside the repository")
        target = (root / pure).resolve()
        if not target.is_relative_to(root):
            raise InputError(f"{path}: outside the repository (through a symbolic link)")
        if not target.exists():
            return None
        if not target.is_file():
            raise InputError(f"{path}: not a file")
        try:
            return target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot be read as UTF-8 text: {exc}") from exc

    return read


def patch_files(request: HealRequest, diff: str) -> tuple[dict[str, str], dict[str, str]]:
    """The new texts of the files ``diff`` changes in ``request``'s repository and their current texts; bad input
    (``InputError``) when it does not apply, or touches a test, a CI or build file or a path outside the
    repository (``repair.paths.protected_reason``, the same rule every engine's patches are held to)."""
    read = read_in_repo(request.repo)
    try:
        files = apply_unified_diff(diff, read)
    except DiffError as exc:
        raise InputError(f"the diff does not apply: {exc}") from exc
    refused = [(p, why) for p in files if (why := protected_reason(p, request.loop.protected_paths))]
    if refused:
        listed = "; ".join(f"{path} ({why})" for path, why in refused)
        raise InputError(f"the diff edits files selfix never edits: {listed}")
    originals = {path: text for path in files if (text := read(path)) is not None}
    files = {path: text for path, text in files.items() if originals.get(path) != text}
    if not files:
        raise InputError("the diff changes nothing")
    return files, originals


class GivenPatch:
    """An engine of one hypothesis and one candidate: the patch it was given (and its QA test, if any)."""

    name = "given"

    def __init__(self, files: Mapping[str, str], originals: Mapping[str, str], qa: QATest | None = None) -> None:
        self.files = dict(files)
        self.originals = dict(originals)
        self.qa = qa
        self.locations = self._locations()  # where the patch edits: the hypothesis' places, once

    @property
    def independent_candidates(self) -> bool:
        return False  # no alternatives to walk: there is one candidate

    def usage(self) -> Usage:
        return Usage()

    def _locations(self) -> list[Location]:
        places: list[Location] = []
        for hunk in hunks(self.originals, self.files):
            lines = tuple(range(hunk.original_lines[0], hunk.original_lines[1] + 1))
            span = enclosing_function(function_spans(hunk.path, self.originals.get(hunk.path, "")), lines[0])
            places.append(Location(file=hunk.path, symbol=span.name if span else "", lines=lines))
        return places

    def hypotheses(self, evidence: Evidence, sandbox: Sandbox, limit: int) -> list[Hypothesis]:
        first, *also = self.locations
        return [
            Hypothesis(
                id=GIVEN_ID,
                rank=1,
                title="the given patch",
                confidence=1.0,
                file=first.file,
                symbol=first.symbol,
                lines=first.lines,
                also=tuple(also),
            )
        ]

    def qa_test(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, feedback: str = "", disputed: str = ""
    ) -> QATest | None:
        # a broken or disputed QA test is not asked for twice: the F2P tests serve
        return None if feedback or disputed else self.qa

    def review(self, request: ReviewRequest) -> Review | None:
        return None  # the given patch is verified, not reviewed

    def accepts(self, patch: CandidatePatch, confidence: Confidence | None) -> bool:
        return True

    def candidates(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, history: Sequence[Verification]
    ) -> Iterator[CandidatePatch]:
        if history:
            return  # one patch, one verdict
        first = self.locations[0]
        yield CandidatePatch(
            id=GIVEN_ID,
            hypothesis_id=GIVEN_ID,
            description=f"the given patch ({', '.join(sorted(self.files))})",
            template=GIVEN_ID,
            files=self.files,
            line=first.lines[0],
        )

    def revise(self, hypothesis: Hypothesis, ahead: Sequence[Hypothesis]) -> PlanChange:
        return PlanChange()

    def settle(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, disagreements: str) -> QATest | None:
        return None

    def broaden(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, diff: str, review: Review
    ) -> CandidatePatch | None:
        return None  # the user's own patch is checked, not rewritten

    def second_patch(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> CandidatePatch | None:
        return None  # the user's own patch: nothing to compare it with


def qa_test(source: str | None) -> QATest | None:
    """The caller's reproduction test, run from the sandbox's scratch test folder (``repair.paths.QA_TEST_DIR``)."""
    if source is None or not source.strip():
        return None
    return QATest(path=QA_FILE, source=source)


def verify_patch(
    request: HealRequest,
    diff: str,
    *,
    qa_source: str | None = None,
    progress: TextIO | None = None,
    warn: Callable[[str], None] | None = None,
) -> HealOutcome:
    """Verify ``diff`` on ``request``'s failing tests as the heal verifies its own candidates (``heal()`` with the
    ``GivenPatch`` engine): accepted when the outcome is healed (``HealOutcome.healed``); the report says why
    not otherwise (``report.hypotheses[0].rejections``), and carries the minimized patch and its confidence."""
    files, originals = patch_files(request, diff)
    engine = GivenPatch(files, originals, qa_test(qa_source))
    loop = request.loop.model_copy(update={"max_hypotheses": 1})

    def healer(context: HealContext) -> HealResult:
        return heal_in_sandbox(dataclasses.replace(context, engine=engine))

    return heal(dataclasses.replace(request, loop=loop), progress=progress, warn=warn, healer=healer)


__all__ = ["GivenPatch", "patch_files", "qa_test", "read_in_repo", "verify_patch"]
