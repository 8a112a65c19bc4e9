"""``selfix view``: one run's trace as one self-contained HTML page (inline CSS, no script, no external asset).

A Content-Security-Policy of ``default-src 'none'`` makes the no-network promise enforceable by the browser.
Every text from the trace is HTML-escaped (test output and model answers are untrusted).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from selfix_action.learn.reward import hypothesis_reward
from selfix_action.learn.runs import summarize
from selfix_action.learn.trace_schema import (
    ExposeEvent,
    HypothesesEvent,
    LocalizeEvent,
    ModelCallEvent,
    OutcomeEvent,
    PropertyEvent,
    Trace,
    VerifyEvent,
)
from selfix_action.repair.report import InputChange

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24;background:#fafbfc}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
.meta{color:#57606a} .card{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:12px;margin:8px 0}
.healed{border-left:6px solid #1a7f37} .not-healed{border-left:6px solid #cf222e}
.conf-high{border-left:6px solid #1a7f37} .conf-medium{border-left:6px solid #bf8700}
.conf-low{border-left:6px solid #cf222e} .card ul{margin:4px 0 0;padding-left:20px}
table{border-collapse:collapse;width:100%;background:#fff} td,th{border:1px solid #d0d7de;padding:4px 8px;
text-align:left;vertical-align:top} th{background:#f6f8fa}
.ok{color:#1a7f37;font-weight:600} .fail{color:#cf222e} pre{background:#f6f8fa;padding:8px;overflow:auto;
max-height:320px;white-space:pre-wrap} ol.timeline{list-style:none;padding:0;border-left:2px solid #d0d7de}
ol.timeline li{margin:0 0 6px 0;padding-left:12px;position:relative}
ol.timeline li:before{content:"";position:absolute;left:-6px;top:6px;width:10px;height:10px;border-radius:50%;
background:#8c959f} li.step-verify.ok:before{background:#1a7f37} li.step-verify.fail:before{background:#cf222e}
li.step-hypotheses:before,li.step-expose:before{background:#8250df} li.step-localize:before{background:#bf8700}
.t{color:#57606a;font-family:ui-monospace,monospace;display:inline-block;min-width:64px}
.step{font-weight:600;display:inline-block;min-width:90px}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _table(headers: list[str], rows: list[list[str]], table_id: str) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


TOP_REASONS = 3  # the confidence reasons on the first screen; the others fold out below them
_MARKS = {"low": "lowers it to low", "medium": "caps it at medium", "high": "supports high"}


def _confidence_card(outcome: OutcomeEvent | None) -> str:
    """The patch's confidence level and its top reasons (the lowering ones first), the rest folded."""
    if outcome is None or not outcome.patch_diff:
        return '<div id="confidence" class="card">Confidence: no patch, so none</div>'
    if not outcome.confidence:
        return '<div id="confidence" class="card">Confidence: not recorded in this trace</div>'
    items = [
        f"<li>{_e(r.text)} <span class=meta>({_e(_MARKS.get(r.level, r.level))})</span></li>"
        for r in outcome.confidence_reasons
    ]
    rest = items[TOP_REASONS:]
    folded = f"<details><summary>{len(rest)} more reason(s)</summary><ul>{''.join(rest)}</ul></details>" if rest else ""
    return (
        f'<div id="confidence" class="card conf-{_e(outcome.confidence)}">Confidence: '
        f"<strong>{_e(outcome.confidence)}</strong><ul>{''.join(items[:TOP_REASONS])}</ul>{folded}</div>"
    )


def _review_card(outcome: OutcomeEvent | None) -> str:
    """The reviewer's verdict on the patch, its reason and the case it says the patch misses ("" without one)."""
    if outcome is None or not outcome.review_verdict:
        return ""
    missed = f"<br>A case it says the patch misses: {_e(outcome.review_missed)}" if outcome.review_missed else ""
    return (
        f'<div id="review" class="card">Reviewer\'s verdict: <strong>{_e(outcome.review_verdict)}</strong>: '
        f"{_e(outcome.review_reason)}{missed}</div>"
    )


def _patch_block(outcome: OutcomeEvent | None) -> str:
    if outcome is None or not outcome.patch_diff:
        return '<p id="patch" class="card">No patch passed verification, so none is proposed.</p>'
    title = "Verified patch" if outcome.healed else "Patch (verified, not confirmed: review it first)"
    name = f" <code>{_e(outcome.patch_candidate)}</code>" if outcome.patch_candidate else ""
    checked = f'<p class="meta">Checked: {_e(outcome.verification)}</p>' if outcome.verification else ""
    return f'<h2>{title}{name}</h2>{checked}<pre id="patch">{_e(outcome.patch_diff)}</pre>'


