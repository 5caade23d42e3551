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

__all__ = ["BudgetRefusal", "note_refusal", "recording"]


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
