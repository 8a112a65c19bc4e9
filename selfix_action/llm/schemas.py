"""Pydantic schemas of the four roles' structured answers, and the tools that carry them.

The JSON Schemas sent to the providers are generated from these models with ``$ref``s inlined, since not
every OpenAI-compatible server resolves them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from selfix_action.providers.base import ToolSpec


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class LocationAnswer(_Answer):
    file: str = Field(min_length=1, description="Repository-relative path of the source file.")
    symbol: str = Field(min_length=1, description="Function, method (Class.method) or module constant.")
    line_start: int = Field(ge=1)
    line_end: int = Field(ge=1)

    @model_validator(mode="after")
    def _ordered_lines(self) -> LocationAnswer:
        if self.line_end < self.line_start:
            self.line_start, self.line_end = self.line_end, self.line_start
        return self


MAX_ALSO = 3


class HypothesisAnswer(_Answer):
    title: str = Field(min_length=3, max_length=200, description="One line: what is wrong, where.")
    confidence: float = Field(ge=0.0, le=1.0, description="Probability that this is the root cause.")
    file: str = Field(min_length=1, description="Repository-relative path of the source file to fix.")
    symbol: str = Field(min_length=1, description="Function, method (Class.method) or module constant.")
    line_start: int = Field(ge=1)
    line_end: int = Field(ge=1)
    reasoning: str = Field(min_length=1, description="Why the evidence points here (tracebacks, ranking).")
    proposed_fix: str = Field(min_length=1, description="The change you would make, in one or two sentences.")
    also: list[LocationAnswer] = Field(
        default_factory=list,
        max_length=MAX_ALSO,
        description="Other places the same fix must change (a caller, a second function); empty when one suffices.",
    )

    @model_validator(mode="after")
    def _ordered_lines(self) -> HypothesisAnswer:
        if self.line_end < self.line_start:
            self.line_start, self.line_end = self.line_end, self.line_start
        return self


ENVIRONMENT_DESCRIPTION = (
    "Leave empty unless failing tests fail because of the environment they run in, not the project's code (a "
    "missing service, network, home/cache/temp folder, locale, terminal, an installed package's or library's "
    "version): then say what is wrong and the evidence."
)
ENVIRONMENT_TESTS_DESCRIPTION = (
    "With environment_problem: the node ids of the failing tests the environment makes fail, when only some do "
    "(the others still need the code fix you give); empty when no code is at fault at all."
)


MAX_ASKS_PER_ANSWER = 4
ASKS_DESCRIPTION = (
    "Leave empty unless you need more of the repository to answer: then ask (and give nothing else) for a file's "
    "line range, a symbol's definition or a search; the answers come back and you answer then."
)


class AskAnswer(_Answer):
    """A request for more of the repository: a file's line range, a definition, or a search."""

    kind: Literal["file", "symbol", "search"] = Field(
        description="file: a line range of a file; symbol: a definition; search: matching lines of the project."
    )
    path: str = Field(default="", description="file: the repository-relative path to show.")
    line_start: int = Field(default=1, ge=1, description="file: the first line to show.")
    line_end: int = Field(default=0, ge=0, description="file: the last line to show (0: up to 200 lines).")
    name: str = Field(default="", description="symbol: a function, Class.method, class or module constant.")
    pattern: str = Field(default="", description="search: the text to find, case-sensitive.")
    regex: bool = Field(default=False, description="search: true if pattern is a Python regular expression.")
    why: str = Field(default="", description="In a few words, what you expect to learn.")

    @model_validator(mode="after")
    def _complete(self) -> AskAnswer:
        needed = {"file": "path", "symbol": "name", "search": "pattern"}[self.kind]
        if not getattr(self, needed).strip():
            raise ValueError(f"an ask of kind {self.kind!r} needs {needed}")
        return self


class DetectiveAnswer(_Answer):
    hypotheses: list[HypothesisAnswer] = Field(
        default_factory=list, description="Genuinely different root causes, most likely first."
    )
    environment_problem: str = Field(default="", description=ENVIRONMENT_DESCRIPTION)
    environment_tests: list[str] = Field(
        default_factory=list, max_length=200, description=ENVIRONMENT_TESTS_DESCRIPTION
    )
    asks: list[AskAnswer] = Field(default_factory=list, max_length=MAX_ASKS_PER_ANSWER, description=ASKS_DESCRIPTION)

    @model_validator(mode="after")
    def _something(self) -> DetectiveAnswer:
        if not self.hypotheses and not self.environment_problem.strip() and not self.asks:
            raise ValueError("give at least one hypothesis, or environment_problem when no code is at fault")
        return self


