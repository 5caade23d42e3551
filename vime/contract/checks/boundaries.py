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

See ``docs/contract.md`` §6b (boundaries, modes).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from vime.config import arg
from vime.contract.checks import hook_results as hc
from vime.contract.checks.policy import WarnOnce, enforce, should_check_settings
from vime.contract.checks.rollout_output import collect_rollout_output
from vime.contract.checks.settings import CheckContext, CheckSettings
from vime.contract.errors import Violation
from vime.contract.hooks import BUILTIN_GENERATE_PATH, HOOKS
from vime.contract.invariants import Boundary

__all__ = [
    "HOOK_BOUNDARIES",
    "ContractChecker",
    "HookBoundary",
    "boundary_problems",
    "check_boundary",
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


def _with_context(found: Sequence[Violation], ctx: CheckContext) -> list[Violation]:
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


# ---- B2-B4: one record per hook boundary ---------------------------------------------------

#: ``problems(values, settings, ctx, **options)``: the findings of one boundary.
Problems = Callable[..., list[Violation]]


@dataclass(frozen=True, slots=True)
class HookBoundary:
    """One hook boundary: the hook whose result is checked, where, by what, for which ids.

    The runtime's ``check_*`` calls below and the ``vime-lint check`` dry run both go through
    :func:`boundary_problems`, so a boundary's check and its invariant ids exist once.
    """

    #: Key in :data:`HOOK_BOUNDARIES`, e.g. ``"reward_result"``.
    name: str
    #: The ``HOOKS`` dest whose result is checked, e.g. ``"custom_rm_path"``.
    hook: str
    #: ``"B2"`` (generate), ``"B3"`` (reward) or ``"B4"`` (other hooks).
    boundary: Boundary
    #: Invariant ids the check can report (each lists ``boundary`` in ``Invariant.boundaries``).
    ids: tuple[str, ...]
    #: The check: ``problems(values, settings, ctx, **options) -> list[Violation]``.
    problems: Problems
    #: What messages name when no user hook is configured (a built-in), e.g. ``--rm-type``.
    builtin: str | None = None


def _generate(v: Sequence[Any], s: CheckSettings, ctx: CheckContext, *,
              in_response_length: int = 0) -> list[Violation]:
    return hc.generate_result_problems(v[0], v[1], s, in_response_length=in_response_length)


def _reward(v: Sequence[Any], s: CheckSettings, ctx: CheckContext, *, evaluation: bool = False,
            index: int | None = None) -> list[Violation]:
    where = "reward function result" + (f" (index={index})" if index is not None else "")
    return hc.reward_result_problems(v[0], s, evaluation=evaluation, where=where)


def _batch_reward(v: Sequence[Any], s: CheckSettings, ctx: CheckContext, *,
                  evaluation: bool = False) -> list[Violation]:
    return hc.batch_reward_result_problems(v[0], v[1], s, evaluation=evaluation)


def _group_rewards(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.group_reward_problems(v[0], s)


def _dynamic_filter(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.dynamic_filter_result_problems(v[0], ctx.name)


def _buffer_filter(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.buffer_filter_result_problems(v[0], v[1], v[2], s, ctx.name)


def _sample_hook(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.sample_hook_result_problems(v[0], ctx.name)


def _post_process(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.reward_post_process_result_problems(v[0], v[1], ctx.name)


def _convert(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    return hc.convert_result_problems(v[0], v[1], ctx.name)


def _sync_hook_result(v: Sequence[Any], s: CheckSettings, ctx: CheckContext) -> list[Violation]:
    found = hc.awaitable_problem(v[0], ctx.arg, ctx.name)
    return [] if found is None else [found]


_B2_IDS = ("VIM105", "VIM106", "VIM107", "VIM108", "VIM109", "VIM110", "VIM111", "VIM115",
           "VIM140", "VIM141")

#: Every hook boundary, by name. ``sync_result`` is generic: its hook is given per call.
HOOK_BOUNDARIES: Mapping[str, HookBoundary] = MappingProxyType({b.name: b for b in (
    HookBoundary("generate_result", "custom_generate_function_path", "B2", _B2_IDS, _generate,
                 builtin=BUILTIN_GENERATE_PATH),
    HookBoundary("reward_result", "custom_rm_path", "B3", ("VIM110", "VIM150"), _reward,
                 builtin="--rm-type"),
    HookBoundary("batch_reward_result", "custom_rm_path", "B3", ("VIM110", "VIM150"),
                 _batch_reward, builtin="--rm-type"),
    HookBoundary("group_rewards", "dynamic_sampling_filter_path", "B4", ("VIM110",),
                 _group_rewards),
    HookBoundary("dynamic_filter_result", "dynamic_sampling_filter_path", "B4",
                 ("VIM160", "VIM165"), _dynamic_filter),
    HookBoundary("buffer_filter_result", "buffer_filter_path", "B4", ("VIM161", "VIM165"),
                 _buffer_filter),
    HookBoundary("sample_hook_result", "rollout_sample_hook_path", "B4", ("VIM162",),
                 _sample_hook),
    HookBoundary("reward_post_process_result", "custom_reward_post_process_path", "B4",
                 ("VIM162", "VIM165"), _post_process),
    HookBoundary("convert_result", "custom_convert_samples_to_train_data_path", "B4",
                 ("VIM162", "VIM165"), _convert),
    HookBoundary("sync_hook_result", "", "B4", ("VIM165",), _sync_hook_result),
)})


def boundary_problems(name: str, *values: Any, settings: CheckSettings, ctx: CheckContext,
                      **options: Any) -> list[Violation]:
    """The findings of boundary ``name`` (a :data:`HOOK_BOUNDARIES` key) on ``values``, with
    no policy applied (the dry run and the runtime calls both use this)."""
    return HOOK_BOUNDARIES[name].problems(values, settings, ctx, **options)


def check_boundary(name: str, *values: Any, args: Any, hook_path: str | None = None,
                   rollout_id: int | None = None, hook: str | None = None,
                   **options: Any) -> list[Violation]:
    """Check ``values`` at boundary ``name`` per ``--contract-check`` and its interval.

    Args:
        name: a :data:`HOOK_BOUNDARIES` key.
        values: what the check reads (the hook's result first, see each ``check_*``).
        args: the run's ``argparse.Namespace``.
        hook_path: the user hook's dotted path; None names the built-in.
        rollout_id: the step (None: always checked).
        hook: the ``HOOKS`` dest, for the generic ``sync_result`` boundary.
        options: passed to the check (``evaluation``, ``index``, ``in_response_length``).

    Returns:
        The findings, each with the hook, its argument and the step as context; ``[]`` when
        the mode or interval skips the boundary.

    Raises:
        ContractError: ``raise`` mode and at least one error.
    """
    spec = HOOK_BOUNDARIES[name]
    s = CheckSettings.from_args(args)
    if not should_check_settings(s, rollout_id, spec.boundary):
        return []
    ctx = CheckContext.for_hook(hook or spec.hook, hook_path or spec.builtin, rollout_id)
    found = spec.problems(values, s, ctx, **options)
    if not found:
        return found
    return enforce(_with_context(found, ctx), s.mode, ctx)


def check_generate_result(sample_in_status: Any, result: Any, args: Any, *,
                          hook_path: str | None = None, rollout_id: int | None = None,
                          in_response_length: int = 0) -> list[Violation]:
    """B2: a generate call's entry (``sample_in_status``, ``in_response_length``: the input
    sample's status and response length before the call) and its result; ``hook_path`` None
    means the built-in generate. See :func:`check_boundary`."""
    return check_boundary("generate_result", sample_in_status, result, args=args,
                          hook_path=hook_path, rollout_id=rollout_id,
                          in_response_length=in_response_length)


def check_reward_result(result: Any, args: Any, *, hook_path: str | None = None,
                        rollout_id: int | None = None, evaluation: bool = False,
                        index: int | None = None) -> list[Violation]:
    """B3: one sample's reward. See :func:`check_boundary`."""
    return check_boundary("reward_result", result, args=args, hook_path=hook_path,
                          rollout_id=rollout_id, evaluation=evaluation, index=index)


def check_batch_reward_result(result: Any, samples: Sequence[Any], args: Any, *,
                              hook_path: str | None = None, rollout_id: int | None = None,
                              evaluation: bool = False) -> list[Violation]:
    """B3: a batch reward call, ``len(samples)`` rewards. See :func:`check_boundary`."""
    return check_boundary("batch_reward_result", result, samples, args=args,
                          hook_path=hook_path, rollout_id=rollout_id, evaluation=evaluation)


def check_group_rewards(samples: Sequence[Any], args: Any, *, hook_path: str | None = None,
                        rollout_id: int | None = None) -> list[Violation]:
    """B4, before the dynamic filter: every group member has a valid reward. See
    :func:`check_boundary`."""
    return check_boundary("group_rewards", samples, args=args, hook_path=hook_path,
                          rollout_id=rollout_id)


def check_dynamic_filter_result(result: Any, args: Any, *, hook_path: str | None = None,
                                rollout_id: int | None = None) -> list[Violation]:
    """B4: the dynamic sampling filter's result. See :func:`check_boundary`."""
    return check_boundary("dynamic_filter_result", result, args=args, hook_path=hook_path,
                          rollout_id=rollout_id)


def check_buffer_filter_result(result: Any, buffer: Sequence[Any], num_samples: int, args: Any,
                               *, hook_path: str | None = None,
                               rollout_id: int | None = None) -> list[Violation]:
    """B4: the buffer filter's result against the buffer after the call. See
    :func:`check_boundary`."""
    return check_boundary("buffer_filter_result", result, buffer, num_samples, args=args,
                          hook_path=hook_path, rollout_id=rollout_id)


def check_sample_hook_result(result: Any, args: Any, *, hook_path: str | None = None,
                             rollout_id: int | None = None) -> list[Violation]:
    """B4: a sample hook's result is a Sample or None. See :func:`check_boundary`."""
    return check_boundary("sample_hook_result", result, args=args, hook_path=hook_path,
                          rollout_id=rollout_id)


def check_reward_post_process_result(result: Any, samples: Sequence[Any], args: Any, *,
                                     hook_path: str | None = None,
                                     rollout_id: int | None = None) -> list[Violation]:
    """B4: ``(raw_rewards, rewards)`` of ``len(samples)`` finite reals each. See
    :func:`check_boundary`."""
    return check_boundary("reward_post_process_result", result, samples, args=args,
                          hook_path=hook_path, rollout_id=rollout_id)


def check_convert_result(result: Any, samples: Sequence[Any], args: Any, *,
                         hook_path: str | None = None,
                         rollout_id: int | None = None) -> list[Violation]:
    """B4: the convert hook's dict of training columns. See :func:`check_boundary`."""
    return check_boundary("convert_result", result, samples, args=args, hook_path=hook_path,
                          rollout_id=rollout_id)


def check_sync_hook_result(result: Any, args: Any, *, hook: str, hook_path: str | None = None,
                           rollout_id: int | None = None) -> list[Violation]:
    """B3/B4: a sync hook (``hook``: a ``HOOKS`` dest) did not return an awaitable (a returned
    coroutine is closed). See :func:`check_boundary`."""
    return check_boundary("sync_hook_result", result, args=args, hook_path=hook_path,
                          rollout_id=rollout_id, hook=hook)
