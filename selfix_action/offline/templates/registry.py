"""Every repair template and every family that generates candidates, in order.

`TEMPLATES` is the single source of the priors: hand-set, they follow the frequency ordering of
studies of single-statement bug fixes (ManySStuBs4J, PySStuBs, TSSB-3M), most frequent fix kind
first. Identifier, operand, argument, function-name and attribute changes are the most frequent;
operator, literal and off-by-one changes are rarer but cheap and precise. Priors rank *kinds* of
edit, not individual candidates.

The families after `return_replace` (unbound_name ... literal_to_name, edit_pair) are the repairs real bugs needed
(issue 14). Their priors are learned from 86 real fixes outside the real-bug benchmark
(`python -m selfix_bench.priors`, record in `bench/realbugs/priors.json`): the share of the
fixes' code hunks each template reproduces, on the hand priors' scale. Six reproduced none and sit
at the smoothed floor (0.099, below every hand prior); string_edit reproduced one (0.296).

The four after them (key_replace ... none_test) are the kinds an adopter's first week showed missing (issue 22):
a wrong dict key, a removed `is not None` check, a format string's fields out of order, a truthiness test meant
as `is not None`. Learned the same way, they reproduced none of the 331 hunks and sit at the floor too; they
propose few candidates each, and the learned order weighs a template's prior by its candidates on the line, so
their fixes are still reached early (tests/offline/test_adopter_bugs.py heals each kind).

The family lists are the dispatch order. At each expression node (pre-order) the families whose
kinds match run in list order, then at each statement the statement families, then at each
function covering the line the function families. Candidates of equal prior and size keep that
order, so reordering a list changes which of two equivalent renderings wins and the order of
equally ranked candidates.
"""

from __future__ import annotations

from typing import Any

from selfix_action.offline.templates import (
    bounds,
    calls,
    conditions,
    constants,
    defaults,
    fields,
    guards,
    keys,
    keywords,
    literals,
    methods,
    names,
    nones,
    operators,
    pairs,
    statements,
    strings,
)
from selfix_action.offline.templates.family import Family
from selfix_action.offline.templates.values import Template

TEMPLATES: tuple[Template, ...] = (
    names.NAME_REPLACE,
    operators.OPERAND_REPLACE,
    calls.ARG_ADD,
    calls.ARG_DROP,
    calls.ARG_SWAP,
    names.TARGET_SWAP,
    names.SIBLING_CALL,
    calls.WRAP_CALL,
    calls.UNWRAP_CALL,
    names.ATTRIBUTE_REPLACE,
    constants.LITERAL_TWEAK,
    conditions.CONDITION_NARROW,
    conditions.CONDITION_WIDEN,
    conditions.CONDITION_NEGATE,
    constants.ITERABLE_ADD,
    constants.BOOL_FLIP,
    operators.BINOP_REPLACE,
    operators.COMPARE_REPLACE,
    operators.BOOLOP_REPLACE,
    operators.UNARY_REPLACE,
    bounds.OFF_BY_ONE,
    bounds.SLICE_ADD,
    defaults.MUTABLE_DEFAULT,
    strings.STRING_EDIT,  # a real-bug repair, learned above the statement edits
    statements.STMT_INSERT,
    statements.STMT_DELETE,
    statements.RETURN_REPLACE,
    names.UNBOUND_NAME,
    keywords.KEYWORD_ADD,
    methods.SIBLING_METHOD,
    guards.NONE_GUARD,
    literals.LITERAL_TO_NAME,
    keys.KEY_REPLACE,
    nones.NONE_CHECK,
    fields.FIELD_SWAP,
    nones.NONE_TEST,
    pairs.EDIT_PAIR,
)

# Templates no family emits: `pairs.pair_edits` combines verified single edits into them.
COMBINED: tuple[Template, ...] = (pairs.EDIT_PAIR,)

# Template id -> prior, for callers that rank or report by id.
PRIORS: dict[str, float] = {template.id: template.prior for template in TEMPLATES}

