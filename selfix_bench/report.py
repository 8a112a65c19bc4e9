"""``report.md`` and ``chart.svg`` for one benchmark run (hand-written SVG, no plotting dependency)."""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selfix_bench.base import patch_digest
from selfix_bench.stats import median, paired_comparison, wilson_interval


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(records)
    k = sum(1 for r in records if r.get("resolved"))
    lo, hi = wilson_interval(k, n)
    resolved = [r for r in records if r.get("resolved")]
    return {
        "tasks": n,
        "resolved": k,
        "rate": k / n if n else 0.0,
        "ci": (lo, hi),
        "median_seconds": median(r.get("seconds", 0.0) for r in records),
        "median_test_runs": median(r.get("test_runs", 0) for r in records),
        "median_candidates": median(r.get("candidates", 0) for r in records),
        "median_seconds_resolved": median(r.get("seconds", 0.0) for r in resolved),
        "median_candidates_resolved": median(r.get("candidates", 0) for r in resolved),
        "errors": sum(1 for r in records if r.get("error")),
        "tokens": sum(int(r.get("tokens", 0)) for r in records),
        "cost": sum(float(r.get("cost", 0.0)) for r in records),
    }


def _by_library(records: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[str(record.get("library", "?"))].append(record)
    return dict(sorted(groups.items()))


def render_markdown(
    records: Sequence[dict[str, Any]],
    name: str,
    other: Sequence[dict[str, Any]] | None = None,
    other_name: str = "",
    reviews: dict[str, Any] | None = None,
) -> str:
    s = summarize(records)
    lo, hi = s["ci"]
    lines = [
        f"# Benchmark run `{name}`",
        "",
        f"- resolved: **{s['resolved']}/{s['tasks']} = {s['rate']:.1%}** (95% Wilson interval {lo:.1%}-{hi:.1%})",
        f"- median time per task: {s['median_seconds']:.2f} s (resolved tasks: {s['median_seconds_resolved']:.2f} s)",
        f"- median test runs per task: {s['median_test_runs']:g}",
        f"- median candidates tried: {s['median_candidates']:g} (resolved tasks: {s['median_candidates_resolved']:g})",
        f"- tokens: {s['tokens']}, cost: ${s['cost']:.2f}, errors/timeouts: {s['errors']}",
        "",
        "| library | tasks | resolved | rate | 95% CI | median s | median runs |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for library, group in _by_library(records).items():
        g = summarize(group)
        glo, ghi = g["ci"]
        lines.append(
            f"| {library} | {g['tasks']} | {g['resolved']} | {g['rate']:.1%} | {glo:.1%}-{ghi:.1%} | "
            f"{g['median_seconds']:.2f} | {g['median_test_runs']:g} |"
        )
    kinds: dict[str, list[bool]] = defaultdict(list)
    for record in records:
        kinds[str(record.get("template", "?"))].append(bool(record.get("resolved")))
    lines += ["", "| bug kind | tasks | resolved |", "|---|---:|---:|"]
    for kind, flags in sorted(kinds.items()):
        lines.append(f"| {kind} | {len(flags)} | {sum(flags)} |")
    if other is not None:
        a = {r["id"]: bool(r.get("resolved")) for r in records}
        b = {r["id"]: bool(r.get("resolved")) for r in other}
        p = paired_comparison(a, b)
        lines += [
            "",
            f"## Paired comparison with `{other_name}` ({p.shared} shared tasks, exact McNemar)",
            "",
            f"- both resolved {p.both}, only `{name}` {p.only_a}, only `{other_name}` {p.only_b}, neither {p.neither}",
            f"- two-sided exact McNemar p = {p.p_value:.4g}",
        ]
    if any(r.get("kind") == "realbug" for r in records):
        lines += realbug_section(records, name, other, other_name, reviews)
    lines += ["", "## Tasks", "", "| task | resolved | s | runs | candidates | stop |", "|---|---|---:|---:|---:|---|"]
    for r in sorted(records, key=lambda r: r["id"]):
        stop = r.get("error") or r.get("stop_reason", "")
        lines.append(
            f"| {r['id']} | {'yes' if r.get('resolved') else 'no'} | {r.get('seconds', 0):.1f} | "
            f"{r.get('test_runs', 0)} | {r.get('candidates', 0)} | {html.escape(str(stop))[:60]} |"
        )
    return "\n".join(lines) + "\n"


def _rate(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {k / n if n else 0:.1%} ({lo:.1%}-{hi:.1%})"


def score_realbugs(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Counts of the three verdicts (a record without a ``correct`` field counts as not correct)."""
    realbug = [r for r in records if r.get("kind") == "realbug"]
    return {
        "tasks": len(realbug),
        "resolved": sum(1 for r in realbug if r.get("resolved")),
        "correct": sum(1 for r in realbug if r.get("correct")),
        "plausible_wrong": sum(1 for r in realbug if r.get("plausible_wrong")),
        "correct_ast": sum(1 for r in realbug if r.get("correct_ast")),
        "correct_tests_only": sum(1 for r in realbug if r.get("correct_tests") and not r.get("correct_ast")),
    }


def _confidence_label(record: dict[str, Any]) -> str:
    value = record.get("confidence")
    if value is None:
        return "not reported"
    if isinstance(value, dict):
        return str(value.get("level", value))
    return str(value)


def realbug_section(
    records: Sequence[dict[str, Any]],
    name: str,
    other: Sequence[dict[str, Any]] | None,
    other_name: str,
    reviews: dict[str, Any] | None = None,
) -> list[str]:
    """Resolved / correct / plausible-but-wrong with 95% Wilson intervals, per project, the confidence of each
    patch, and the paired tests (exact McNemar) on resolved and on correct against another run."""
    realbug = [r for r in records if r.get("kind") == "realbug"]
    c = score_realbugs(realbug)
    n = c["tasks"]
    lines = [
        "",
        "## Real bugs",
        "",
        f"- resolved (F2P and P2P pass): **{_rate(c['resolved'], n)}**",
        f"- correct (developers' normalized AST, or also the hidden tests of the fixed commit): "
        f"**{_rate(c['correct'], n)}** (same AST {c['correct_ast']}, hidden tests only {c['correct_tests_only']})",
        f"- plausible but wrong (resolved, not correct): **{_rate(c['plausible_wrong'], n)}**",
        "",
        "| project | tasks | resolved | correct | plausible-but-wrong |",
        "|---|---:|---:|---:|---:|",
    ]
    for library, group in _by_library(realbug).items():
        g = score_realbugs(group)
        lines.append(f"| {library} | {g['tasks']} | {g['resolved']} | {g['correct']} | {g['plausible_wrong']} |")
    for kind in ("single-line", "multi-line"):
        g = score_realbugs([r for r in realbug if r.get("template") == kind])
        lines.append(f"| ({kind} fixes) | {g['tasks']} | {g['resolved']} | {g['correct']} | {g['plausible_wrong']} |")
    patched = [r for r in realbug if r.get("resolved")]
    if patched:
        lines += [
            "",
            "| task | verdict | confidence selfix gave | patch differs from the fix in |",
            "|---|---|---|---|",
        ]
        for r in sorted(patched, key=lambda r: r["id"]):
            verdict = "correct" if r.get("correct") else "plausible but wrong"
            differs = ", ".join(r.get("ast_differs", [])[:3]) or "-"
            lines.append(f"| {r['id']} | {verdict} | {html.escape(_confidence_label(r))} | {html.escape(differs)} |")
    lines += reviewed_section(realbug, reviews or {})
    lines += confidence_calibration(realbug)
    lines += spending(realbug)
    if other is not None:
        mine = {r["id"]: r for r in realbug}
        theirs = {r["id"]: r for r in other if r.get("kind") == "realbug"}
        shared = sorted(set(mine) & set(theirs))
        worse = [k for k in shared if theirs[k].get("correct") and not mine[k].get("correct")]
        better = [k for k in shared if mine[k].get("correct") and not theirs[k].get("correct")]
        calls_mine = sum(int(mine[k].get("calls", 0) or 0) for k in shared)
        calls_theirs = sum(int(theirs[k].get("calls", 0) or 0) for k in shared)
        lines += [
            "",
            f"Against `{other_name}`: correct there and not here on {len(worse)} task(s)"
            + (f" ({', '.join(worse)})" if worse else "")
            + f"; correct here and not there on {len(better)}"
            + (f" ({', '.join(better)})" if better else "")
            + f". Model calls: {calls_mine} here, {calls_theirs} there ({calls_theirs - calls_mine:+d} saved here).",
        ]
        lines += ["", f"Paired with `{other_name}` (exact McNemar, tasks both runs have):", ""]
        for field in ("resolved", "correct", "plausible_wrong"):
            p = paired_comparison(
                {k: bool(v.get(field)) for k, v in mine.items()}, {k: bool(v.get(field)) for k, v in theirs.items()}
            )
            lines.append(
                f"- {field.replace('_', '-')}: both {p.both}, only `{name}` {p.only_a}, only `{other_name}` "
                f"{p.only_b}, neither {p.neither} of {p.shared}; p = {p.p_value:.4g}"
            )
    return lines


def read_reviews(path: Path) -> dict[str, dict[str, str]]:
    """Verdicts reached by reading patches the syntax-tree comparison calls wrong: ``{task: {digest: verdict,
    argument}}`` from ``bench/realbugs/reviewed.json`` (none: {})."""
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def reviewed_section(realbug: Sequence[dict[str, Any]], reviews: dict[str, Any]) -> list[str]:
    """The plausible-but-wrong patches someone read, and what reading found: correct (equivalent to the
    developers' fix on every input) or wrong; the count of correct patches after reading."""
    read = []
    for record in realbug:
        if not record.get("plausible_wrong"):
            continue
        review = reviews.get(record["id"], {}).get(patch_digest(record.get("patch", "")))
        if review is not None:
            read.append((record, review))
    if not read:
        return []
    correct_after = sum(1 for r in realbug if r.get("correct")) + sum(
        1 for _, review in read if review.get("verdict") == "correct"
    )
    lines = [
        "",
        f"Read where the syntax trees differ ({len(read)} plausible-but-wrong patch(es) read): correct after reading "
        f"**{_rate(correct_after, len(realbug))}**.",
        "",
        "| task | confidence | verdict after reading | argument |",
        "|---|---|---|---|",
    ]
    for record, review in sorted(read, key=lambda item: item[0]["id"]):
        lines.append(
            f"| {record['id']} | {html.escape(_confidence_label(record))} | {review.get('verdict')} | "
            f"{html.escape(review.get('argument', ''))} |"
        )
    return lines


def confidence_calibration(realbug: Sequence[dict[str, Any]]) -> list[str]:
    """P(correct | level) for the patches that resolved their task, with 95% Wilson intervals, and the share of
    the correct patches given each level (``high`` must mean correct, and most correct patches must be high)."""
    patched = [r for r in realbug if r.get("resolved")]
    if not patched:
        return []
    lines = [
        "",
        "| engine of the patch | confidence | patches | correct | P(correct given the level) | share of its correct |",
        "|---|---|---:|---:|---|---:|",
    ]
    engines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in patched:
        engine = record.get("patch_engine")
        engines["llm" if engine == "llm" else "offline" if engine else "?"].append(record)
    for engine, group in sorted(engines.items()):
        correct_total = sum(1 for r in group if r.get("correct"))
        for level in ("high", "medium", "low", "not reported"):
            at_level = [r for r in group if _confidence_label(r) == level]
            if not at_level:
                continue
            correct = sum(1 for r in at_level if r.get("correct"))
            share = f"{correct / correct_total:.0%}" if correct_total else "-"
            lines.append(
                f"| {engine} | {level} | {len(at_level)} | {correct} | {_rate(correct, len(at_level))} | {share} |"
            )
    return lines


def spending(realbug: Sequence[dict[str, Any]]) -> list[str]:
    """Median model calls, tokens, cost and wall time per heal (every task the engine ran on, and the resolved)."""
    ran = [r for r in realbug if not r.get("error")]
    if not any(r.get("calls") for r in ran):
        return []

    def medians(group: Sequence[dict[str, Any]]) -> str:
        timings = [r.get("timings") or {} for r in group]
        return (
            f"{median(r.get('calls', 0) for r in group):g} | {median(r.get('input_tokens', 0) for r in group):g} | "
            f"{median(r.get('output_tokens', 0) for r in group):g} | "
            f"{median(r.get('cache_read_tokens', 0) for r in group):g} | "
            f"${median(float(r.get('cost', 0.0)) for r in group):.4f} | "
            f"{median(r.get('seconds', 0.0) for r in group):.0f} | "
            f"{median(r.get('model_seconds', 0.0) for r in group):.0f} | "
            f"{median(float(t.get('tests', 0.0)) for t in timings):.0f} |"
        )

    resolved = [r for r in ran if r.get("resolved")]
    lines = [
        "",
        "| medians per heal | calls | tokens in | tokens out | cached | cost | wall s | model s | test s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| all {len(ran)} tasks | {medians(ran)}",
    ]
    if resolved:
        lines.append(f"| {len(resolved)} resolved | {medians(resolved)}")
    total = sum(float(r.get("cost", 0.0)) for r in ran)
    priced = all(r.get("price_known", True) for r in ran if r.get("calls"))
    lines.append("")
    lines.append(
        f"Total cost ${total:.2f} over {sum(int(r.get('calls', 0) or 0) for r in ran)} model calls"
        + ("" if priced else " (some calls' model has no price: counted as 0)")
        + "."
    )
    return lines


def render_svg(records: Sequence[dict[str, Any]], name: str) -> str:
    """Resolve rate per library (bars) with 95% Wilson intervals (whiskers), plus the overall rate."""
    groups = [("all", list(records)), *_by_library(records).items()]
    width, bar_h, gap, left, top = 640, 26, 14, 120, 40
    plot_w = width - left - 60
    height = top + len(groups) * (bar_h + gap) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="14" font-weight="bold">'
        f"Resolve rate, run {html.escape(name)} (95% Wilson interval)</text>",
    ]
    for tick in range(0, 101, 25):
        x = left + plot_w * tick / 100
        out.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - 30}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 14}" text-anchor="middle">{tick}%</text>')
    for index, (label, group) in enumerate(groups):
        s = summarize(group)
        y = top + index * (bar_h + gap)
        lo, hi = s["ci"]
        out.append(
            f'<text x="{left - 8}" y="{y + bar_h / 2 + 4}" text-anchor="end">'
            f"{html.escape(label)} (n={s['tasks']})</text>"
        )
        out.append(f'<rect x="{left}" y="{y}" width="{plot_w * s["rate"]:.1f}" height="{bar_h}" fill="#4c78a8"/>')
        cy = y + bar_h / 2
        x1, x2 = left + plot_w * lo, left + plot_w * hi
        out.append(f'<line x1="{x1:.1f}" y1="{cy}" x2="{x2:.1f}" y2="{cy}" stroke="black" stroke-width="1.5"/>')
        for x in (x1, x2):
            out.append(f'<line x1="{x:.1f}" y1="{cy - 6}" x2="{x:.1f}" y2="{cy + 6}" stroke="black"/>')
        out.append(f'<text x="{left + plot_w * hi + 6:.1f}" y="{cy + 4}">{s["rate"]:.0%}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_report(
    run_dir: Path,
    records: Sequence[dict[str, Any]],
    name: str,
    other: Sequence[dict[str, Any]] | None = None,
    other_name: str = "",
    reviews: dict[str, Any] | None = None,
) -> None:
    (run_dir / "report.md").write_text(render_markdown(records, name, other, other_name, reviews), encoding="utf-8")
    (run_dir / "chart.svg").write_text(render_svg(records, name), encoding="utf-8")
