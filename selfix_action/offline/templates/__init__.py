"""Repair templates: AST mutations that propose one-statement fixes at suspicious lines.

Each candidate is rendered as a minimal text edit of the original file and verified to parse to
exactly the intended AST (`render`). The package is laid out by stage:

- `analysis`: file-wide facts (parent slots, scopes and bindings, name/attribute/literal pools)
- `targeting`: which statements and expressions a suspicious line exposes
- `render`: text renderings, tree mutations and their verification; `SourceEdit`
- `model`, `family`: the `Template` (id, prior) and `Family` (generator + templates) contract
- one module per template family: `names`, `calls`, `operators`, `conditions`, `constants`,
  `bounds`, `statements`, `defaults`; and the repairs real bugs need: `guards`, `keywords`,
  `methods` (over `signatures`, callees read from the project's source), `literals`, `strings`; and the
  kinds an adopter's first week showed missing: `keys` (a wrong dict key), `nones` (a removed `is not None`
  check, a truthiness test meant as one), `fields` (a format string's fields out of order)
- `hints`: what the failing run tells beyond the lines (compared strings, the project's files)
- `pairs`: two verified single edits at the two most suspicious lines, combined
- `registry`: every template (the priors' single source) and the families in dispatch order
- `candidates`: the pipeline behind `candidate_edits`
"""

from __future__ import annotations

from selfix_action.offline.templates.candidates import candidate_edits
from selfix_action.offline.templates.hints import Hints
from selfix_action.offline.templates.pairs import pair_edits
from selfix_action.offline.templates.registry import PRIORS, TEMPLATES
from selfix_action.offline.templates.render import SourceEdit
from selfix_action.offline.templates.values import Template

__all__ = ["PRIORS", "TEMPLATES", "Hints", "SourceEdit", "Template", "candidate_edits", "pair_edits"]
