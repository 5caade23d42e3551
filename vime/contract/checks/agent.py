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

__all__ = ["BUILT_BUT_NOT_CALLED_FIX", "agent_result_problems", "check_vim185", "check_vim186",
           "check_vim187", "uses_base_url"]


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


#: VIM186's fix for an agent that builds its client from ``base_url`` (:func:`uses_base_url`):
#: the client is right, no call on it completed before ``run`` returned.
BUILT_BUT_NOT_CALLED_FIX = ("the agent passes base_url to a call (its client is built from "
                            "the arguments) but no call on that client completed before run "
                            "returned: await a model call on it (await client.chat.completions"
                            ".create(...)) before returning")


def uses_base_url(fn: Any) -> bool | None:
    """True when the source of agent function ``fn`` passes its ``base_url`` parameter to a
    call (``AsyncOpenAI(base_url=base_url, ...)``: the client is built from the arguments),
    False when it does not, None when its source cannot be read."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    return any(isinstance(a, ast.Name) and a.id == "base_url"
               for node in ast.walk(tree) if isinstance(node, ast.Call)
               for a in (*node.args, *(k.value for k in node.keywords)))


def check_vim186(calls: int, where: str, fn: Any = None) -> Violation | None:
    """VIM186: the run recorded at least one model call (``calls`` > 0). ``fn``, the agent
    function, tells a client built from the arguments but never called
    (:data:`BUILT_BUT_NOT_CALLED_FIX`) from one built elsewhere (the invariant's fix)."""
    if calls > 0:
        return None
    built = fn is not None and uses_base_url(fn) is True
    return INVARIANTS["VIM186"].violation(where, problem=(
        "recorded no model call: run returned without a completed request to the base_url "
        "and api_key it was given, so the trajectory has no model tokens to train on"),
        fix=BUILT_BUT_NOT_CALLED_FIX if built else None)


def check_vim187(in_flight: int, where: str) -> Violation | None:
    """VIM187: no call of the run was still in flight when it returned (warning)."""
    if in_flight <= 0:
        return None
    return INVARIANTS["VIM187"].violation(where, problem=(
        f"returned while {in_flight} model call(s) were still running: they are not part of "
        "the trajectory"))


def agent_result_problems(result: Any, s: CheckSettings, *, calls: int, in_flight: int,
                          index: int | None = None, fn: Any = None) -> list[Violation]:
    """VIM185, VIM186 and VIM187 on one agent run, in that order (``fn``: the agent function,
    see :func:`check_vim186`)."""
    at = f" (index={index})" if index is not None else ""
    found = [check_vim185(result, s, f"agent function result{at}"),
             check_vim186(calls, f"agent run{at}", fn), check_vim187(in_flight, f"agent run{at}")]
    return [v for v in found if v is not None]
