"""The train step of the default rollout: the over-sampling loop that keeps
``rollout_batch_size`` groups, the dynamic filter, the abort-and-recycle at the end, the step's
metrics.

Usage::

    output, recycled = await generate_rollout_async(args, rollout_id, data_source)
    output.samples     # rollout_batch_size groups of n_samples_per_prompt Samples
    output.metrics     # rollout/vllm_rollout/* and rollout/dynamic_filter/drop_<reason>
                       # (vime.rollout.rollout_metrics lists them)

Keep ``rollout_batch_size`` groups. While fewer than that are in flight or kept, take
``over_sampling_batch_size`` more groups from the data source. Each finished group goes through
``--dynamic-sampling-filter-path`` (a drop frees a slot and is counted as
``rollout/dynamic_filter/drop_<reason>``). Once enough groups are kept, in-flight requests are
aborted; with ``--partial-rollout``, drained groups holding an ABORTED sample with a response go
back to the data source (``metadata["start_rollout_id"]`` set) to continue next step.

With ``--hook-failure fail-sample`` a group whose samples all FAILED is dropped (its slot is
refilled) and counted as ``rollout/vllm_rollout/failed_groups_dropped``; more than ``--max-failed-ratio`` failed
samples among the step's finished groups (all-failed ones included) stops the run
(``HookFailureError``), at the end of the step or as soon as ``rollout_batch_size`` groups have
been dropped as all-failed. ``--rollout-watchdog-secs`` starts a
:class:`~vime.rollout.watchdog.Watchdog` for the step.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from argparse import Namespace
from collections import Counter
from typing import Any

from vime.config import arg
from vime.contract import checks as rt
from vime.contract.checks.enforced import group_size_problems, require
from vime.report.fates import FAILED, FILTERED, note_dropped
from vime.rollout.base_types import RolloutFnTrainOutput, finalize_rollout_groups, iter_samples
from vime.rollout.failures import HookFailureError, is_failed, too_many_failed
from vime.rollout.rollout_metrics import PREFIX, rollout_step_metrics
from vime.rollout.vllm.abort import abort, recyclable_groups
from vime.rollout.vllm.hook_calls import pending_entry
from vime.rollout.vllm.sampling import generate_and_rm_group, sampling_params_from_args
from vime.rollout.vllm.state import get_state
from vime.rollout.watchdog import Watchdog
from vime.utils.types import Sample

__all__ = ["generate_rollout_async"]


def _run_dynamic_filter(fn: Any, path: str, args: Namespace, group: list[Any],
                        rollout_id: int | None) -> tuple[bool, str | None, bool]:
    """``(keep, reason, keep_when_insufficient)`` of one filter call; the group's rewards and
    the result are checked first (B4: VIM110, VIM160, VIM165)."""
    from vime.rollout.filter_hub.base_types import DynamicFilterOutput

    rt.check_group_rewards([s for s in iter_samples(group) if not is_failed(s)], args,
                           hook_path=path, rollout_id=rollout_id)
    out = fn(args, group)
    rt.check_dynamic_filter_result(out, args, hook_path=path, rollout_id=rollout_id)
    if isinstance(out, DynamicFilterOutput):
        return bool(out.keep), out.reason, bool(out.keep_when_insufficient)
    if inspect.iscoroutine(out):  # only reached with --contract-check off/warn
        out.close()
        return True, None, False
    return bool(out), None, False


def _stop_if_too_many_failed(finished: list[list[Any]], done: int, target: int,
                             max_ratio: float, rollout_id: int) -> None:
    """Raise once ``done`` reaches ``target`` (in the loop: as many all-failed groups dropped as
    the step keeps; at its end: always) and more than ``max_ratio`` of the finished groups'
    samples failed: without it, a step whose samples all fail would draw new groups forever.

    Raises:
        HookFailureError: names the ratio and the top error types (``too_many_failed``).
    """
    if done < target:
        return
    message = too_many_failed(list(iter_samples(finished)), max_ratio,
                              where=f"rollout {rollout_id} (all-failed groups included)")
    if message is not None:
        raise HookFailureError(message)


async def _get_groups(data_source: Any, n: int) -> list[list[Sample]]:
    getter = getattr(data_source, "get_samples_async", None)
    if getter is not None:
        return list(await getter(n))
    return list(data_source.get_samples(n))


async def generate_rollout_async(args: Namespace, rollout_id: int, data_source: Any
                                 ) -> tuple[RolloutFnTrainOutput, list[list[Any]]]:
    """The train loop (see the module docstring); returns the output and the groups to recycle.

    Raises:
        ContractError: VIM103 when a finished group does not have ``n_samples_per_prompt``
            members; filter result errors (VIM160, VIM165).
        RuntimeError: the data source returned no groups while none are in flight.
    """
    from vime.utils.misc import load_function

    state = await get_state(args)
    state.start_step(rollout_id)
    start = time.monotonic()
    target = int(args.rollout_batch_size)
    n = int(arg(args, "n_samples_per_prompt") or 1)
    over = int(arg(args, "over_sampling_batch_size") or target)
    params = sampling_params_from_args(args)
    filter_path = arg(args, "dynamic_sampling_filter_path")
    dyn = load_function(filter_path, hook="dynamic_sampling_filter_path") if filter_path else None
    kept: list[list[Any]] = []
    finished: list[list[Any]] = []
    extra: list[list[Any]] = []
    drops: Counter[str] = Counter()
    failed_groups: list[list[Any]] = []
    remaining = 0
    max_failed = float(arg(args, "max_failed_ratio"))
    watchdog_s = arg(args, "rollout_watchdog_secs")
    dog = Watchdog(watchdog_s, rollout_id, state.pending) if watchdog_s else None
    if dog is not None:
        dog.start()
    try:
        while len(kept) < target:
            while remaining < target:
                groups = await _get_groups(data_source, over)
                if not groups:
                    break
                for group in groups:
                    state.group_tasks.add(asyncio.ensure_future(
                        generate_and_rm_group(args, group, params)))
                remaining += len(groups)
            pending = {t for t in state.group_tasks if not t.done()}
            done_now = {t for t in state.group_tasks if t.done()}
            if not pending and not done_now:
                raise RuntimeError(f"rollout {rollout_id}: the data source returned no groups "
                                   f"and none are in flight; kept {len(kept)} of {target}")
            if not done_now:
                done_now, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done_now:
                state.group_tasks.discard(task)
                group = task.result()
                if len(kept) >= target:
                    extra.append(group)
                    continue
                first = next(iter_samples(group), None)
                require(group_size_problems([len(group)], n, [
                    f"rollout {rollout_id}, group_index="
                    f"{first.group_index if first is not None else None}"]))
                finished.append(group)
                if all(is_failed(s) for s in iter_samples(group)):
                    # nothing to train on or normalise against: dropped, counted, replaced
                    remaining -= 1
                    failed_groups.append(group)
                    note_dropped(args, rollout_id, group, FAILED, "every sample of the group "
                                 "failed; the group was dropped and replaced")
                    _stop_if_too_many_failed(finished, len(failed_groups), target, max_failed,
                                             rollout_id)
                    continue
                if dyn is not None:
                    key = pending_entry(state, first, hook="dynamic_filter", phase="filter",
                                        path=str(filter_path)) if first is not None else None
                    try:
                        keep, reason, fallback = _run_dynamic_filter(dyn, str(filter_path), args,
                                                                     group, rollout_id)
                    finally:
                        if key is not None:
                            state.pending.pop(key)
                    if not keep and not (fallback and remaining <= target):
                        remaining -= 1
                        drops[reason or "unknown"] += 1
                        note_dropped(args, rollout_id, group, FILTERED,
                                     f"{filter_path}: {reason or 'unknown'}")
                        continue
                kept.append(group)
    except BaseException:
        for task in state.group_tasks:
            task.cancel()
        await abort(args, rollout_id)
        raise
    finally:
        if dog is not None:
            dog.stop()
    recycled = await abort(args, rollout_id) + recyclable_groups(args, extra, rollout_id)
    _stop_if_too_many_failed(finished, target, target, max_failed, rollout_id)
    metrics: dict[str, Any] = {f"rollout/dynamic_filter/drop_{r}": c for r, c in drops.items()}
    if failed_groups:
        metrics[f"{PREFIX}failed_groups_dropped"] = float(len(failed_groups))
    metrics[f"{PREFIX}engine_retries"] = float(state.engine_retries)
    if dog is not None:
        metrics[f"{PREFIX}watchdog_reports"] = 1.0 if dog.report is not None else 0.0
    metrics.update(rollout_step_metrics(
        wall_s=time.monotonic() - start, generated_tokens=state.generated_tokens,
        generation_busy_s=state.gen_clock.total(), reward_busy_s=state.rm_clock.total(),
        recycled_groups=len(recycled)))
    from vime.agent.generate import step_metrics as agent_step_metrics

    metrics.update(agent_step_metrics(args, rollout_id))   # {} without --agent-function-path
    all_path = arg(args, "rollout_all_samples_process_path")
    if all_path:
        load_function(all_path, hook="rollout_all_samples_process_path")(args, finished,
                                                                        data_source)
    return finalize_rollout_groups(args, rollout_id, kept, metrics), recycled
