"""The runtime checker's public calls, one per boundary, each honouring ``--contract-check``.

Every call reads the settings from ``args`` (``getattr`` with defaults), collects the
findings of its boundary, adds the hook's dotted path, its ``--*-path`` argument and the step
to each, then applies the mode: ``off`` returns ``[]`` without checking, ``warn`` logs and
returns them, ``raise`` raises one ``ContractError`` for the errors. B2-B6 are skipped (only
B1 runs) on steps that ``--contract-check-interval`` leaves out.

Usage (the rollout manager, every step and eval)::

    out = call_rollout_fn(fn, args, rollout_id, data_source, evaluation=False)
    findings, seconds = run_checks(out, args, evaluation=False, hook_path=path,
                                   rollout_id=rollout_id)
    metrics["perf/contract_check_time"] = seconds

Usage (the default rollout, per generate and reward call)::

    status_in, rl_in = sample.status, sample.response_length
    result = await generate(args, sample, sampling_params)
    check_generate_result(status_in, result, args, hook_path=path, rollout_id=rid,
                          in_response_length=rl_in)
    check_reward_result(await rm(args, sample), args, hook_path=rm_path, rollout_id=rid)

Source: CONTRACT.md §6b (boundaries B1-B6, modes); ours.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Sequence
from typing import Any

from vime.contract.checks import hook_results as hc
from vime.contract.checks.policy import WarnOnce, enforce, should_check_settings
from vime.contract.checks.rollout_output import collect_rollout_output
from vime.contract.checks.settings import CheckContext, CheckSettings
from vime.contract.errors import Violation
from vime.contract.hooks import HOOKS

__all__ = [
    "ContractChecker",
    "check_batch_reward_result",
    "check_buffer_filter_result",
    "check_convert_result",
    "check_dynamic_filter_result",
    "check_generate_result",
    "check_group_rewards",
    "check_reward_post_process_result",
    "check_reward_result",
    "check_sample_hook_result",
    "check_sync_hook_result",
    "run_checks",
    "validate_rollout_output",
]

_BUILTIN_GENERATE = "vime.rollout.vllm_rollout.generate"


def _with_context(found: Sequence[Violation], ctx: CheckContext) -> list[Violation]:
    text = ctx.describe()
    return [dataclasses.replace(v, context=text) for v in found]


def _rollout_context(args: Any, hook_path: str, evaluation: bool,
                     rollout_id: int | None) -> CheckContext:
    eval_path = getattr(args, "eval_function_path", None)
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
    return enforce(_with_context(found, ctx), s.mode, ctx, registry=registry)


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


# ---- B2-B4 ----------------------------------------------------------------------------------


def _boundary(args: Any, hook: str, hook_path: str | None, rollout_id: int | None,
              boundary: str) -> tuple[CheckSettings, CheckContext] | None:
    s = CheckSettings.from_args(args)
    if not should_check_settings(s, rollout_id, boundary):
        return None
    return s, CheckContext.for_hook(hook, hook_path, rollout_id)


def _finish(found: list[Violation], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    if not found:
        return found
    return enforce(_with_context(found, ctx), s.mode, ctx)


def check_generate_result(sample_in_status: Any, result: Any, args: Any, *,
                          hook_path: str | None = None, rollout_id: int | None = None,
                          in_response_length: int = 0) -> list[Violation]:
    """B2: a generate call's entry (``sample_in_status``, ``in_response_length``: the input
    sample's status and response length before the call; VIM140) and its result (VIM140,
    VIM105-VIM111, VIM115, VIM141). ``hook_path`` None means the built-in generate.

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    found = _boundary(args, "custom_generate_function_path", hook_path or _BUILTIN_GENERATE,
                      rollout_id, "B2")
    if found is None:
        return []
    s, ctx = found
    return _finish(hc.generate_result_problems(sample_in_status, result, s,
                                               in_response_length=in_response_length), s, ctx)


