"""What the action says: PR title and body, the escalation comment, review suggestions, the help text and the job
summary's Markdown. Pure functions of the report; nothing here writes a file or calls an API.

Untrusted text (test output, tracebacks, comment text) goes through ``clean`` and into fenced blocks.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

from unidiff import PatchSet

from selfix_action.publish.bar import evidence_against
from selfix_action.publish.values import ReviewSuggestion
from selfix_action.repair.report import (
    HealReport,
    behaviour_lines,
    candidate_counts,
    fenced_lines,
    headline_facts,
    property_verdict,
    render_confidence,
    render_review,
    reported_error_lines,
    time_split,
)

MARKER_PREFIX = "<!-- selfix:"
SUMMARY_LIMIT = 1024 * 1024 - 16 * 1024  # GitHub rejects step summaries over 1 MiB; keep a margin
COMMENT_LIMIT = 60000  # GitHub's body limit is 65536 characters
_INVISIBLE = re.compile(r"[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def comment_marker(pull_or_sha: str | int) -> str:
    return f"{MARKER_PREFIX}tracking {pull_or_sha} -->"


def clean(text: str, limit: int = 4000) -> str:
    """Untrusted text for a Markdown code block: no HTML comments (could fake our marker), no invisible
    characters, no fence breakouts, bounded length."""
    text = _HTML_COMMENT.sub("", text)
    text = _INVISIBLE.sub("", text)
    text = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    text = text.replace("```", "`\u02cb`")
    if len(text) > limit:
        text = text[:limit] + "\n... (truncated)"
    return text


def _fenced(text: str, lang: str = "") -> str:
    return f"```{lang}\n{clean(text).rstrip()}\n```"


def fixed_tests(report: HealReport) -> list[str]:
    return [t for t in report.f2p_tests if report.tests_after.get(t) == "passed"] or list(report.f2p_tests)


def confidence_output(report: HealReport) -> str:
    """The step's ``confidence`` output: the verified patch's level, "" without a patch or an assessment."""
    return report.confidence.level if report.confidence is not None and report.patch is not None else ""


def confidence_level(report: HealReport) -> str:
    """high, medium or low; "not assessed" for a report without a confidence (an older bundle)."""
    return report.confidence.level if report.confidence is not None else "not assessed"


def pr_title(report: HealReport) -> str:
    tests = fixed_tests(report)
    names = ", ".join(t.rsplit("::", 1)[-1] for t in tests[:3])
    more = f" (+{len(tests) - 3} more)" if len(tests) > 3 else ""
    level = confidence_level(report)
    prefix = f"selfix ({level} confidence)" if level in ("medium", "low") else "selfix"
    return clean(f"{prefix}: fix {names}{more}", 200).replace("\n", " ")


def _usage_line(report: HealReport) -> str:
    cost = cost_usd(report)
    return f"Engine `{report.engine}`; tokens: {tokens(report)}; cost: ${cost:.4f}"


def cost_usd(report: HealReport) -> float:
    return report.usage.cost_usd


def tokens(report: HealReport) -> int:
    """Every token the heal's model calls counted: in, out, cached (what the token cap counts)."""
    return report.usage.tokens


def _hypotheses_section(report: HealReport) -> list[str]:
    out = []
    for record in report.hypotheses:
        hyp = record.hypothesis
        verdict = "held" if record.outcome.startswith("healed") else f"dropped: {record.outcome or 'not reached'}"
        out.append(f"- **{clean(hyp.title, 300)}** (`{hyp.file}` `{hyp.symbol}`), {verdict}")
        if not record.exposed:
            out.append(f"  - not exposed: {clean(record.exposure, 300)}")
        for rejection in record.rejections[:2]:
            out.append(
                f"  - `{rejection.candidate_id}` rejected at {rejection.stage.value}: {clean(rejection.detail, 300)}"
            )
        if record.property_test is not None:
            prop = record.property_test
            out.append(f"  - property test: {clean(property_verdict(prop), 500)}")
            if prop.counterexample:
                out += fenced_lines(clean(prop.counterexample, 800), indent="    ")
    return out or ["- none"]


