"""What happened to each sample of a step (its *fate*), and the groups a rollout dropped.

Usage::

    fate, reason = sample_fate(sample)          # ("trained", ""), ("failed", "reward/ValueError: ..")
    note_dropped(args, rollout_id, group, FILTERED, "zero_std_1.0")   # the default rollout
    take_dropped(rollout_id)                    # [(group, fate, reason), ...], then forgotten

The fates (:data:`FATES`): ``trained`` (some loss-mask entry is 1), ``masked`` (every entry is
0), ``removed`` (``remove_sample``), ``failed`` (``Sample.Status.FAILED``: a hook raised or timed
out; ``metadata["vime_error"]`` says which and why), ``filtered`` (its group was dropped by
``--dynamic-sampling-filter-path``), ``stale`` (its group lagged more than ``--max-staleness``
weight versions). The last two are never returned by a rollout: the rollout notes them here
(only with ``--dump-rollouts``, so nothing is kept otherwise) and the rollout manager takes
them after the step. Standard library only.
"""

from __future__ import annotations

import threading
from argparse import Namespace
from typing import Any

from vime.contract.checks.failures import ERROR_KEY, is_failed

__all__ = ["FAILED", "FATES", "FILTERED", "MASKED", "REMOVED", "STALE", "TRAINED", "note_dropped",
           "sample_fate", "take_dropped"]

TRAINED = "trained"
MASKED = "masked"
REMOVED = "removed"
FAILED = "failed"
FILTERED = "filtered"
STALE = "stale"
#: Every fate, in the order the report lists them.
FATES = (TRAINED, MASKED, REMOVED, FAILED, FILTERED, STALE)

_DROPPED: dict[int, list[tuple[Any, str, str]]] = {}
_LOCK = threading.Lock()


def error_of(sample: Any) -> dict[str, Any]:
    """``metadata["vime_error"]`` of a sample, or ``{}``."""
    meta = getattr(sample, "metadata", None)
    rec = meta.get(ERROR_KEY) if isinstance(meta, dict) else None
    return rec if isinstance(rec, dict) else {}


def sample_fate(sample: Any) -> tuple[str, str]:
    """``(fate, reason)`` of a sample the rollout returned (one of ``trained``, ``masked``,
    ``removed``, ``failed``); the reason is "" for ``trained``."""
    if is_failed(sample):
        rec = error_of(sample)
        return FAILED, (f"{rec.get('hook', 'unknown')}/{rec.get('type', 'unknown')}: "
                        f"{rec.get('message', '')}")
    if getattr(sample, "remove_sample", False):
        return REMOVED, "remove_sample is True (set by a hook)"
    mask = getattr(sample, "loss_mask", None)
    if mask is not None and len(mask) > 0 and not any(int(m) for m in mask):
        return MASKED, "every loss_mask entry is 0"
    if mask is not None and len(mask) == 0 and int(getattr(sample, "response_length", 0)) == 0:
        return MASKED, "no response tokens"
    return TRAINED, ""


def note_dropped(args: Namespace, rollout_id: int | None, group: Any, fate: str,
                 reason: str) -> None:
    """Keep a group a rollout dropped (``fate``: :data:`FILTERED` or :data:`STALE`, or
    :data:`FAILED` for an all-failed group) for the step's dump; a no-op without
    ``--dump-rollouts``."""
    if rollout_id is None or not getattr(args, "dump_rollouts", False):
        return
    with _LOCK:
        _DROPPED.setdefault(int(rollout_id), []).append((group, fate, reason))


def take_dropped(rollout_id: int) -> list[tuple[Any, str, str]]:
    """The groups noted for ``rollout_id`` (``(group, fate, reason)``), forgotten afterwards."""
    with _LOCK:
        return _DROPPED.pop(int(rollout_id), [])