def _change_rows(changes: Sequence[InputChange]) -> list[list[str]]:
    return [
        [
            f"<code>{_e(c.function)}</code>",
            f"<code>{_e(c.input)}</code>",
            _e(f"{c.source} test" + ("" if c.variation == "as recorded" else f", {c.variation}")),
            f"<code>{_e(c.before)}</code>",
            f"<code>{_e(c.after)}</code>",
        ]
        for c in changes
    ]


def _behaviour_block(outcome: OutcomeEvent | None) -> str:
    """The behaviour probe: inputs whose outcome the patch changed, and where a second solution disagrees."""
    probe = outcome.behaviour if outcome is not None else None
    if probe is None:
        return ""
    if not probe.compared:
        return f'<h2>Behaviour beyond the tests</h2><p id="behaviour">Not measured: {_e(probe.note)}</p>'
    parts = [
        "<h2>Behaviour beyond the tests</h2>",
        f'<p id="behaviour">{probe.compared} input(s) replayed unpatched and patched: {len(probe.changed)} '
        f"changed outcome, {len(probe.outside)} of them a passing test's own call.</p>",
    ]
    headers = ["function", "input", "from", "unpatched", "patched"]
    if probe.changed:
        parts.append(_table(headers, _change_rows(probe.changed), "behaviour-changed"))
    if probe.second_source:
        verdict = f"differs on {len(probe.disagreements)} input(s)" if probe.disagreements else "agrees on every input"
        settled = f" Settled: {_e(probe.settled)}." if probe.settled else ""
        parts.append(f"<p>Second solution ({_e(probe.second_source)}): {verdict}.{settled}</p>")
        if probe.disagreements:
            headers = ["function", "input", "from", "this patch", "second solution"]
            parts.append(_table(headers, _change_rows(probe.disagreements), "behaviour-second"))
            parts.append(f'<pre id="second-patch">{_e(probe.second_diff)}</pre>')
    return "".join(parts)


def _property_rows(events: list[PropertyEvent]) -> list[list[str]]:
    """One row per property run: on the unpatched code (the counterexample and the test), then on candidates."""
    rows = []
    for event in events:
        if event.used is not None:
            verdict = (
                '<span class="ok">counterexample found: used</span>'
                if event.used
                else f'<span class="fail">not used</span> {_e(event.note)}'
            )
            detail = f"<pre>{_e(event.counterexample)}</pre>" if event.counterexample else ""
            if event.source:
                detail += f"<details><summary>the property test</summary><pre>{_e(event.source)}</pre></details>"
            rows.append([_e(event.hypothesis), "the unpatched code", verdict, detail])
        elif event.held is not None:
            verdict = (
                f'<span class="ok">held in {event.examples} example(s)</span>'
                if event.held
                else '<span class="fail">counterexample: partial fix</span>'
            )
            rows.append([_e(event.hypothesis), _e(event.candidate), verdict, f"<pre>{_e(event.detail[:1500])}</pre>"])
        else:
            rows.append([_e(event.hypothesis), "", "skipped", _e(event.message)])
    return rows


