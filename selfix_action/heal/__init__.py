"""One heal pipeline behind every front end.

``selfix fix``, ``selfix action``, ``selfix heal`` and ``selfix publish`` translate their argv, environment or
event into a ``HealRequest`` and the ``HealOutcome`` into exit codes and outputs; everything about healing
(JUnit sets, the engine and its hooks, the sandbox and its isolation, trace, memory, the report files) is here.
"""

from selfix_action.heal.pipeline import (
    HealContext,
    Healer,
    HealOutcome,
    default_jobs,
    heal,
    heal_in_sandbox,
    heal_status,
)
from selfix_action.heal.request import EngineChoice, HealRequest, resolve_test_cmd

__all__ = [
    "EngineChoice",
    "HealContext",
    "HealOutcome",
    "HealRequest",
    "Healer",
    "default_jobs",
    "heal",
    "heal_in_sandbox",
    "heal_status",
    "resolve_test_cmd",
]
