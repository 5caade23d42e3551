"""What ``--hook-failure`` does when a hook call fails, and failed samples as data: the one
decision (raise, or fail the sample and record why), the error record, the step's failure
metrics and the stop rule of ``--max-failed-ratio``. Pure functions; no I/O.

Usage::

    raised = settle_failed_call(args, [sample], "reward", exc, seconds, path=path)
    if raised is not None:          # --hook-failure raise: the hook's exception, noted
        raise raised from raised.__cause__
    if reward is None and settle_unscored(args, sample, seconds, message="..."):
        ...                         # --hook-failure fail-sample: FAILED, type "Unscored"

    mark_failed(sample, "reward", exc, seconds=1.3)    # status FAILED, metadata["vime_error"]
    sample.metadata["vime_error"]    # {"hook": "reward", "type": "ValueError",
                                     #  "message": "no answer", "seconds": 1.3}
    failure_metrics(samples)         # {"rollout/failed/count": 1.0, "rollout/failed/ratio": 0.125,
                                     #  "rollout/failed/reward/ValueError": 1.0}
    message = too_many_failed(samples, max_ratio=0.5)  # None, or why the run stops

A failed sample stays in its group (group sizes hold) but trains nothing: :func:`mark_failed`
zeroes its loss mask and sets ``remove_sample``, conversion zeroes the mask again and leaves it
out of its group's reward mean and standard deviation (``vime.data.batch_builder``), and the
runtime contract accepts it only with a well-formed record (VIM180) and no trainable token
(VIM181). The record's shape is ``vime.contract.checks.failures.ERROR_RECORD_KEYS``.
"""

from __future__ import annotations

import math
from argparse import Namespace
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vime.config.defaults import arg
from vime.contract.checks.failures import ERROR_KEY, UNSCORED, is_failed
from vime.utils.types import Sample

__all__ = ["ERROR_KEY", "FAILED_PREFIX", "MESSAGE_CHARS", "UNSCORED", "HookFailureError",
           "error_record", "fail_sample", "failure_counts", "failure_metrics", "is_failed",
           "mark_failed", "settle_failed_call", "settle_unscored", "too_many_failed"]

#: Prefix of the failure metrics (``rollout/failed/count``, ``.../<hook>/<ExceptionType>``).
FAILED_PREFIX = "rollout/failed/"
#: Characters of an exception message kept in the record (the rest is cut).
MESSAGE_CHARS = 500


class HookFailureError(RuntimeError):
    """The run stops: more than ``--max-failed-ratio`` of a step's samples failed."""


def fail_sample(args: Namespace) -> bool:
    """Whether the run's policy is ``--hook-failure fail-sample`` (else ``raise``, the default)."""
    return bool(arg(args, "hook_failure") == "fail-sample")


def settle_failed_call(args: Namespace, samples: Sequence[Sample], hook: str,
                       exc: BaseException, seconds: float, *, path: str | None,
                       prepare: Callable[[Sample], None] | None = None) -> BaseException | None:
    """Apply ``--hook-failure`` to one hook call that raised or timed out: the one place that
    decides, for the default rollout's generate and reward calls and for ``vime-lint check``.

    Args:
        samples: the samples the call was for (one, or a group for a ``--group-rm`` reward).
        hook: ``"generate"`` or ``"reward"``.
        exc: what the call raised (a ``TimeoutError`` naming the flag for a timeout).
        seconds: how long it ran (wall-clock seconds).
        path: the hook as the user named it (its ``--*-path`` value, or ``--rm-type X``).
        prepare: under ``fail-sample``, called on each sample before it is marked (the default
            rollout cuts back what a failed generate appended).

    Returns:
        ``raise``: ``exc`` itself with a note naming the call, the first sample and the policy;
        the caller raises it (``raise raised from raised.__cause__``: its own cause kept, the
        wrapper of the call left out). ``fail-sample``: None, after every
        sample not already FAILED was marked (:func:`mark_failed`, the record names ``exc``).
    """
    if not fail_sample(args):
        first = samples[0] if samples else None
        where = (f" on sample index={first.index} (group_index={first.group_index})"
                 if first is not None else "")
        exc.add_note(f"vime: {hook} call {path} failed{where} after {seconds:.1f} s; "
                     "--hook-failure raise stops the run (fail-sample would fail only this "
                     "sample)")
        return exc
    for sample in samples:
        if not is_failed(sample):
            if prepare is not None:
                prepare(sample)
            mark_failed(sample, hook, exc, seconds)
    return None


def settle_unscored(args: Namespace, sample: Sample, seconds: float, *, message: str) -> bool:
    """A reward of None for ``sample``: under ``--hook-failure fail-sample`` the sample is marked
    FAILED with type ``Unscored`` and ``message`` (True); under ``raise`` nothing changes (False)
    and the reward boundary's check reports the None (VIM110)."""
    if not fail_sample(args):
        return False
    if not is_failed(sample):
        mark_failed(sample, "reward", None, seconds, type_name=UNSCORED, message=message)
    return True


