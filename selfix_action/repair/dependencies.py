"""Failing tests whose module cannot import a package the project does not provide: the environment's, not the
code's.

A test module that fails to collect with ``No module named 'yaml'`` on a checkout where CI ran it (the report
names its tests, the sandbox's interpreter lacks a dependency the workflow installed elsewhere) has no fix in the
project's code; the only patches that would make it collect remove the import. Healing from collection errors
(``repair/reported.py``) would otherwise take such a module as a bug to fix. A missing name *of the project*
(``No module named 'shop.vat'``, ``cannot import name 'vat' from 'shop.prices'``) is still a bug to heal. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from selfix_action.repair.values import TestResult

_MISSING = re.compile(r"No module named '([\w.]+)'")


@dataclass(frozen=True)
class MissingDependencies:
    tests: tuple[str, ...]
    modules: tuple[str, ...]

    @property
    def detail(self) -> str:
        shown = ", ".join(self.modules)
        return (
            f"{len(self.tests)} failing test module(s) cannot import {shown}, which the project does not provide: "
            "a dependency missing from the environment selfix runs in (install it in the workflow before selfix), "
            "not a bug in the code"
        )


def missing_dependencies(
    failures: Sequence[TestResult], is_project_module: Callable[[str], bool]
) -> MissingDependencies | None:
    """The failing test modules that could not import a top-level package ``is_project_module`` says is not the
    project's; None when there are none."""
    tests: list[str] = []
    modules: list[str] = []
    for failure in failures:
        if failure.exc_type not in ("CollectionError", "ModuleNotFoundError"):
            continue
        found = _MISSING.search(failure.message)
        if found is None:
            continue
        top = found.group(1).split(".")[0]
        if is_project_module(top):
            continue
        tests.append(failure.nodeid)
        modules.append(top)
    return MissingDependencies(tuple(tests), tuple(dict.fromkeys(modules))) if tests else None
