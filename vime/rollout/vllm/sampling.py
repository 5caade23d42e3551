"""Sampling parameters, and generate + reward of one sample or one group: the built-in or a
custom generate function, the ``--rollout-sample-hook-path`` hooks, then the reward (per sample,
or per group with ``--group-rm``), each result checked at its boundary.

Usage::

    params = sampling_params_from_args(args)          # from the --rollout-* arguments
    sample = await generate_and_rm(args, sample, params)
    group = await generate_and_rm_group(args, group, params)
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from argparse import Namespace
from typing import Any

from vime.config import arg
from vime.contract import checks as rt
from vime.contract.hooks import BUILTIN_GENERATE_PATH, HOOKS
from vime.contract.signature import optional_kwargs
from vime.rollout.base_types import iter_samples
from vime.rollout.vllm.client import generate
from vime.rollout.vllm.state import RolloutState, get_state
from vime.rollout.vllm_protocol import make_sampling_params
from vime.utils.types import Sample

__all__ = ["generate_and_rm", "generate_and_rm_group", "sampling_params_from_args"]


def sampling_params_from_args(args: Namespace) -> dict[str, Any]:
    """The train ``sampling_params`` from ``--rollout-*`` arguments (see
    ``vllm_protocol.make_sampling_params``).

    Raises:
        ValueError: ``--rollout-temperature`` <= 0 or another out-of-range value.
    """
    temperature = float(arg(args, "rollout_temperature"))
    if temperature <= 0:
        raise ValueError(f"--rollout-temperature {temperature}: expected > 0 for RL rollouts")
    return make_sampling_params(
        temperature=temperature,
        top_p=float(arg(args, "rollout_top_p")),
        top_k=int(arg(args, "rollout_top_k")),
        max_response_len=arg(args, "rollout_max_response_len"),
        stop=arg(args, "rollout_stop"),
        stop_token_ids=arg(args, "rollout_stop_token_ids"),
        skip_special_tokens=bool(arg(args, "rollout_skip_special_tokens")),
    )


def _generate_function(args: Namespace, sample: Sample, evaluation: bool) -> tuple[Any, str]:
    from vime.utils.misc import load_function

    path = sample.generate_function_path or arg(args, "custom_generate_function_path")
    if not path:
        return generate, BUILTIN_GENERATE_PATH
    return load_function(path, hook="custom_generate_function_path"), path


async def _call_generate(state: RolloutState, fn: Any, args: Namespace, sample: Sample,
                         sampling_params: dict[str, Any], evaluation: bool) -> Any:
    kwargs = ({} if fn is generate else
              optional_kwargs(fn, HOOKS["custom_generate_function_path"], evaluation=evaluation))
    if getattr(fn, "abort_mode", None) != "request":
        return await fn(args, sample, sampling_params, **kwargs)
    task = asyncio.ensure_future(fn(args, sample, sampling_params, **kwargs))
    state.request_tasks.add(task)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.cancelled() and state.aborted:
            sample.status = Sample.Status.ABORTED
            return sample
        task.cancel()
        raise
    finally:
        state.request_tasks.discard(task)


async def _run_sample_hooks(state: RolloutState, args: Namespace, sample: Sample,
                            evaluation: bool) -> Sample:
    from vime.utils.misc import load_function

    for path in arg(args, "rollout_sample_hook_path") or []:
        hook = load_function(path, hook="rollout_sample_hook_path")
        out = hook(args, sample, **optional_kwargs(hook, HOOKS["rollout_sample_hook_path"],
                                                   rollout_id=state.rollout_id,
                                                   evaluation=evaluation))
        if inspect.isawaitable(out):
            out = await out
        rt.check_sample_hook_result(out, args, hook_path=path, rollout_id=state.rollout_id)
        if isinstance(out, Sample):
            sample = out
    return sample


async def generate_and_rm(args: Namespace, sample: Sample, sampling_params: dict[str, Any],
                          evaluation: bool = False) -> Sample | list[Sample]:
    """Generate one sample (built-in or custom generate function), run the sample hooks, and
    score it (unless ``--group-rm``: then the group is scored together).

    COMPLETED/TRUNCATED samples come back unchanged; ABORTED samples are not scored. With
    ``--partial-rollout --mask-offpolicy-in-partial-rollout`` a re-entering sample's earlier
    response tokens are masked out (``loss_mask = [0] * response_length``).

    Returns:
        The sample, or a non-empty ``list[Sample]`` from a fan-out generate function.

    Raises:
        ContractError: generate-boundary violations (VIM140, VIM109, ...), hook result errors.
    """
    state = await get_state(args)
    if sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED):
        return sample
    if (arg(args, "partial_rollout")
            and arg(args, "mask_offpolicy_in_partial_rollout")
            and sample.response_length > 0):
        sample.loss_mask = [0] * sample.response_length
    if state.aborted:
        sample.status = Sample.Status.ABORTED
        return sample
    fn, fn_path = _generate_function(args, sample, evaluation)
    status_in, length_in = sample.status, sample.response_length
    with state.gen_clock.busy():
        result = await _call_generate(state, fn, args, sample, sampling_params, evaluation)
    rt.check_generate_result(status_in, result, args,
                             hook_path=None if fn is generate else fn_path,
                             rollout_id=state.rollout_id, in_response_length=length_in)
    leaves = result if isinstance(result, list) else [result]
    leaves = [await _run_sample_hooks(state, args, s, evaluation) for s in leaves]
    result = leaves if isinstance(result, list) else leaves[0]
    if arg(args, "group_rm"):
        return result
    if isinstance(result, list):
        if not any(s.status == Sample.Status.ABORTED for s in result):
            await _score_batch(state, args, [s for s in result if s.reward is None], evaluation)
    elif result.status != Sample.Status.ABORTED and result.reward is None:
        from vime.rollout.rm_hub import async_rm

        with state.rm_clock.busy():
            reward = await async_rm(args, result)
        rt.check_reward_result(reward, args, hook_path=_rm_path(args, result),
                               rollout_id=state.rollout_id, evaluation=evaluation,
                               index=result.index)
        result.reward = reward
    return result


def _rm_path(args: Namespace, sample: Sample | None = None) -> str | None:
    return (sample.custom_rm_path if sample is not None else None) or getattr(
        args, "custom_rm_path", None)


async def _score_batch(state: RolloutState, args: Namespace, samples: list[Sample],
                       evaluation: bool) -> None:
    """Score ``samples`` with one ``batched_async_rm`` call (B3-checked) and store rewards."""
    if not samples:
        return
    from vime.rollout.rm_hub import batched_async_rm

    with state.rm_clock.busy():
        rewards = await batched_async_rm(args, samples)
    rt.check_batch_reward_result(rewards, samples, args, hook_path=_rm_path(args),
                                 rollout_id=state.rollout_id, evaluation=evaluation)
    for s, reward in zip(samples, rewards, strict=True):
        s.reward = reward


async def generate_and_rm_group(args: Namespace, group: list[Sample],
                                sampling_params: dict[str, Any], evaluation: bool = False
                                ) -> list[Any]:
    """Generate and score one group concurrently; fills missing ``session_id`` (uuid4) so the
    router keeps each sample on one engine. With ``--vllm-enable-deterministic-inference``
    member ``j`` gets ``seed = rollout_seed + j``; with ``--group-rm`` the group is scored by one
    ``batched_async_rm`` call (unless a member was aborted).

    Returns:
        The group, same length and order (elements may be fan-out lists).
    """
    state = await get_state(args)
    deterministic = arg(args, "vllm_enable_deterministic_inference")
    seed = int(arg(args, "rollout_seed"))
    calls = []
    for j, sample in enumerate(group):
        if sample.session_id is None:
            sample.session_id = str(uuid.uuid4())
        params = {**sampling_params, "seed": seed + j} if deterministic else sampling_params
        calls.append(generate_and_rm(args, sample, params, evaluation=evaluation))
    results = list(await asyncio.gather(*calls))
    if arg(args, "group_rm") and not state.aborted:
        leaves = list(iter_samples(results))
        if leaves and not any(s.status == Sample.Status.ABORTED for s in leaves):
            await _score_batch(state, args, leaves, evaluation)
    return results