def _tests_section(report: HealReport) -> list[str]:
    out = ["| test | before | after |", "|---|---|---|"]
    for test in list(report.f2p_tests)[:20]:
        before = report.tests_before.get(test, "failed")
        out.append(f"| `{clean(test, 200)}` | {before} | {report.tests_after.get(test, '-')} |")
    broken = [t for t in report.p2p_tests if report.tests_after and report.tests_after.get(t) not in ("passed", None)]
    out.append("")
    out.append(f"Pass-to-pass tests: {len(report.p2p_tests)}, broken by the patch: {len(broken)}.")
    return out


def _diff_summary(diff: str) -> list[str]:
    try:
        patch = PatchSet(diff)
    except Exception:  # unidiff raises its own parse errors; the full diff is shown anyway
        return []
    return [f"- `{f.path}`: +{f.added} -{f.removed}" for f in patch]


def pr_body(report: HealReport, *, run_url: str, fp: str) -> str:
    assert report.patch is not None
    root = next((r for r in report.hypotheses if r.hypothesis.id == report.patch.hypothesis_id), None)
    level = confidence_level(report)
    doubted = level in ("medium", "low")
    lines = [f"## selfix: a patch that passes, with {level} confidence" if doubted else "## selfix: verified fix", ""]
    lines += evidence_against_section(report)  # first: what a reviewer must weigh before the rest
    if report.confidence is not None:
        lines += [*(clean(line, 600) for line in render_confidence(report.confidence)), ""]
    else:
        lines += ["Patch confidence: **not assessed** (this report carries no plausibility assessment).", ""]
    if report.review is not None:
        lines += [*(clean(line, 600) for line in render_review(report.review)), ""]
    if root is not None:
        lines += [f"**Root cause:** {clean(root.hypothesis.title, 500)}", ""]
        if root.hypothesis.reasoning:
            lines += [clean(root.hypothesis.reasoning, 1500), ""]
    lines += [f"**Patch:** {clean(report.patch.description, 500)}", "", *_diff_summary(report.patch.diff), ""]
    lines += [clean(line, 1500) for line in reported_error_lines(report)]
    lines += _environment_section(report)
    lines += [
        "### Hypotheses",
        "",
        *_hypotheses_section(report),
        "",
        "### Tests",
        "",
        *_tests_section(report),
        "",
        *(clean(line, 2000) for line in behaviour_lines(report)),
    ]
    lines += [
        "",
        "<details><summary>Diff</summary>",
        "",
        _fenced(report.patch.diff, "diff"),
        "",
        "</details>",
        "",
    ]
    lines += ["### Verification", ""]
    if report.verification:
        lines.append(f"- **Checked:** {clean(report.verification, 500)}.")
    lines.append(
        f"- **Search:** candidate patches {candidate_counts(report)}, over {len(report.hypotheses)} "
        f"hypothesis(es); {report.test_runs} test runs."
    )
    lines += [f"- {line}" for line in isolation_lines(report)[:1] or ["Isolation: not reported"]]
    lines.append("")
    lines.append(_usage_line(report) + (f"; [CI run]({run_url})" if run_url else ""))
    lines += [
        "",
        f"Failure fingerprint `{fp}`. Review before merging: selfix verified the tests, not the intent.",
    ]
    return "\n".join(lines)[:COMMENT_LIMIT]


def evidence_against_section(report: HealReport) -> list[str]:
    """The reasons that kept the patch below ``high``, as the lead of any text that offers it ([] at high)."""
    against = evidence_against(report)
    if not against:
        return []
    marks = {"low": "lowers it to low", "medium": "caps it at medium"}
    return [
        "**Evidence against this patch** (read this before the rest):",
        "",
        *(f"- {clean(reason.text, 600)} ({marks[reason.level]})" for reason in against),
        "",
    ]


def _patch_section(report: HealReport) -> list[str]:
    """The root cause, the patch's description and the diff, collapsed (the escalation that carries a patch)."""
    assert report.patch is not None
    root = next((r for r in report.hypotheses if r.hypothesis.id == report.patch.hypothesis_id), None)
    lines = ["### The patch", ""]
    if root is not None:
        lines += [f"**Root cause (hypothesis):** {clean(root.hypothesis.title, 500)}", ""]
    lines += [f"**Patch:** {clean(report.patch.description, 500)}", "", *_diff_summary(report.patch.diff), ""]
    lines += ["<details><summary>The verified patch (diff)</summary>", "", _fenced(report.patch.diff, "diff")]
    return [*lines, "", "</details>", ""]


