"""The rollout function's result checked per ``--contract-check`` (B1 metrics, B5 train, B6 eval).

``validate_rollout_output`` reads the settings from ``args``, collects the findings of
``collect_rollout_output``, adds the hook's dotted path, its ``--*-path`` argument and the step
to each, then applies the mode: ``off`` returns ``[]`` without checking, ``warn`` logs and
returns them, ``raise`` raises one ``ContractError`` for the errors. B5/B6 are skipped (only
B1 runs) on steps that ``--contract-check-interval`` leaves out. The hook boundaries (B2-B4)
are in :mod:`vime.contract.checks.boundaries`.

Usage (the rollout manager, every step and eval)::

    out = call_rollout_fn(fn, args, rollout_id, data_source, evaluation=False)
    findings, seconds = run_checks(out, args, evaluation=False, hook_path=path,
                                   rollout_id=rollout_id)
    metrics["perf/contract_check_time"] = seconds
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Sequence
from typing import Any

from vime.config import arg
from vime.contract.checks.policy import WarnOnce, enforce, should_check_settings
from vime.contract.checks.rollout_output import collect_rollout_output
from vime.contract.checks.settings import CheckContext, CheckSettings
from vime.contract.errors import Violation
from vime.contract.hooks import HOOKS

__all__ = ["ContractChecker", "run_checks", "validate_rollout_output", "with_context"]


def with_context(found: Sequence[Violation], ctx: CheckContext) -> list[Violation]:
    text = ctx.describe()
    return [dataclasses.replace(v, context=text) for v in found]


def _rollout_context(args: Any, hook_path: str, evaluation: bool,
                     rollout_id: int | None) -> CheckContext:
    eval_path = arg(args, "eval_function_path")
    hook = "eval_function_path" if evaluation and eval_path else "rollout_function_path"
    return CheckContext(hook, hook_path, rollout_id)


def validate_rollout_output(
    output: Any,
    args: Any,
    *,
    evaluation: bool,
    hook_path: str,
    rollout_id: int | None = None,
    is_default_rollout: bool = False,
    builtin_metric_keys: Collection[str] = (),
    registry: WarnOnce | None = None,
) -> list[Violation]:
    """Check a rollout function's result (B1 metrics; B5 train or B6 eval) per the mode.

    Args:
        output: ``RolloutFnTrainOutput`` (``samples``: ``list[list[Sample]]`` or fan-out
            ``list[list[list[Sample]]]``) or ``RolloutFnEvalOutput`` (``data``: ``{name:
            {"rewards", "truncated", "samples"}}``).
        args: the run's ``argparse.Namespace`` (read with ``getattr``: n_samples_per_prompt,
            rollout_batch_size, reward_key, ..., contract_check, contract_check_interval).
        evaluation: True for an eval step.
        hook_path: the rollout (or eval) function's dotted path, for messages.
        rollout_id: the step; None means unknown (always checked).
        is_default_rollout: vime's default rollout produced it (VIM104 is then an error);
            also True when ``hook_path`` is the default rollout's path.
        builtin_metric_keys: metric keys the manager sets itself (VIM119).
        registry: the once-per-step warning memory (default: one per process).

    Returns:
        Every finding (errors first), each with ``context`` = hook, argument and step; ``[]``
        with ``--contract-check off``.

    Raises:
        ContractError: ``--contract-check raise`` (the default) and at least one error.
        ValueError: an invalid ``--contract-check`` / ``--contract-check-interval``.
    """
    s = CheckSettings.from_args(args)
    if s.mode == "off":
        return []
    default = HOOKS["rollout_function_path"].default
    found = collect_rollout_output(
        output, s, evaluation=evaluation,
        is_default_rollout=is_default_rollout or hook_path == default,
        full=should_check_settings(s, rollout_id, "B6" if evaluation else "B5"),
        builtin_metric_keys=builtin_metric_keys, name=hook_path)
    ctx = _rollout_context(args, hook_path, evaluation, rollout_id)
    return enforce(with_context(found, ctx), s.mode, ctx, registry=registry)


def run_checks(
    output: Any,
    args: Any,
    *,
    evaluation: bool,
    hook_path: str,
    rollout_id: int | None = None,
    is_default_rollout: bool = False,
    builtin_metric_keys: Collection[str] = (),
    registry: WarnOnce | None = None,
) -> tuple[list[Violation], float]:
    """:func:`validate_rollout_output` and its wall time in seconds (for
    ``perf/contract_check_time``).

    Raises:
        ContractError: as :func:`validate_rollout_output`.
    """
    start = time.perf_counter()
    found = validate_rollout_output(
        output, args, evaluation=evaluation, hook_path=hook_path, rollout_id=rollout_id,
        is_default_rollout=is_default_rollout, builtin_metric_keys=builtin_metric_keys,
        registry=registry)
    return found, time.perf_counter() - start


class ContractChecker:
    """The policy for one run, for the rollout manager: mode, interval, once-per-step
    warnings and timing.

    Usage::

        checker = ContractChecker(args)
        if checker.enabled:
            findings, seconds = checker.run_checks(out, evaluation=False, hook_path=path,
                                                   rollout_id=rollout_id)

    Raises:
        ValueError: an invalid ``--contract-check`` / ``--contract-check-interval``.
    """

    def __init__(self, args: Any, *, builtin_metric_keys: Collection[str] = ()) -> None:
        self.args = args
        self.settings = CheckSettings.from_args(args)
        self.builtin_metric_keys = frozenset(builtin_metric_keys)
        self.registry = WarnOnce()

    @property
    def enabled(self) -> bool:
        """False with ``--contract-check off``."""
        return self.settings.mode != "off"

    def should_check(self, rollout_id: int | None, boundary: str = "B5") -> bool:
        """True when ``boundary`` is checked at step ``rollout_id`` (see ``should_check``)."""
        return should_check_settings(self.settings, rollout_id, boundary)

    def run_checks(self, output: Any, *, evaluation: bool, hook_path: str,
                   rollout_id: int | None = None,
                   is_default_rollout: bool = False) -> tuple[list[Violation], float]:
        """Check a rollout result; return ``(findings, seconds)``.

        Raises:
            ContractError: ``raise`` mode and at least one error.
        """
        return run_checks(output, self.args, evaluation=evaluation, hook_path=hook_path,
                          rollout_id=rollout_id, is_default_rollout=is_default_rollout,
                          builtin_metric_keys=self.builtin_metric_keys, registry=self.registry)