EXPRESSION_FAMILIES: tuple[Family[Any], ...] = (
    # ast.Name
    names.NAME_REPLACE_FAMILY,
    bounds.SLICE_ADD_FAMILY,
    # ast.Constant
    constants.BOOL_FLIP_FAMILY,
    constants.LITERAL_TWEAK_FAMILY,
    # ast.Attribute
    names.ATTRIBUTE_REPLACE_FAMILY,
    # ast.Call
    names.SIBLING_CALL_FAMILY,
    calls.ARG_SWAP_FAMILY,
    calls.ARG_DROP_FAMILY,
    calls.ARG_ADD_FAMILY,
    calls.UNWRAP_CALL_FAMILY,
    bounds.RANGE_BOUNDS_FAMILY,
    # ast.BinOp
    operators.BINOP_REPLACE_FAMILY,
    operators.BINOP_OPERANDS_FAMILY,
    # ast.Compare
    operators.COMPARE_REPLACE_FAMILY,
    operators.COMPARE_OPERANDS_FAMILY,
    bounds.COMPARE_BOUNDS_FAMILY,
    # ast.BoolOp
    operators.BOOLOP_REPLACE_FAMILY,
    conditions.OPERAND_DROP_FAMILY,
    # ast.UnaryOp
    operators.UNARY_REPLACE_FAMILY,
    # ast.Subscript
    bounds.SUBSCRIPT_BOUNDS_FAMILY,
    # ast.List / ast.Tuple / ast.Set
    constants.ITERABLE_ADD_FAMILY,
    names.TARGET_SWAP_FAMILY,
    # any truth test
    conditions.CONDITION_FAMILY,
    # names, attributes, subscripts, calls, binary operations
    calls.WRAP_CALL_FAMILY,
    # the real-bug repairs, last: dispatch order only breaks ties of equal prior and size
    names.UNBOUND_NAME_FAMILY,
    literals.LITERAL_TO_NAME_FAMILY,
    strings.STRING_EDIT_FAMILY,
    methods.SIBLING_METHOD_FAMILY,
    keywords.KEYWORD_ADD_FAMILY,
    # the adopter's missed kinds (issue 22)
    keys.KEY_REPLACE_FAMILY,
    fields.JOINED_SWAP_FAMILY,
    fields.PERCENT_SWAP_FAMILY,
    nones.NONE_CHECK_TEST_FAMILY,
    nones.NONE_TEST_FAMILY,
    nones.NONE_DEFAULT_FAMILY,
)

STATEMENT_FAMILIES: tuple[Family[Any], ...] = (
    operators.AUGASSIGN_REPLACE_FAMILY,
    statements.RETURN_VALUE_FAMILY,
    statements.STMT_DELETE_FAMILY,
    statements.STMT_INSERT_FAMILY,
    guards.NONE_GUARD_FAMILY,
    nones.NONE_CHECK_STATEMENT_FAMILY,
)

FUNCTION_FAMILIES: tuple[Family[Any], ...] = (defaults.MUTABLE_DEFAULT_FAMILY,)

FAMILIES: tuple[Family[Any], ...] = (*EXPRESSION_FAMILIES, *STATEMENT_FAMILIES, *FUNCTION_FAMILIES)


def _check() -> None:
    """Fail at import on a registry that would mislabel or misroute candidates."""
    ids = [template.id for template in TEMPLATES]
    if len(set(ids)) != len(ids):
        raise RuntimeError(f"duplicate template ids: {ids}")
    known = set(TEMPLATES) - set(COMBINED)
    for family in FAMILIES:
        unknown = [template.id for template in family.templates if template not in known]
        if unknown:
            raise RuntimeError(f"family {family.name} emits unregistered templates {unknown}")
    families = [family.name for family in FAMILIES]
    if len(set(families)) != len(families):
        raise RuntimeError(f"duplicate family names: {families}")
    for group, sites in (
        (EXPRESSION_FAMILIES, ("expression", "test")),
        (STATEMENT_FAMILIES, ("statement",)),
        (FUNCTION_FAMILIES, ("function",)),
    ):
        for family in group:
            if family.site not in sites:
                raise RuntimeError(f"family {family.name} ({family.site}) is listed with the {sites[0]} families")


_check()