def render_html(trace: Trace) -> str:
    run = summarize(trace)
    outcome = next((e for e in trace.events if isinstance(e, OutcomeEvent)), None)
    localize = next((e for e in trace.events if isinstance(e, LocalizeEvent)), None)
    parts: list[str] = []
    # The first screen: the outcome, the confidence with its top reasons, the patch. Details come after.
    status = "healed" if run.healed else "not-healed"
    explanation = f"<br>{_e(outcome.explanation)}" if outcome is not None and outcome.explanation else ""
    parts.append(
        f'<div id="outcome" class="card {status}"><strong>{_e(run.stop_reason or "unknown")}</strong>'
        + (f" (exit {outcome.exit_code})" if outcome is not None else "")
        + f" · {run.candidates} candidate patch(es) tried · {run.test_runs} test run(s)"
        + (f" · fixed by <code>{_e(run.patch_template)}</code>" if run.patch_template else "")
        + f"{explanation}</div>"
    )
    parts.append(_confidence_card(outcome))
    parts.append(_review_card(outcome))
    parts.append(_patch_block(outcome))
    parts.append(_behaviour_block(outcome))
    parts.append(
        f'<div id="cost" class="card">Model calls: {run.calls} · tokens: {run.tokens} · cost: '
        f"${run.cost_usd:.4f}" + (f" · {outcome.seconds:.1f}s" if outcome else "") + "</div>"
    )
    if trace.truncated:
        parts.append('<div class="card fail">The last line of the trace was cut off and skipped.</div>')

    parts.append("<h2>Evidence</h2>")
    if localize is not None and localize.failures:
        rows = []
        for failure in localize.failures:
            frames = "<br>".join(_e(f"{f.file}:{f.line} in {f.function}") for f in failure.frames[-4:])
            rows.append(
                [
                    f"<code>{_e(failure.nodeid)}</code>",
                    _e(failure.exc_type),
                    f"<pre>{_e(failure.message[:800])}</pre>",
                    frames,
                ]
            )
        parts.append(_table(["test", "exception", "message", "project frames"], rows, "evidence"))
        parts.append(f'<p class="meta">Fingerprint <code>{_e(run.fingerprint)}</code></p>')
    else:
        parts.append('<p id="evidence">No failure evidence recorded.</p>')

    parts.append("<h2>Hypotheses</h2>")
    rows = []
    for h in run.hypotheses:
        reward = hypothesis_reward(h)
        verdict = (
            '<span class="ok">fixed</span>'
            if h.fixed
            else ("not reached" if not h.reached else ("exposed, no patch" if h.exposed else "not exposed"))
        )
        rows.append(
            [
                str(h.rank),
                f"{h.confidence:.2f}",
                _e(h.title),
                f"<code>{_e(h.file)}</code> {_e(h.symbol)}",
                verdict,
                str(len(h.attempts)),
                "-" if reward is None else f"{reward.total:+.3f}",
            ]
        )
    parts.append(
        _table(["rank", "confidence", "hypothesis", "where", "verdict", "attempts", "reward"], rows, "hypotheses")
    )

    parts.append("<h2>QA tests</h2>")
    qa = [e for e in trace.events if isinstance(e, ExposeEvent)]
    qa_rows = [
        [
            _e(e.hypothesis),
            '<span class="ok">exposes the bug</span>' if e.exposed else '<span class="fail">does not expose</span>',
            f"<pre>{_e(e.qa_test)}</pre>" if e.qa_test else _e(e.message),
        ]
        for e in qa
    ]
    parts.append(_table(["hypothesis", "verdict", "QA test"], qa_rows, "qa"))

    properties = [e for e in trace.events if isinstance(e, PropertyEvent)]
    if properties:
        parts.append("<h2>Property tests</h2>")
        parts.append(_table(["hypothesis", "run on", "verdict", "detail"], _property_rows(properties), "properties"))

    parts.append("<h2>Patches</h2>")
    patch_rows = [
        [
            _e(e.candidate),
            _e(e.template),
            _e(e.description or e.message),
            f'<span class="{"ok" if e.ok else "fail"}">{_e(e.stage)}</span>',
            _e(e.detail[:300]),
        ]
        for e in trace.events
        if isinstance(e, VerifyEvent)
    ]
    parts.append(_table(["candidate", "template", "edit", "verdict", "detail"], patch_rows, "patches"))

    parts.append('<h2>Timeline</h2><ol id="timeline" class="timeline">')
    for event in trace.events:
        classes = f"step-{_e(event.step)}"
        if isinstance(event, VerifyEvent):
            classes += " ok" if event.ok else " fail"
        extra = ""
        if isinstance(event, HypothesesEvent):
            extra = "<br>" + "<br>".join(_e(f"#{h.rank} ({h.confidence:.2f}) {h.title}") for h in event.hypotheses)
        if isinstance(event, ModelCallEvent):
            extra = f" <span class=meta>{_e(event.role)} · ${event.cost_usd:.4f}</span>"
        parts.append(
            f'<li class="{classes}"><span class="t">{event.t:7.2f}s</span> <span class="step">{_e(event.step)}'
            f"</span> {_e(event.message[:400])}{extra}</li>"
        )
    parts.append("</ol>")

    header = trace.header
    title = f"selfix run {header.run_id}"
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1><p class=meta>repo <code>{_e(header.repo)}</code> · engine <code>"
        f"{_e(header.engine)}</code> · {_e(header.created)} · trace schema v{header.schema_version}</p>"
        + "\n".join(parts)
        + "</body></html>\n"
    )


def summary_counts(trace: Trace) -> dict[str, Any]:
    run = summarize(trace)
    return {"hypotheses": len(run.hypotheses), "candidates": run.candidates, "healed": run.healed}
