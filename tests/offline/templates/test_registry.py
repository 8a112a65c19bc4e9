"""The registry (registry.py): every template once, the priors' single source, and families that
emit only the templates they declare."""

from __future__ import annotations

import ast
import functools
from collections import defaultdict

import pytest

from selfix_action.offline import templates
from selfix_action.offline.templates import PRIORS, TEMPLATES, Hints, candidate_edits
from selfix_action.offline.templates.analysis import FileFacts
from selfix_action.offline.templates.candidates import family_mutations
from selfix_action.offline.templates.family import Context
from selfix_action.offline.templates.registry import (
    COMBINED,
    EXPRESSION_FAMILIES,
    FAMILIES,
    FUNCTION_FAMILIES,
    STATEMENT_FAMILIES,
)
from selfix_action.offline.templates.render import Renderer
from tests.helpers.projects import EXAMPLES
from tests.helpers.templates import PATH, REALISTIC

# Snippets for the templates the realistic function and the examples may not exercise.
EXTRA = (
    "def positions(xs, data=[]):\n"
    "    done = False\n"
    "    for x, i in enumerate(xs):\n"
    "        data.append(i)\n"
    "    for line in data:\n"
    "        print(line)\n"
    "    if not xs:\n"
    "        return\n"
    "    return -len(xs)\n"
    "\n"
    "\n"
    "import os\n"
    "\n"
    "\n"
    "class Base:\n"
    "    def render(self, parts):\n"
    "        return '/'.join(parts)\n"
    "\n"
    "\n"
    "class Paths(Base):\n"
    "    def joined(self, parts, strict=False):\n"
    "        return ':'.join(parts)\n"
    "\n"
    "    def split(self, text, suffix):\n"
    "        return self.joined(text.split(os.sep)) + sufix\n"
    "\n"
    "    def query(self, column):\n"
    "        return 'SELECT DISTINCT' + column\n"
    "\n"
    "    def note(self, column, log=None):\n"
    "        log.append('%s: %s' % (column, self))\n"
    "        return log or []\n"
)
# What a failing assertion compared, for the families guided by it.
HINTS = Hints.from_failures(["assert 'SELECT DISTINCTname' == 'SELECT DISTINCT name'"])


@functools.cache
def corpus() -> tuple[str, ...]:
    """The realistic function, the snippets, and the example projects' modules (not their tests)."""
    sources = [REALISTIC, EXTRA]
    modules = [path for path in sorted(EXAMPLES.glob("*/**/*.py")) if "tests" not in path.parts]
    sources += [path.read_text(encoding="utf-8") for path in modules]
    return tuple(sources)


def test_template_ids_are_unique_and_priors_come_from_the_registry() -> None:
    ids = [template.id for template in TEMPLATES]
    assert len(ids) == len(set(ids))
    assert PRIORS == {template.id: template.prior for template in TEMPLATES}
    assert all(0 < template.prior <= 1 for template in TEMPLATES)
    # Listed in ranking order: most frequent fix kind first.
    priors = [template.prior for template in TEMPLATES]
    assert priors == sorted(priors, reverse=True)
    assert set(templates.__all__) >= {"PRIORS", "SourceEdit", "candidate_edits"}


def test_family_names_are_unique_and_families_are_listed_by_site() -> None:
    names = [family.name for family in FAMILIES]
    assert len(names) == len(set(names))
    assert {f.site for f in EXPRESSION_FAMILIES} == {"expression", "test"}
    assert {f.site for f in STATEMENT_FAMILIES} == {"statement"}
    assert {f.site for f in FUNCTION_FAMILIES} == {"function"}
    declared = {template for family in FAMILIES for template in family.templates}
    assert declared.isdisjoint(COMBINED)
    assert declared | set(COMBINED) == set(TEMPLATES)  # no template without a family (or a combiner) to make it


@pytest.mark.slow
def test_the_registry_lists_every_template_generated_candidates_carry() -> None:
    carried: set[str] = set()
    for source in corpus():
        for edit in candidate_edits(source, PATH, range(1, source.count("\n") + 2), hints=HINTS):
            assert edit.template in PRIORS, edit.template
            assert edit.prior == PRIORS[edit.template]
            carried.add(edit.template)
    # and the corpus exercises every one of them (pairs are combined from these: tests/offline/templates)
    assert carried == set(PRIORS) - {template.id for template in COMBINED}


def test_families_emit_only_the_templates_they_declare() -> None:
    emitted: dict[str, set[str]] = defaultdict(set)
    for source in corpus():
        facts = FileFacts(source, PATH, ast.parse(source))
        ctx = Context(facts, Renderer(facts), HINTS)
        for line in range(1, facts.lines.line_count + 1):
            for family, mutation in family_mutations(ctx, line):
                if mutation is not None:
                    assert mutation.template in family.templates, (family.name, mutation.template.id)
                    emitted[family.name].add(mutation.template.id)
    assert set(emitted) == {family.name for family in FAMILIES}  # every family fires on the corpus