def held_back_body(
    report: HealReport, *, run_url: str, fp: str, decision: str, on_pull: bool = True, again: str = ""
) -> str:
    """The escalation of a verified patch below the bar for a draft (``decision``: what was done and why): the
    evidence against it first, the failure, then the patch collapsed; nothing was pushed. ``on_pull``, ``again``:
    as for ``escalation_body``."""
    assert report.patch is not None
    level = confidence_level(report)
    lines = [f"## selfix: a patch that passes, held back at {level} confidence", ""]
    lines += [
        f"**Not pushed:** {clean(decision, 300)}. The patch makes the failing tests pass without breaking the "
        "others selfix ran, but the evidence against it is strong: take it from below if it is the fix you want "
        "(`pr_confidence` sets the level at which such a patch is opened for review instead).",
        "",
    ]
    lines += evidence_against_section(report)
    lines += ["### What failed", "", *_failure_section(report), ""]
    lines += _patch_section(report)
    lines += ["### What was tried", "", *_hypotheses_section(report), ""]
    lines.append(_usage_line(report) + (f"; [CI run]({run_url})" if run_url else ""))
    lines += ["", f"Failure fingerprint `{fp}`. {again or _again(on_pull)}"]
    return "\n".join(lines)[:COMMENT_LIMIT]


def _again(on_pull: bool) -> str:
    """How to run selfix again where the forge's default applies (``on_pull``: the ``/selfix`` commands)."""
    if on_pull:
        return "Comment `/selfix retry` after a change, or `/selfix help`."
    return (
        "Push a change to run again. selfix edits this issue when the same failure comes back instead of "
        "opening another; close it once the failure is fixed."
    )


def _environment_section(report: HealReport) -> list[str]:
    """The engine's diagnosis that (some) failing tests fail because of the environment: named, never patched."""
    if not report.environment_problem:
        return []
    lines = ["### The environment, not the code", "", clean(report.environment_problem, 1500), ""]
    if report.environment_tests:
        shown = ", ".join(f"`{clean(t, 200)}`" for t in report.environment_tests[:5])
        more = f" and {len(report.environment_tests) - 5} more" if len(report.environment_tests) > 5 else ""
        lines += [f"These failing tests still fail and were left out: {shown}{more}.", ""]
    lines += [
        "No code was changed for it: fix the environment the tests run in (the workflow, a service, a setting).",
        "",
    ]
    return lines


def _headline_facts(report: HealReport) -> list[str]:
    """The LLM engine that could not be used, the report's tests missing here, what to try next: each its own
    paragraph (untrusted parts, test names and a server's message, cleaned)."""
    return [line for fact in headline_facts(report) for line in (clean(fact, 2000).replace("\n", " "), "")]


def _failure_section(report: HealReport) -> list[str]:
    out = []
    for failure in report.failures[:5]:
        out.append(f"- `{clean(failure.nodeid, 300)}`: {failure.status.value} {clean(failure.exc_type, 100)}")
        trace = "\n".join(f"{f.file}:{f.line} in {f.function}: {f.code.strip()}" for f in failure.frames[-6:])
        body = (failure.message.strip()[:1500] + ("\n\n" + trace if trace else "")).strip()
        if body:
            out += ["", _fenced(body), ""]
    return out or ["- no failure details"]


def escalation_body(
    report: HealReport,
    *,
    run_url: str,
    fp: str,
    explain_only: bool = False,
    on_pull: bool = True,
    again: str = "",
) -> str:
    """``again``: how to run selfix again, where the forge's default (``on_pull``: the ``/selfix`` commands, else
    the escalation issue) does not apply."""
    title = "selfix: diagnosis" if explain_only else "selfix could not heal this failure"
    lines = [f"## {title}", "", f"**{clean(report.explanation, 500)}.**", ""]
    lines += _headline_facts(report)
    lines += [clean(line, 1500) for line in reported_error_lines(report)]
    lines += _environment_section(report)
    lines += ["### What failed", "", *_failure_section(report), ""]
    if report.suspicious_functions:
        lines += ["### Where the bug probably is", ""]
        for func in report.suspicious_functions[:5]:
            lines.append(f"- `{func.file}:{func.start}-{func.end}` `{func.name}` (score {func.score:.2f})")
        lines.append("")
    lines += ["### What was tried", "", *_hypotheses_section(report), ""]
    for note in report.notes[:5]:
        lines.append(f"- Note: {clean(note, 300)}")
    lines.append(_usage_line(report) + (f"; [CI run]({run_url})" if run_url else ""))
    # /selfix commands are read from pull request comments only.
    lines += ["", f"Failure fingerprint `{fp}`. {again or _again(on_pull)}"]
    return "\n".join(lines)[:COMMENT_LIMIT]


