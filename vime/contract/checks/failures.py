"""FAILED samples (``--hook-failure fail-sample``): VIM180 the error record, VIM181 nothing
trainable; and the batch seen without them, for the checks that read rewards and responses.

A FAILED sample stays in its group so group sizes hold, but its reward is None and it may have
no response: the per-sample checks other than these two skip it, and the batch checks that read
rewards, responses or per-token lists see :func:`without_failed` (the group-size, group-count,
``group_index``, ``index`` and shared-object checks see every sample).

Usage::

    check_vim180(sample, Loc("samples[0][2]", index=2), CheckSettings(), "train")
    scored = without_failed(shape)        # Shape without FAILED leaves (empty rollouts dropped)

See ``docs/contract.md`` §6b.
"""

from __future__ import annotations

import math
from typing import Any

from vime.contract.checks.locations import Loc
from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.shape import Rollout, Shape
from vime.contract.checks.typecheck import describe_value
from vime.contract.errors import Violation
from vime.contract.invariants import INVARIANTS
from vime.utils.types import Sample

__all__ = ["ERROR_KEY", "ERROR_RECORD_KEYS", "FAILED_CHECKS", "FAILED_SAMPLE_CHECKS", "UNSCORED", "WHOLE_GROUP_CHECKS",
           "check_vim180", "check_vim181", "error_record_problem", "is_failed", "without_failed"]

#: The ``metadata`` key of a FAILED sample's error record.
ERROR_KEY = "vime_error"
#: The record's keys and their types: the call that failed (``"generate"``/``"reward"``), the
#: exception class name (``"Unscored"`` for a reward of None), its message, seconds it ran.
ERROR_RECORD_KEYS: dict[str, type | tuple[type, ...]] = {
    "hook": str, "type": str, "message": str, "seconds": (int, float)}
#: ``type`` of a reward hook that returned None ("could not score").
UNSCORED = "Unscored"


def is_failed(sample: Any) -> bool:
    """``sample`` is a ``Sample`` whose ``status`` is ``Sample.Status.FAILED``."""
    return isinstance(sample, Sample) and sample.status is Sample.Status.FAILED


def error_record_problem(record: Any) -> str | None:
    """What is wrong with a ``metadata["vime_error"]`` value, or None when it is well formed
    (a dict with :data:`ERROR_RECORD_KEYS` of those types, ``seconds`` finite and >= 0)."""
    if record is None:
        return "is missing"
    if not isinstance(record, dict):
        return f"is {describe_value(record)}, expected a dict"
    missing = [k for k in ERROR_RECORD_KEYS if k not in record]
    if missing:
        return f"lacks {', '.join(repr(k) for k in missing)}"
    for key, kind in ERROR_RECORD_KEYS.items():
        value = record[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            expected = "a number of seconds" if key == "seconds" else "a str"
            return f"[{key!r}] is {describe_value(value)}, expected {expected}"
    seconds = record["seconds"]
    if not (math.isfinite(seconds) and seconds >= 0):
        return f"['seconds'] is {seconds}, expected a finite number >= 0"
    return None


def check_vim180(sample: Sample, loc: Loc, s: CheckSettings, stage: str) -> list[Violation]:
    """VIM180: a FAILED sample carries ``metadata["vime_error"]`` = ``{"hook": str, "type":
    str, "message": str, "seconds": float >= 0}``."""
    if not is_failed(sample):
        return []
    record = sample.metadata.get(ERROR_KEY) if isinstance(sample.metadata, dict) else None
    problem = error_record_problem(record)
    if problem is None:
        return []
    return [INVARIANTS["VIM180"].violation(loc.at("metadata"), problem=problem)]


def check_vim181(sample: Sample, loc: Loc, s: CheckSettings, stage: str) -> list[Violation]:
    """VIM181: a FAILED sample trains nothing: ``remove_sample`` is True or its ``loss_mask``
    is all zero (a mask of None trains every response token)."""
    if not is_failed(sample) or sample.remove_sample:
        return []
    mask = sample.loss_mask
    rl = sample.response_length if isinstance(sample.response_length, int) else 0
    if isinstance(mask, list) and not any(mask):
        return []
    if mask is None and rl <= 0:
        return []
    what = "is None (every response token trains)" if mask is None else "has trainable tokens"
    return [INVARIANTS["VIM181"].violation(loc.at("loss_mask"), problem=f"{what} and "
                                           "remove_sample is False")]


#: The checks a FAILED leaf gets instead of the per-sample ones.
FAILED_CHECKS = {"VIM180": check_vim180, "VIM181": check_vim181}
#: Per-sample checks a FAILED leaf still gets: field types, token ids (conversion builds its
#: row from them), status. The others read the reward, the response or per-token lists, which
#: conversion replaces for a FAILED sample.
FAILED_SAMPLE_CHECKS: tuple[str, ...] = ("VIM105", "VIM106", "VIM111")
#: Batch checks that count every sample, FAILED ones included (group sizes and count,
#: ``group_index``, ``index``, shared objects); the others see :func:`without_failed`.
WHOLE_GROUP_CHECKS: frozenset[str] = frozenset({"VIM103", "VIM104", "VIM113", "VIM114",
                                                "VIM123"})


def without_failed(shape: Shape) -> Shape:
    """``shape`` without its FAILED leaves; rollouts left empty are dropped, groups kept (maybe
    empty) so that ``group_prefixes`` still line up."""
    if not any(is_failed(leaf.sample) for leaf in shape.leaves):
        return shape
    groups = []
    for group in shape.groups:
        kept = []
        for rollout in group:
            leaves = [leaf for leaf in rollout.leaves if not is_failed(leaf.sample)]
            if leaves:
                kept.append(Rollout(rollout.prefix, leaves))
        groups.append(kept)
    out = Shape(depth=shape.depth, groups=groups,
                leaves=[leaf for leaf in shape.leaves if not is_failed(leaf.sample)])
    out.group_prefixes = list(shape.group_prefixes)
    return out