def error_record(hook: str, exc: BaseException | None, seconds: float, *,
                 type_name: str | None = None, message: str | None = None) -> dict[str, Any]:
    """The ``metadata["vime_error"]`` record of one failure.

    Args:
        hook: ``"generate"`` or ``"reward"`` (the call that failed).
        exc: the exception (its class name is ``type``, its text ``message``), or None with
            ``type_name`` (``"Unscored"`` for a reward of None).
        seconds: how long the call ran before it failed (wall-clock seconds, >= 0).
        type_name, message: override the exception's class name and text.

    Returns:
        ``{"hook": str, "type": str, "message": str, "seconds": float}``.
    """
    kind = type_name or (type(exc).__name__ if exc is not None else "Error")
    text = message if message is not None else (str(exc) if exc is not None else "")
    if not text and isinstance(exc, TimeoutError):
        text = "timed out"
    return {"hook": hook, "type": kind, "message": text[:MESSAGE_CHARS],
            "seconds": round(max(0.0, float(seconds)), 6)}


def mark_failed(sample: Sample, hook: str, exc: BaseException | None, seconds: float, *,
                type_name: str | None = None, message: str | None = None) -> Sample:
    """Mark ``sample`` FAILED in place: ``status``, ``metadata["vime_error"]``
    (:func:`error_record`), ``reward = None``, ``loss_mask`` zeros of ``response_length`` and
    ``remove_sample = True`` (nothing of it trains). Returns the sample."""
    sample.status = Sample.Status.FAILED
    if not isinstance(sample.metadata, dict):
        sample.metadata = {}
    sample.metadata[ERROR_KEY] = error_record(hook, exc, seconds, type_name=type_name,
                                              message=message)
    sample.reward = None
    rl = sample.response_length if isinstance(sample.response_length, int) else 0
    sample.loss_mask = [0] * max(0, rl)
    sample.remove_sample = True
    return sample


def failure_counts(samples: Iterable[Sample]) -> Counter[tuple[str, str]]:
    """``(hook, type) -> count`` over the FAILED samples (records missing a field count under
    ``"unknown"``)."""
    counts: Counter[tuple[str, str]] = Counter()
    for s in samples:
        if is_failed(s):
            rec = s.metadata.get(ERROR_KEY) if isinstance(s.metadata, dict) else None
            rec = rec if isinstance(rec, dict) else {}
            counts[(str(rec.get("hook", "unknown")), str(rec.get("type", "unknown")))] += 1
    return counts


def failure_metrics(samples: Sequence[Sample]) -> dict[str, float]:
    """``rollout/failed/count``, ``rollout/failed/ratio`` (over ``len(samples)``; 0.0 when
    empty) and ``rollout/failed/<hook>/<ExceptionType>`` per kind present."""
    counts = failure_counts(samples)
    total = sum(counts.values())
    out = {FAILED_PREFIX + "count": float(total),
           FAILED_PREFIX + "ratio": total / len(samples) if samples else 0.0}
    for (hook, kind), n in sorted(counts.items()):
        out[f"{FAILED_PREFIX}{hook}/{kind}"] = float(n)
    return out


def too_many_failed(samples: Sequence[Sample], max_ratio: float, *, where: str = "this step",
                    top: int = 3) -> str | None:
    """Why the run stops, or None: the FAILED fraction of ``samples`` is above ``max_ratio``.

    The message names the ratio, the ``top`` most common ``hook``/``type`` pairs with their
    counts and one example message each, and the fix.
    """
    if not samples or not math.isfinite(max_ratio):
        return None
    failed = [s for s in samples if is_failed(s)]
    ratio = len(failed) / len(samples)
    if ratio <= max_ratio:
        return None
    counts = failure_counts(failed)
    examples: dict[tuple[str, str], str] = {}
    # the example of each kind is its lowest-index sample (completion order varies per run)
    for s in sorted(failed, key=lambda s: (s.index is None, s.index or 0)):
        rec = s.metadata.get(ERROR_KEY) if isinstance(s.metadata, dict) else None
        rec = rec if isinstance(rec, dict) else {}
        key = (str(rec.get("hook", "unknown")), str(rec.get("type", "unknown")))
        examples.setdefault(key, f"sample index={s.index}: {rec.get('message', '')!s:.200}")
    lines = [f"{len(failed)} of {len(samples)} samples failed in {where} (ratio {ratio:.2f} > "
             f"--max-failed-ratio {max_ratio:g}); most common errors:"]
    for (hook, kind), n in counts.most_common(top):
        lines.append(f"  {hook}/{kind}: {n} sample(s), e.g. {examples[(hook, kind)]}")
    lines.append("  fix: repair the failing hook (the samples' metadata['vime_error'] holds every "
                 "error), raise --rm-timeout / --custom-generate-timeout if they time out, or "
                 "raise --max-failed-ratio")
    return "\n".join(lines)