class QAAnswer(_Answer):
    test_source: str = Field(
        min_length=10,
        description="A complete test file in the project's language and runner (a pytest module with test_* "
        "functions; for a JavaScript project a spec file with it()/test() calls): imports plus one or two tests.",
    )
    expected_failure: str = Field(
        min_length=1,
        description="How the test fails on the current code: AssertionError or the hypothesized exception.",
    )
    property_source: str = Field(
        default="",
        description="Optional: a second pytest module, a property test with the Hypothesis library (from "
        "hypothesis import given, strategies as st) stating the hypothesis' claim for every input of a shape. "
        "Empty when the claim is about one input only.",
    )


class EditAnswer(_Answer):
    file: str = Field(min_length=1, description="Repository-relative path of a source file shown to you.")
    search: str = Field(
        min_length=1, description="Exact text of the file to replace, copied verbatim without line numbers."
    )
    replace: str = Field(description="The text that replaces it.")

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class PatcherAnswer(_Answer):
    # Required with edits only: an answer that only asks has nothing to explain yet.
    explanation: str = Field(default="", max_length=500, description="One sentence: what the patch does.")
    edits: list[EditAnswer] = Field(default_factory=list, max_length=10)
    environment_problem: str = Field(default="", description=ENVIRONMENT_DESCRIPTION)
    environment_tests: list[str] = Field(
        default_factory=list, max_length=200, description=ENVIRONMENT_TESTS_DESCRIPTION
    )
    asks: list[AskAnswer] = Field(default_factory=list, max_length=MAX_ASKS_PER_ANSWER, description=ASKS_DESCRIPTION)

    @model_validator(mode="after")
    def _something(self) -> PatcherAnswer:
        if not self.edits and not self.environment_problem.strip() and not self.asks:
            raise ValueError("give at least one edit, or environment_problem when no code is at fault")
        if self.edits and not self.explanation.strip():
            raise ValueError("explanation: say in one sentence what the edits do")
        return self


class ReviewAnswer(_Answer):
    verdict: Literal["complete", "partial", "wrong"] = Field(
        description=(
            "complete: the patch fixes the root cause for every input of the kind the failure shows; partial: it "
            "fixes the reported case but a sibling case of the same bug still fails; wrong: it does not fix the "
            "root cause (it only makes the tests pass, or breaks correct behaviour)."
        )
    )
    reason: str = Field(min_length=1, description="Why, in one to three sentences, pointing at the code.")
    missed: str = Field(
        default="",
        description="partial or wrong: a concrete input or case the patched code still gets wrong, and what it does "
        "then; empty for complete.",
    )

    @model_validator(mode="after")
    def _case_named(self) -> ReviewAnswer:
        if self.verdict != "complete" and not self.missed.strip():
            raise ValueError(f"missed: a {self.verdict} verdict names the input or case the patch gets wrong")
        return self


DETECTIVE_TOOL = "report_hypotheses"
QA_TOOL = "write_reproduction_test"
PATCHER_TOOL = "propose_edits"
REVIEW_TOOL = "review_patch"


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

    inlined: dict[str, Any] = resolve(schema)  # an object schema in, an object schema out
    return inlined


@dataclass(frozen=True)
class ProjectBounds:
    """What the schemas can pin down about one project: the source files shown to the model (an ``enum`` for every
    ``file``), their line counts (line numbers in range), and how many hypotheses and edits an answer may hold."""

    files: Mapping[str, int] = field(default_factory=dict)  # source file shown to the model -> number of lines
    hypotheses: int = 3
    # A real fix can take more places than a toy one (fastapi-1's: an encoder's two new options, threaded through
    # its recursive calls and the route that calls it); minimization keeps only the hunks the tests need.
    edits: int = 8
    asks: bool = True  # the Detective and the Patcher may ask for more context (False: no ``asks`` field)


# Caps on free-text fields: a model that rambles inside a schema-enforced string stops at these (the grammar
# closes the string), and a short answer is all any role needs.
STRING_CAPS = {
    "title": 200,
    "symbol": 200,
    "reasoning": 800,
    "proposed_fix": 400,
    "test_source": 4000,
    "expected_failure": 300,
    "property_source": 4000,
    "explanation": 500,
    "search": 2000,
    "replace": 2000,
    "environment_problem": 600,
    "path": 300,
    "name": 200,
    "pattern": 300,
    "why": 200,
    "reason": 600,
    "missed": 400,
}


