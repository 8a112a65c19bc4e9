"""Pydantic schemas of the three roles' structured answers, and the tools that carry them.

The JSON Schemas sent to the providers are generated from these models with ``$ref``s inlined, since not
every OpenAI-compatible server resolves them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from selfix_action.models.base import ToolSpec


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class HypothesisAnswer(_Answer):
    title: str = Field(min_length=3, max_length=200, description="One line: what is wrong, where.")
    confidence: float = Field(ge=0.0, le=1.0, description="Probability that this is the root cause.")
    file: str = Field(min_length=1, description="Repository-relative path of the source file to fix.")
    symbol: str = Field(min_length=1, description="Function, method (Class.method) or module constant.")
    line_start: int = Field(ge=1)
    line_end: int = Field(ge=1)
    reasoning: str = Field(min_length=1, description="Why the evidence points here (tracebacks, ranking).")
    proposed_fix: str = Field(min_length=1, description="The change you would make, in one or two sentences.")

    @model_validator(mode="after")
    def _ordered_lines(self) -> HypothesisAnswer:
        if self.line_end < self.line_start:
            self.line_start, self.line_end = self.line_end, self.line_start
        return self


class DetectiveAnswer(_Answer):
    hypotheses: list[HypothesisAnswer] = Field(
        min_length=1, description="Genuinely different root causes, most likely first."
    )


class QAAnswer(_Answer):
    test_source: str = Field(
        min_length=10,
        description="A complete pytest module: imports plus one or two test functions named test_*.",
    )
    expected_failure: str = Field(
        min_length=1,
        description="How the test fails on the current code: AssertionError or the hypothesized exception.",
    )


class EditAnswer(_Answer):
    file: str = Field(min_length=1, description="Repository-relative path of a source file shown to you.")
    search: str = Field(
        min_length=1, description="Exact text of the file to replace, copied verbatim without line numbers."
    )
    replace: str = Field(description="The text that replaces it.")

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class PatcherAnswer(_Answer):
    explanation: str = Field(min_length=1, max_length=500, description="One sentence: what the patch does.")
    edits: list[EditAnswer] = Field(min_length=1, max_length=10)


DETECTIVE_TOOL = "report_hypotheses"
QA_TOOL = "write_reproduction_test"
PATCHER_TOOL = "propose_edits"


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with every ``$ref`` replaced by its definition and titles dropped."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any, names: bool = False) -> Any:
        # ``names``: the keys of this dict are property names (one may be "title"), not schema keywords.
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {
                k: resolve(v, names=not names and k == "properties") for k, v in node.items() if names or k != "title"
            }
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return resolve(schema)


def tool_specs() -> tuple[ToolSpec, ...]:
    """All three tools, always in the same order, so the cached prompt prefix is identical for every role."""
    return (
        ToolSpec(
            DETECTIVE_TOOL,
            "Report ranked root-cause hypotheses for the failure.",
            inline_schema(DetectiveAnswer),
        ),
        ToolSpec(QA_TOOL, "Write a pytest reproduction test for one hypothesis.", inline_schema(QAAnswer)),
        ToolSpec(PATCHER_TOOL, "Propose search/replace edits that fix the bug.", inline_schema(PatcherAnswer)),
    )


def validation_message(exc: ValidationError) -> str:
    """A short, model-readable list of what was wrong."""
    problems = []
    for error in exc.errors()[:8]:
        where = ".".join(str(part) for part in error["loc"]) or "(answer)"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)