def escalation_marker(fp: str) -> str:
    return f"{MARKER_PREFIX}escalation {fp} -->"


def review_marker_prefix(fp: str) -> str:
    """What every review selfix posts for failure ``fp`` carries, whatever its suggestions."""
    return f"{MARKER_PREFIX}review {fp} "


def review_marker(fp: str, suggestions: Sequence[ReviewSuggestion]) -> str:
    """The review's marker: the failure's fingerprint, then a digest of the suggestions it holds (a rerun with the
    same suggestions leaves the review alone)."""
    material = "\0".join(f"{s.path}\0{s.start_line}\0{s.line}\0{s.body}" for s in suggestions)
    return f"{review_marker_prefix(fp)}{hashlib.sha256(material.encode()).hexdigest()[:12]} -->"


def marker_line(body: str, prefix: str) -> str:
    """The line of ``body`` holding selfix's marker that starts with ``prefix`` ("" when none)."""
    return next((line.strip() for line in body.splitlines() if line.strip().startswith(prefix)), "")


def outdated_review_body(title: str, sha: str) -> str:
    return (
        f"{title}\n\n**Outdated:** selfix healed the same failure again (commit {sha[:12]}) with a different patch. "
        "GitHub takes no new suggestions into a submitted review, and selfix posts one review per failure, so the "
        "current patch is in selfix's comment on this pull request."
    )


def pr_cap_body(*, open_pulls: Sequence[int], cap: int, patch_body: str) -> str:
    """The comment posted instead of a new fix PR when ``max_open_prs`` are already open."""
    numbers = ", ".join(f"#{n}" for n in open_pulls[:10]) + (" ..." if len(open_pulls) > 10 else "")
    lines = [
        "## selfix: fix not opened as a pull request",
        "",
        f"{len(open_pulls)} selfix fix pull requests are open ({numbers}) and `max_open_prs` is {cap}, so this "
        "verified fix was not opened as another one. Merge or close one of them and run selfix again, or raise "
        f"the cap: `max_open_prs: {cap + 2}` under the selfix step's `with:` or in `.github/selfix.yml` "
        "(`0` turns the cap off). The fix, as the pull request would have said it:",
        "",
        "---",
        "",
    ]
    intro = "\n".join(lines)
    return intro + patch_body[: COMMENT_LIMIT - len(intro)]


def escalation_title(report: HealReport, branch: str, *, held_back: bool = False) -> str:
    """The title of the one issue of a failure without a pull request (``held_back``: a verified patch below the
    bar, carried by the issue)."""
    tests = list(report.f2p_tests)
    names = ", ".join(t.rsplit("::", 1)[-1] for t in tests[:3]) or "the test suite"
    more = f" (+{len(tests) - 3} more)" if len(tests) > 3 else ""
    where = f" on {branch}" if branch else ""
    if held_back:
        text = f"selfix: a {confidence_level(report)}-confidence patch for {names}{more}{where}, not pushed"
    else:
        text = f"selfix could not heal {names}{more}{where}"
    return clean(text, 200).replace("\n", " ")


HELP_TEXT = """## selfix commands

- `/selfix fix [notes]`: heal the failing tests of this PR; the notes go to the Detective.
- `/selfix retry`: run again (e.g. after a push).
- `/selfix explain`: diagnose and comment, without a patch.
- `/selfix help`: this message.

Only users with write access to the repository (and bots listed in `allowed_bots`) can run commands."""


def suggestions_from_diff(diff: str) -> list[ReviewSuggestion]:
    """Each hunk's changed block as a GitHub suggestion on the lines it replaces (right side of the PR)."""
    out: list[ReviewSuggestion] = []
    for patched in PatchSet(diff):
        for hunk in patched:
            lines = list(hunk)
            idx = 0
            while idx < len(lines):
                if lines[idx].is_context:
                    idx += 1
                    continue
                block = []
                while idx < len(lines) and not lines[idx].is_context:
                    block.append(lines[idx])
                    idx += 1
                removed = [ln for ln in block if ln.is_removed]
                added = [ln.value.rstrip("\n") for ln in block if ln.is_added]
                if not removed:
                    continue  # a pure insertion has no line to attach a suggestion to; the comment shows it
                start, end = removed[0].source_line_no, removed[-1].source_line_no
                if start is None or end is None:  # unidiff gives every removed line its number: never so
                    continue
                body = "```suggestion\n" + "\n".join(added) + ("\n" if added else "") + "```"
                out.append(ReviewSuggestion(patched.path, start, end, body))
    return out


