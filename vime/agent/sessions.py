"""One session per trajectory: the calls an agent made through the endpoint, keyed by the
token handed to it as ``api_key`` (and in its ``base_url``), so concurrent trajectories never
mix.

Usage::

    store = SessionStore()
    session = store.open(index=3, router_key="5f0c...")    # before the agent runs
    session.key                                             # "vime-3-1a2b..." (the api_key)
    store.get("vime-3-1a2b...")                             # the endpoint, per request
    calls = store.close(session.key).calls                  # after the agent returned

A closed session refuses new calls (HTTP 401), and a call that finishes after its session was
closed is not recorded: a trajectory is exactly the calls that completed while its agent ran.
"""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import dataclass, field

from vime.agent.assemble import CallRecord, Segment, segment_calls
from vime.agent.render import ChatTurn

__all__ = ["Session", "SessionStore", "TextTurn"]

#: ``(prompt_text, completion_text, prompt_ids, completion_ids)`` of one ``/v1/completions``
#: call, kept to splice the next one.
TextTurn = tuple[str, str, tuple[int, ...], tuple[int, ...]]


@dataclass(slots=True)
class Session:
    """The calls of one trajectory (one agent run on one sample)."""

    #: The session token (the ``api_key`` and the ``/sessions/<key>/v1`` base URL part).
    key: str
    #: The sample's ``index`` (for messages), and the router key that keeps its calls on one
    #: engine (``Sample.session_id``).
    index: int | None = None
    router_key: str | None = None
    #: Completed calls, in completion order.
    calls: list[CallRecord] = field(default_factory=list)
    chat_turns: list[ChatTurn] = field(default_factory=list)
    text_turns: list[TextTurn] = field(default_factory=list)
    #: Calls in flight now; calls dropped because the client went away or the session closed.
    in_flight: int = 0
    dropped: int = 0
    #: Calls answered ``length`` without an engine call (no budget left).
    budget_refusals: int = 0
    #: Request fields served with the run's value instead (field -> count).
    overrides: Counter[str] = field(default_factory=Counter)
    closed: bool = False

    def record(self, call: CallRecord, chat: ChatTurn | None = None,
               text: TextTurn | None = None) -> bool:
        """Keep a completed call (False, not kept, when the session is closed)."""
        if self.closed:
            self.dropped += 1
            return False
        self.calls.append(call)
        if chat is not None:
            self.chat_turns.append(chat)
        if text is not None:
            self.text_turns.append(text)
        return True

    def response_so_far(self, prompt_ids: list[int]) -> int:
        """Response tokens the trajectory already holds before a call with ``prompt_ids``: the
        prompt's length past the start of the segment it extends (0 for a new segment)."""
        segments: list[Segment] = segment_calls(self.calls)
        for seg in reversed(segments):
            if seg.extended_by(prompt_ids):
                return len(prompt_ids) - len(seg.prompt_ids)
        return 0


class SessionStore:
    """The open sessions of one endpoint."""

    def __init__(self) -> None:
        self._open: dict[str, Session] = {}

    def open(self, *, index: int | None = None, router_key: str | None = None) -> Session:
        """A new session with an unguessable key (``vime-<index>-<32 hex>``)."""
        key = f"vime-{index if index is not None else 'x'}-{secrets.token_hex(16)}"
        session = self._open[key] = Session(key=key, index=index, router_key=router_key)
        return session

    def get(self, key: str) -> Session | None:
        """The open session of ``key``, or None (unknown or closed)."""
        return self._open.get(key)

    def close(self, key: str) -> Session:
        """Close the session of ``key`` and return it; later calls are refused or dropped.

        Raises:
            KeyError: no open session has that key.
        """
        session = self._open.pop(key)
        session.closed = True
        return session

    def __len__(self) -> int:
        return len(self._open)
