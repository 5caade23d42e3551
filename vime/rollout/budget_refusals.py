"""Generate calls refused for lack of response budget, recorded while someone listens.

vime's built-in generate (``vime.rollout.vllm.client.generate``) sends no request when a
sample's response already fills ``sampling_params["max_tokens"]`` (``--rollout-max-response-len``)
or the prompt fills ``--rollout-max-context-len``: the sample comes back TRUNCATED. The agent
endpoint (``vime.agent.calls``) answers a call with no budget left ``finish_reason="length"``
and no text. Either way that turn never runs. In training that is the budget at work (counted
in ``rollout/agent/budget_refusals`` for an agent); ``vime-lint check`` listens
(:func:`recording`) to say which turns its dry run never exercised. Nothing is kept while no
one listens. Standard library only.

Usage::

    with recording() as refused:
        ...                          # the rollout runs
    refused[0].budget                # 32
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["BudgetRefusal", "EngineCall", "engine_calls", "listening_to_calls", "note_call",
           "note_refusal", "recording"]


@dataclass(frozen=True)
class BudgetRefusal:
    """One call that was not sent: no budget was left for it."""

    #: ``"generate"`` (vime's built-in generate) or ``"agent"`` (the agent endpoint).
    where: str
    #: The sample's ``index`` (None when unknown).
    index: int | None
    #: Response tokens the sample (the trajectory's segment) already held.
    used: int
    #: Of those, tokens the engine generated in earlier calls (the model's turns).
    generated: int
    #: The budget that was used up, and the flag that sets it.
    budget: int
    flag: str


_listeners: list[list[BudgetRefusal]] = []


@contextmanager
def recording() -> Iterator[list[BudgetRefusal]]:
    """The refusals noted while the block runs (a list, filled as they happen)."""
    found: list[BudgetRefusal] = []
    _listeners.append(found)
    try:
        yield found
    finally:
        # by identity: two open recordings may hold equal lists
        _listeners[:] = [f for f in _listeners if f is not found]


def note_refusal(refusal: BudgetRefusal) -> None:
    """Tell the open :func:`recording` blocks (none: nothing happens)."""
    for found in _listeners:
        found.append(refusal)


@dataclass(frozen=True)
class EngineCall:
    """One engine call of vime's built-in generate that was sent and answered: how much of
    the response budget it used (a first call that fills it leaves a later turn no room)."""

    #: The sample's ``index`` (None when unknown).
    index: int | None
    #: Response tokens the sample held before the call (0: the sample's first call).
    before: int
    #: Tokens the engine generated in this call.
    generated: int
    #: The call stopped at the budget (finish reason ``length``: the sample is TRUNCATED), or
    #: its tokens reached it.
    filled: bool
    #: The whole budget, and the flag that sets it.
    budget: int
    flag: str


_call_listeners: list[list[EngineCall]] = []


def listening_to_calls() -> bool:
    """True while an :func:`engine_calls` block is open (the generate skips the record else)."""
    return bool(_call_listeners)


@contextmanager
def engine_calls() -> Iterator[list[EngineCall]]:
    """The engine calls noted while the block runs (a list, filled as they happen)."""
    found: list[EngineCall] = []
    _call_listeners.append(found)
    try:
        yield found
    finally:
        _call_listeners[:] = [f for f in _call_listeners if f is not found]


def note_call(call: EngineCall) -> None:
    """Tell the open :func:`engine_calls` blocks (none: nothing happens)."""
    for found in _call_listeners:
        found.append(call)