def constrained_schema(model: type[BaseModel], bounds: ProjectBounds | None) -> dict[str, Any]:
    """``model``'s inlined schema, tightened with what is known of the project: string lengths always; with
    ``bounds``, ``file`` as an enum of the source files, line numbers up to the longest file, list lengths."""
    schema = inline_schema(model)
    if bounds is not None and not bounds.asks and "asks" in schema.get("properties", {}):
        del schema["properties"]["asks"]
        schema["required"] = [name for name in schema.get("required", []) if name != "asks"]

    def tighten(node: Any, name: str = "", ask: bool = False) -> None:
        # ``ask``: inside an ask, whose path and lines may be any readable file's (a test file, a config file),
        # not only the source files' the enum and the line maximum pin down.
        if isinstance(node, list):
            for item in node:
                tighten(item, ask=ask)
            return
        if not isinstance(node, dict):
            return
        if node.get("type") == "string" and name in STRING_CAPS:
            node["maxLength"] = min(node.get("maxLength", STRING_CAPS[name]), STRING_CAPS[name])
        if bounds is not None and bounds.files and not ask:
            if name == "file" and node.get("type") == "string":
                node.pop("minLength", None)
                node["enum"] = sorted(bounds.files)
            if name in ("line_start", "line_end") and node.get("type") == "integer":
                node["maximum"] = max(1, *bounds.files.values())
                # The schema has one bound for every file; each file's own is said here, and checked on answer.
                node["description"] = "A line of the file named; files have " + ", ".join(
                    f"{path}: 1-{count}" for path, count in sorted(bounds.files.items())
                )
        if bounds is not None and node.get("type") == "array":
            if name == "hypotheses":
                node["maxItems"] = max(1, bounds.hypotheses)
            if name == "edits":
                node["maxItems"] = max(1, bounds.edits)
        for key, value in node.get("properties", {}).items():
            tighten(value, key, ask or key == "asks")
        for key in ("items", "anyOf", "oneOf", "allOf"):
            if key in node:
                tighten(node[key], ask=ask)

    tighten(schema)
    if bounds is not None and 2 <= len(bounds.files) <= MAX_SCHEMA_FILES:
        split_by_file(schema, bounds.files, nested=len(bounds.files) <= MAX_NESTED_SPLIT_FILES)
    return schema


# Per-file variants cost a copy of the object per file, and a nested place list split too a copy of its variants in
# each: the hypotheses' own file and lines are bounded per file in the schema up to ``MAX_SCHEMA_FILES`` files, the
# places they also name up to ``MAX_NESTED_SPLIT_FILES`` (files * files copies); past those, one maximum for every
# file, each file's own range said in the description (and checked on answer).
MAX_SCHEMA_FILES = 4
MAX_NESTED_SPLIT_FILES = 3
LOCATION_KEYS = frozenset({"file", "line_start", "line_end"})


def split_by_file(node: Any, files: Mapping[str, int], *, nested: bool = True, names: bool = False) -> None:
    """Every object that names a file and a line range (a hypothesis; with ``nested``, the places it also names)
    as an ``anyOf`` of one variant per file: ``file`` that file only, its lines up to that file's length. An ask's
    path is not such an object (its key is ``path``). Descriptions stay in the first variant only."""
    if isinstance(node, list):
        for item in node:
            split_by_file(item, files, nested=nested)
        return
    if not isinstance(node, dict):
        return
    location = not names and node.get("type") == "object" and LOCATION_KEYS <= set(node.get("properties", {}))
    if location and nested:
        for value in node["properties"].values():
            split_by_file(value, files, nested=nested)
    if not location:
        for key, value in node.items():
            split_by_file(value, files, nested=nested, names=not names and key == "properties")
        return
    variants = []
    for n, (path, count) in enumerate(sorted(files.items())):
        variant = copy.deepcopy(node)
        properties = variant["properties"]
        properties["file"] = {k: v for k, v in properties["file"].items() if k != "enum"} | {"enum": [path]}
        for key in ("line_start", "line_end"):
            properties[key] = {**properties[key], "maximum": count, "description": f"A line of {path} (1-{count})."}
        variants.append(variant if n == 0 else _without_descriptions(variant, keep={"line_start", "line_end"}))
    node.clear()
    node["anyOf"] = variants


def _without_descriptions(node: Any, keep: set[str], names: bool = False, name: str = "") -> Any:
    if isinstance(node, list):
        return [_without_descriptions(item, keep) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: _without_descriptions(value, keep, names=not names and key == "properties", name=key if names else "")
        for key, value in node.items()
        if names or key != "description" or name in keep
    }


def tool_specs(bounds: ProjectBounds | None = None) -> tuple[ToolSpec, ...]:
    """All four tools, always in the same order, so the cached prompt prefix is identical for every role."""
    return (
        ToolSpec(
            DETECTIVE_TOOL,
            "Report ranked root-cause hypotheses for the failure.",
            constrained_schema(DetectiveAnswer, bounds),
        ),
        ToolSpec(
            QA_TOOL,
            "Write a reproduction test, for the project's own test runner, for one hypothesis.",
            constrained_schema(QAAnswer, bounds),
        ),
        ToolSpec(
            PATCHER_TOOL,
            "Propose search/replace edits that fix the bug.",
            constrained_schema(PatcherAnswer, bounds),
        ),
        ToolSpec(
            REVIEW_TOOL,
            "Judge whether a verified patch is the complete fix.",
            constrained_schema(ReviewAnswer, bounds),
        ),
    )


def validation_message(exc: ValidationError) -> str:
    """A short, model-readable list of what was wrong."""
    problems = []
    for error in exc.errors()[:8]:
        where = ".".join(str(part) for part in error["loc"]) or "(answer)"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)