def check_reward_result(result: Any, args: Any, *, hook_path: str | None = None,
                        rollout_id: int | None = None, evaluation: bool = False,
                        index: int | None = None) -> list[Violation]:
    """B3, one sample's reward (VIM150 for None/awaitable, VIM110 for the value).

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    found = _boundary(args, "custom_rm_path", hook_path or "--rm-type", rollout_id, "B3")
    if found is None:
        return []
    s, ctx = found
    where = "reward function result" + (f" (index={index})" if index is not None else "")
    return _finish(hc.reward_result_problems(result, s, evaluation=evaluation, where=where), s,
                   ctx)


def check_batch_reward_result(result: Any, samples: Sequence[Any], args: Any, *,
                              hook_path: str | None = None, rollout_id: int | None = None,
                              evaluation: bool = False) -> list[Violation]:
    """B3, a batch reward call: ``len(samples)`` valid rewards (VIM150, VIM110).

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    found = _boundary(args, "custom_rm_path", hook_path or "--rm-type", rollout_id, "B3")
    if found is None:
        return []
    s, ctx = found
    return _finish(hc.batch_reward_result_problems(result, samples, s, evaluation=evaluation),
                   s, ctx)


def check_group_rewards(samples: Sequence[Any], args: Any, *, hook_path: str | None = None,
                        rollout_id: int | None = None) -> list[Violation]:
    """B4, before the dynamic filter: every group member has a valid reward (VIM110).

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    found = _boundary(args, "dynamic_sampling_filter_path", hook_path, rollout_id, "B4")
    if found is None:
        return []
    s, ctx = found
    return _finish(hc.group_reward_problems(samples, s), s, ctx)


def check_dynamic_filter_result(result: Any, args: Any, *, hook_path: str | None = None,
                                rollout_id: int | None = None) -> list[Violation]:
    """B4: the dynamic sampling filter's result (VIM160, VIM165).

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    found = _boundary(args, "dynamic_sampling_filter_path", hook_path, rollout_id, "B4")
    if found is None:
        return []
    s, ctx = found
    return _finish(hc.dynamic_filter_result_problems(result, ctx.name), s, ctx)


def check_buffer_filter_result(result: Any, buffer: Sequence[Any], num_samples: int, args: Any,
                               *, hook_path: str | None = None,
                               rollout_id: int | None = None) -> list[Violation]:
    """B4: the buffer filter's result against the buffer after the call (VIM161, VIM165).

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    found = _boundary(args, "buffer_filter_path", hook_path, rollout_id, "B4")
    if found is None:
        return []
    s, ctx = found
    return _finish(hc.buffer_filter_result_problems(result, buffer, num_samples, s, ctx.name), s,
                   ctx)


def check_sample_hook_result(result: Any, args: Any, *, hook_path: str | None = None,
                             rollout_id: int | None = None) -> list[Violation]:
    """B4: a sample hook's result is a Sample or None (VIM162).

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    found = _boundary(args, "rollout_sample_hook_path", hook_path, rollout_id, "B4")
    if found is None:
        return []
    s, ctx = found
    return _finish(hc.sample_hook_result_problems(result, ctx.name), s, ctx)


def check_reward_post_process_result(result: Any, samples: Sequence[Any], args: Any, *,
                                     hook_path: str | None = None,
                                     rollout_id: int | None = None) -> list[Violation]:
    """B4: ``(raw_rewards, rewards)`` of ``len(samples)`` finite reals each (VIM162, VIM165).

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    found = _boundary(args, "custom_reward_post_process_path", hook_path, rollout_id, "B4")
    if found is None:
        return []
    s, ctx = found
    return _finish(hc.reward_post_process_result_problems(result, samples, ctx.name), s, ctx)


def check_convert_result(result: Any, samples: Sequence[Any], args: Any, *,
                         hook_path: str | None = None,
                         rollout_id: int | None = None) -> list[Violation]:
    """B4: the convert hook's dict has every required key with ``len(samples)`` values
    (VIM162, VIM165).

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    found = _boundary(args, "custom_convert_samples_to_train_data_path", hook_path, rollout_id,
                      "B4")
    if found is None:
        return []
    s, ctx = found
    return _finish(hc.convert_result_problems(result, samples, ctx.name), s, ctx)


def check_sync_hook_result(result: Any, args: Any, *, hook: str, hook_path: str | None = None,
                           rollout_id: int | None = None) -> list[Violation]:
    """B3/B4: a sync hook (``hook``: a ``HOOKS`` dest) did not return an awaitable (VIM165;
    a returned coroutine is closed).

    Raises:
        ContractError: ``raise`` mode and an awaitable was returned.
    """
    found = _boundary(args, hook, hook_path, rollout_id, "B4")
    if found is None:
        return []
    s, ctx = found
    problem = hc.awaitable_problem(result, ctx.arg, ctx.name)
    return _finish([problem] if problem is not None else [], s, ctx)
