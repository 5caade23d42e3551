"""Findings on an ``--agent-function-path`` run (boundary B2, once per trajectory): what
``run`` returned (VIM185), whether any model call reached the endpoint (VIM186), and calls
still in flight when it returned (VIM187). One pure function per invariant; the runtime call
with ``--contract-check`` applied is ``check_agent_result`` in
:mod:`vime.contract.checks.boundaries`.

Usage::

    check_vim185(result, settings, where="agent result (index=3)")    # Violation | None
    check_vim186(calls=0, where="agent run (index=3)")                  # VIM186 error
    check_vim187(in_flight=1, where="agent run (index=3)")              # VIM187 warning

See ``docs/contract.md`` §5 and §6b.
"""

from __future__ import annotations

import inspect
from typing import Any

from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.typecheck import describe_value
from vime.contract.checks.values import reward_problem
from vime.contract.errors import Violation
from vime.contract.invariants import INVARIANTS

__all__ = ["agent_result_problems", "check_vim185", "check_vim186", "check_vim187"]


def check_vim185(result: Any, s: CheckSettings, where: str) -> Violation | None:
    """VIM185: ``result`` is None (unscored), a finite real or a dict holding a finite real
    under ``--reward-key``; a bool warns (as for rewards). A returned coroutine is closed."""
    if result is None:
        return None
    inv = INVARIANTS["VIM185"]
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()
        return inv.violation(where, problem="is an awaitable: the agent returned an un-awaited "
                             "coroutine instead of its reward")
    found = reward_problem(result, s.reward_key)
    if found is None:
        return None
    severity, text = found
    return inv.violation(where, severity=severity,
                         problem=f"{text} (the agent returned {describe_value(result)})")


def check_vim186(calls: int, where: str) -> Violation | None:
    """VIM186: the run recorded at least one model call (``calls`` > 0)."""
    if calls > 0:
        return None
    return INVARIANTS["VIM186"].violation(where, problem=(
        "recorded no model call: run returned without a completed request to the base_url "
        "and api_key it was given, so the trajectory has no model tokens to train on"))


def check_vim187(in_flight: int, where: str) -> Violation | None:
    """VIM187: no call of the run was still in flight when it returned (warning)."""
    if in_flight <= 0:
        return None
    return INVARIANTS["VIM187"].violation(where, problem=(
        f"returned while {in_flight} model call(s) were still running: they are not part of "
        "the trajectory"))


def agent_result_problems(result: Any, s: CheckSettings, *, calls: int, in_flight: int,
                          index: int | None = None) -> list[Violation]:
    """VIM185, VIM186 and VIM187 on one agent run, in that order."""
    at = f" (index={index})" if index is not None else ""
    found = [check_vim185(result, s, f"agent function result{at}"),
             check_vim186(calls, f"agent run{at}"), check_vim187(in_flight, f"agent run{at}")]
    return [v for v in found if v is not None]
