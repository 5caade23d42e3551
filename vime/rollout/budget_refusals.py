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
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["BudgetRefusal", "EngineCall", "engine_calls", "listening_to_calls", "note_call",
           "note_refusal", "recording", "recording_refusals"]


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


class _Recorder(Generic[T]):
    """Items noted while a :meth:`recording` block is open, one list per open block."""

    def __init__(self) -> None:
        self._open: list[list[T]] = []

    def active(self) -> bool:
        """True while a :meth:`recording` block is open."""
        return bool(self._open)

    @contextmanager
    def recording(self) -> Iterator[list[T]]:
        """The items noted while the block runs (a list, filled as they happen)."""
        found: list[T] = []
        self._open.append(found)
        try:
            yield found
        finally:
            # by identity: two open recordings may hold equal lists
            self._open[:] = [f for f in self._open if f is not found]

    def note(self, item: T) -> None:
        """Tell the open :meth:`recording` blocks (none: nothing happens)."""
        for found in self._open:
            found.append(item)


_REFUSALS: _Recorder[BudgetRefusal] = _Recorder()
_CALLS: _Recorder[EngineCall] = _Recorder()

#: ``with recording() as refused``: the :class:`BudgetRefusal` of the calls refused in the block.
recording = _REFUSALS.recording
#: Note one refused call (nothing happens while no :func:`recording` block is open).
note_refusal = _REFUSALS.note
#: True while a :func:`recording` block is open.
recording_refusals = _REFUSALS.active
#: ``with engine_calls() as calls``: the :class:`EngineCall` of the calls answered in the block.
engine_calls = _CALLS.recording
#: Note one answered call (nothing happens while no :func:`engine_calls` block is open).
note_call = _CALLS.note
#: True while an :func:`engine_calls` block is open (the generate skips the record else).
listening_to_calls = _CALLS.active
