"""The rollout watchdog: when a train step runs longer than ``--rollout-watchdog-secs``, log
once which samples are still pending, in which hook and phase, and for how long.

Usage::

    dog = Watchdog(seconds=600, rollout_id=7, pending=state.pending)
    dog.start()            # a daemon thread: it reports even while a sync hook blocks the loop
    ...                    # the step
    dog.stop()             # before the step returns; a report, if any, was logged once

    format_pending(entries, now=time.monotonic())   # the report's text (pure)

``pending`` maps a key to a :class:`PendingCall`; the default rollout registers every generate,
reward and filter call there while it runs (:mod:`vime.rollout.vllm.hook_calls`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PendingCall", "Watchdog", "format_pending"]

logger = logging.getLogger(__name__)

#: Pending calls listed in one report (the rest are counted).
MAX_LISTED = 20


@dataclass(frozen=True, slots=True)
class PendingCall:
    """One hook call that is running: its sample, the hook, the phase, when it started."""

    index: int | None
    group_index: int | None
    #: ``"generate"``, ``"reward"``, ``"filter"`` or ``"sample_hook"``.
    hook: str
    #: ``"generate"``, ``"reward"`` or ``"filter"``.
    phase: str
    #: The hook's dotted path (None for built-ins without one).
    path: str | None
    #: ``time.monotonic()`` at the start (seconds).
    start: float
    task: Any = None


def format_pending(entries: Iterable[PendingCall], *, now: float, rollout_id: Any = None,
                   elapsed: float | None = None, limit: float | None = None) -> str:
    """The watchdog's report: a header (step, seconds so far, the limit) and one line per
    pending call, longest-running first (at most :data:`MAX_LISTED`)."""
    items = sorted(entries, key=lambda e: e.start)
    head = f"rollout {rollout_id}: the step has run {elapsed or 0:.0f} s"
    if limit is not None:
        head += f" (over --rollout-watchdog-secs {limit:g})"
    head += f"; {len(items)} call(s) still pending"
    lines = [head + (":" if items else " (the loop itself is busy)")]
    for e in items[:MAX_LISTED]:
        lines.append(f"  sample index={e.index} group_index={e.group_index}: phase={e.phase} "
                     f"hook={e.hook}{' ' + e.path if e.path else ''} for {now - e.start:.1f} s")
    if len(items) > MAX_LISTED:
        lines.append(f"  ... and {len(items) - MAX_LISTED} more")
    return "\n".join(lines)


class Watchdog:
    """A one-shot timer thread that logs :func:`format_pending` of ``pending`` once, if the
    step is still running after ``seconds``."""

    def __init__(self, seconds: float, rollout_id: Any, pending: Mapping[Any, PendingCall]
                 ) -> None:
        self.seconds = float(seconds)
        self.rollout_id = rollout_id
        self.pending = pending
        self.report: str | None = None
        self._start = time.monotonic()
        self._timer = threading.Timer(self.seconds, self._fire)
        self._timer.daemon = True

    def start(self) -> None:
        """Start the timer (the step's clock starts at construction)."""
        self._timer.start()

    def stop(self) -> None:
        """Cancel the timer (no report after this)."""
        self._timer.cancel()

    def _fire(self) -> None:
        entries = list(dict(self.pending).values())   # a copy: the loop keeps changing it
        now = time.monotonic()
        self.report = format_pending(entries, now=now, rollout_id=self.rollout_id,
                                     elapsed=now - self._start, limit=self.seconds)
        logger.warning("%s", self.report)
