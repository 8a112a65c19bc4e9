from __future__ import annotations

from collections import Counter

from selfix_action.offline.engine import OfflineEngine
from selfix_action.offline.templates import PRIORS
from selfix_action.repair.values import Evidence, SuspiciousLine

SOURCE = "def total(items, start, scale, offset, bias):\n    result = start + scale\n    return result\n"


class _Files:
    """The one thing the engine reads from a sandbox: file text."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read_file(self, path: str) -> str:
        return self.files[path]


def _evidence(lines: dict[int, float]) -> Evidence:
    return Evidence(
        f2p_tests=("tests/test_m.py::test_total",),
        p2p_tests=(),
        failures=(),
        suspicious_lines=tuple(
            SuspiciousLine(file="m.py", line=line, score=score, function="total") for line, score in lines.items()
        ),
        suspicious_functions=(),
        coverage_used=True,
    )


def _candidates(lines: dict[int, float]) -> list:
    engine = OfflineEngine(order_model=None)  # the hand priors (the learned order has its own tests)
    sandbox = _Files({"m.py": SOURCE})
    evidence = _evidence(lines)
    [hypothesis] = engine.hypotheses(evidence, sandbox, 1)  # type: ignore[arg-type]
    return list(engine.candidates(hypothesis, evidence, sandbox, []))  # type: ignore[arg-type]


def test_candidates_are_ordered_by_prior_shared_among_a_templates_variants_on_the_line() -> None:
    found = _candidates({2: 1.0})
    fan_out = Counter(c.template for c in found)
    weights = [c.prior / fan_out[c.template] for c in found]
    assert weights == sorted(weights, reverse=True)
    # Ten renamed identifiers share name_replace's prior; the one statement deletion keeps all of its own, so it
    # now comes before them although its template prior is far lower.
    assert fan_out["name_replace"] >= 8 and fan_out["stmt_delete"] == 1
    assert PRIORS["stmt_delete"] < PRIORS["name_replace"]
    first_rename = next(i for i, c in enumerate(found) if c.template == "name_replace")
    assert [c.template for c in found].index("stmt_delete") < first_rename


def test_more_suspicious_lines_still_come_first() -> None:
    found = _candidates({2: 0.5, 3: 1.0})
    lines = [c.line for c in found]
    assert lines == sorted(lines, key=lambda line: line != 3)  # every line-3 candidate before any line-2 one
    assert len({c.files["m.py"] for c in found}) == len(found)  # no program twice
