"""All findings for one rollout function result (B1 metrics, B5 train output, B6 eval output).

Pure: no logging, no raising, no context; ``vime.contract.checks.checker.validate_rollout_output``
adds the hook's name and step and applies ``--contract-check``; the ``vime-lint check``
harness and the benchmark call this directly.

Usage::

    found = collect_rollout_output(output, CheckSettings.from_args(args), evaluation=False)

See ``docs/contract.md`` §3 and §6b.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from vime.contract.checks.batch import BATCH_CHECKS, OutputInfo, check_metrics
from vime.contract.checks.evaluation import check_eval_data
from vime.contract.checks.failures import (
    FAILED_CHECKS,
    FAILED_SAMPLE_CHECKS,
    WHOLE_GROUP_CHECKS,
    is_failed,
    without_failed,
)
from vime.contract.checks.field_reports import check_field_reports
from vime.contract.checks.sample import SAMPLE_CHECKS, check_sample, proven_clean
from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.shape import read_shape
from vime.contract.errors import Violation
from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput, check_vim101

__all__ = ["collect_rollout_output", "collect_train_samples"]


def collect_train_samples(samples: Any, s: CheckSettings, info: OutputInfo) -> list[Violation]:
    """B5: the shape (VIM102), every leaf (VIM105-VIM111), the batch (VIM103-VIM120) and the
    failures reported in other frameworks (VIM170-VIM177). A FAILED leaf gets VIM180/VIM181
    and the field checks conversion still relies on (``FAILED_SAMPLE_CHECKS``), and the batch checks that read rewards or responses see the batch without FAILED
    leaves (``WHOLE_GROUP_CHECKS`` see every leaf)."""
    shape, found = read_shape(samples, s)
    if shape is None:
        return found
    proven: dict[int, frozenset[str]] = {}
    for leaf in shape.leaves:
        if is_failed(leaf.sample):
            for inv_id in FAILED_SAMPLE_CHECKS:
                found.extend(SAMPLE_CHECKS[inv_id](leaf.sample, leaf.loc, s, "train"))
            for failed_check in FAILED_CHECKS.values():
                found.extend(failed_check(leaf.sample, leaf.loc, s, "train"))
            continue
        clean = proven_clean(leaf.sample)
        if clean:
            proven[id(leaf.sample)] = clean
        leaf_found = check_sample(leaf.sample, leaf.loc, s, "train", clean)
        if leaf_found:
            found.extend(leaf_found)
    scored = without_failed(shape)
    for inv_id, check in BATCH_CHECKS.items():
        found.extend(check(shape if inv_id in WHOLE_GROUP_CHECKS else scored, s, info))
    found.extend(check_field_reports(scored, s, info, proven))
    return found


def collect_rollout_output(output: Any, s: CheckSettings, *, evaluation: bool,
                           is_default_rollout: bool = False, full: bool = True,
                           builtin_metric_keys: Collection[str] = (),
                           name: str = "rollout function") -> list[Violation]:
    """Every finding for a rollout result.

    Args:
        output: ``RolloutFnTrainOutput`` (train) or ``RolloutFnEvalOutput`` (eval); a bare
            list/dict (legacy) is read as ``samples``/``data``.
        s: the settings read from ``args``.
        evaluation: which output is expected.
        is_default_rollout: vime's own rollout (VIM104 is then an error).
        full: False checks only B1 (metrics), for steps skipped by the interval.
        builtin_metric_keys: metric names vime sets itself (VIM119 clashes).
        name: the rollout function's dotted path, for VIM101 messages.

    Returns:
        ``list[Violation]`` in check order (shape, samples, batch).
    """
    kind = [v for v in check_vim101(output, evaluation=evaluation, name=name, where="output")
            if v.severity == "error"]   # a legacy bare list/dict is read as samples/data
    if evaluation:
        if kind and not isinstance(output, RolloutFnEvalOutput):
            return kind
        if isinstance(output, RolloutFnEvalOutput):
            data, metrics = output.data, output.metrics
        else:
            data, metrics = output, None
        found = check_metrics(metrics, builtin_keys=builtin_metric_keys)
        if full:
            found.extend(check_eval_data(data, s))   # VIM130 reads a non-dict `data`
        return found
    if kind and not isinstance(output, RolloutFnTrainOutput):
        return kind
    if isinstance(output, RolloutFnTrainOutput):
        samples, metrics = output.samples, output.metrics
        finalized = bool(getattr(output, "finalized", False))
    else:
        samples, metrics, finalized = output, None, False
    found = check_metrics(metrics, builtin_keys=builtin_metric_keys)
    if full:
        found.extend(collect_train_samples(
            samples, s, OutputInfo(is_default_rollout=is_default_rollout, finalized=finalized)))
    return found