def isolation_lines(report: HealReport) -> list[str]:
    """The sandbox boundary the project's tests ran in, for the job summary (loud when there was none)."""
    iso = report.isolation
    if not iso:
        return []
    level = str(iso.get("level", "none"))
    warnings = " ".join(str(w) for w in iso.get("warnings") or ())
    if level == "none":
        line = f"**WARNING: no isolation**: the project's tests ran unisolated. {clean(warnings, 500)}".rstrip()
    else:
        line = f"Isolation: `{level}` ({clean(str(iso.get('mechanism', '')), 300)}), as uid {iso.get('uid', '?')}"
        if warnings:
            line += f"; {clean(warnings, 500)}"
    out = [line.replace("\n", " ")]
    fallbacks = [clean(str(f), 200).replace("\n", " ") for f in iso.get("fallbacks") or ()]
    if fallbacks:
        out.append("Isolation fallbacks: " + "; ".join(fallbacks[:5]))
    return out


_HEADLINES = {
    "healed": "healed",
    "not_healed": "not healed",
    "explained": "diagnosis",
    "nothing_to_heal": "nothing to heal",
}


def _mechanics_line(report: HealReport) -> str:
    total = report.timings.get("total")
    time = f"; time {total:.1f} s ({time_split(report)})" if isinstance(total, int | float) and total else ""
    confidence = f"**Patch confidence:** {confidence_level(report)}. " if report.patch is not None else ""
    usage = report.usage
    calls = ""
    if usage.calls:
        calls = (
            f"{usage.calls} model call(s), {usage.input_tokens} tokens in, "
            f"{usage.output_tokens} out, {usage.cache_read_tokens} cached; "
        )
        if usage.asks:
            calls += f"asks: {usage.asks}; "
    return confidence + (
        f"**Cost:** {calls}${cost_usd(report):.4f}, {tokens(report)} tokens (engine `{report.engine}`"
        + ("" if usage.price_known or not usage.provider else "; its price is not in the table, so the cost counts 0")
        + "). "
        f"**Candidates:** {candidate_counts(report)}; {report.test_runs} test runs{time}."
    )


def job_summary(status: str, report: HealReport, report_md: str, facts: Sequence[str] = ()) -> str:
    """The job summary a maintainer reads first: one headline, the tests before and after, cost and tokens, then
    the mechanics (trigger, branch, isolation, notes) and the full report folded below."""
    headline = _HEADLINES.get(status, status.replace("_", " "))
    explanation = clean(report.explanation, 500)
    lines = [f"# selfix: {headline}", "", f"**{explanation[:1].upper() + explanation[1:]}.**", ""]
    lines += _headline_facts(report)
    if report.f2p_tests:
        lines += [*_tests_section(report), ""]
    lines += [_mechanics_line(report), ""]
    lines += [f"- {fact}" for fact in facts]
    # report.md's own headline and explanation repeat what is above: the folded part starts after them.
    md_lines = report_md.splitlines()
    explained_at = next((i for i, line in enumerate(md_lines[:4]) if line.startswith("**")), -1)
    folded = "\n".join(md_lines[explained_at + 1 :]).strip()
    lines += ["", "<details><summary>Full report</summary>", "", folded, "", "</details>", ""]
    return _bounded("\n".join(lines))


def summary_markdown(status: str, report_md: str, extra: Sequence[str] = ()) -> str:
    """A summary without a heal report (nothing ran, or an error): the status, the facts, the text."""
    head = f"# selfix: {_HEADLINES.get(status, status.replace('_', ' '))}\n\n"
    return _bounded(head + "".join(f"- {line}\n" for line in extra) + ("\n" if extra else "") + report_md)


def _bounded(body: str) -> str:
    encoded = body.encode("utf-8")
    if len(encoded) <= SUMMARY_LIMIT:
        return body
    cut = encoded[: SUMMARY_LIMIT - 200].decode("utf-8", errors="ignore")
    return cut + "\n\n... (truncated to stay under GitHub's 1 MiB job summary limit; see report.md)\n"
