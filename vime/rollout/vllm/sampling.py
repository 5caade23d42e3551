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
import time
import uuid
from argparse import Namespace
from collections.abc import Sequence
from typing import Any

from vime.config import arg
from vime.contract import checks as rt
from vime.contract.hooks import BUILTIN_GENERATE_PATH, HOOKS
from vime.contract.signature import optional_kwargs
from vime.rollout.base_types import iter_samples
from vime.rollout.failures import is_failed, settle_failed_call, settle_unscored
from vime.rollout.vllm.client import generate
from vime.rollout.vllm.hook_calls import (
    CallAborted,
    HookCallError,
    call_hook,
    pending_entry,
    restore_sample,
    snapshot_sample,
)
from vime.rollout.vllm.state import RolloutState, get_state
from vime.rollout.vllm.turns import check_generated_turns
from vime.rollout.vllm_protocol import make_sampling_params
from vime.utils.types import Sample

__all__ = ["generate_and_rm", "generate_and_rm_group", "sampling_params_from_args", "score_groups"]


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
    if not path and arg(args, "agent_function_path"):
        from vime.agent.generate import AGENT_GENERATE_PATH
        from vime.agent.generate import generate as agent_generate

        return agent_generate, AGENT_GENERATE_PATH
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

    if is_failed(sample):   # a failed generate produced nothing for the hooks to see
        return sample
    for path in arg(args, "rollout_sample_hook_path") or []:
        hook = load_function(path, hook="rollout_sample_hook_path")
        key = pending_entry(state, sample, hook="sample_hook", phase="filter", path=path)
        try:
            out = hook(args, sample, **optional_kwargs(hook, HOOKS["rollout_sample_hook_path"],
                                                       rollout_id=state.rollout_id,
                                                       evaluation=evaluation))
            if inspect.isawaitable(out):
                out = await out
        finally:
            state.pending.pop(key, None)
        rt.check_sample_hook_result(out, args, hook_path=path, rollout_id=state.rollout_id)
        if isinstance(out, Sample):
            sample = out
    return sample


async def generate_and_rm(args: Namespace, sample: Sample, sampling_params: dict[str, Any],
                          evaluation: bool = False) -> Sample | list[Sample]:
    """Generate one sample (built-in or custom generate function), run the sample hooks, and
    score it (unless ``--group-rm``: then the group is scored together).

    COMPLETED/TRUNCATED samples come back unchanged (scored first if an abort cancelled their
    reward call); FAILED samples come back unchanged; ABORTED samples are not scored. With
    ``--partial-rollout --mask-offpolicy-in-partial-rollout`` a re-entering sample's earlier
    response tokens are masked out (``loss_mask = [0] * response_length``).

    ``--custom-generate-timeout`` limits a custom generate call and ``--rm-timeout`` a reward
    call (seconds). A call that raises or times out goes to
    ``vime.rollout.failures.settle_failed_call`` (the ``--hook-failure`` decision: raise the
    hook's exception with a note, or mark the sample FAILED; a failed generate's partial
    response is cut back first), a reward of None to ``settle_unscored``.

    Returns:
        The sample, or a non-empty ``list[Sample]`` from a fan-out generate function.

    Raises:
        ContractError: generate-boundary violations (VIM140, VIM109, ...), hook result errors.
        Exception: what a generate or reward call raised, with ``--hook-failure raise``
            (``TimeoutError`` for a timeout).
    """
    state = await get_state(args)
    if sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED):
        if sample.reward is None and not arg(args, "group_rm") and not state.aborted:
            await _score_one(state, args, sample, evaluation)
        return sample
    if sample.status is Sample.Status.FAILED:
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
    snap = snapshot_sample(sample)
    try:
        with state.gen_clock.busy():
            result = await call_hook(
                state, sample, hook="generate", phase="generate", path=fn_path,
                timeout=None if fn is generate else arg(args, "custom_generate_timeout"),
                timeout_flag="--custom-generate-timeout",
                make=lambda: _call_generate(state, fn, args, sample, sampling_params,
                                            evaluation))
    except CallAborted:
        sample.status = Sample.Status.ABORTED
        return sample
    except HookCallError as err:
        def cut_back(s: Sample) -> None:
            restore_sample(s, snap)
            _keep_prompt_tokens(state, s)

        raised = settle_failed_call(args, [sample], "generate", err.original, err.seconds,
                                    path=fn_path, prepare=cut_back)
        if raised is not None:
            raise raised from raised.__cause__
        return sample
    rt.check_generate_result(status_in, result, args,
                             hook_path=None if fn is generate else fn_path,
                             rollout_id=state.rollout_id, in_response_length=length_in)
    if fn is not generate:   # the built-in generate is one turn
        check_generated_turns(state, args, result, hook_path=fn_path,
                              rollout_id=state.rollout_id)
    leaves = result if isinstance(result, list) else [result]
    leaves = [await _run_sample_hooks(state, args, s, evaluation) for s in leaves]
    result = leaves if isinstance(result, list) else leaves[0]
    if arg(args, "group_rm"):
        return result
    if isinstance(result, list):
        if not any(s.status == Sample.Status.ABORTED for s in result):
            await _score_batch(state, args, [s for s in result
                                             if s.reward is None and not is_failed(s)],
                               evaluation)
    elif result.status not in (Sample.Status.ABORTED, Sample.Status.FAILED) \
            and result.reward is None:
        await _score_one(state, args, result, evaluation)
    return result


def _keep_prompt_tokens(state: RolloutState, sample: Sample) -> None:
    """Give a sample whose generate failed before it had tokens its prompt's token ids (the
    row conversion builds for it needs them); left empty when the prompt cannot be encoded."""
    if sample.tokens or not isinstance(sample.prompt, str):
        return
    from vime.rollout.vllm.client import _prompt_ids

    try:
        sample.tokens = _prompt_ids(state, sample)
    except Exception:   # no tokenizer: conversion names the sample instead
        return


def _rm_path(args: Namespace, sample: Sample | None = None) -> str | None:
    return (sample.custom_rm_path if sample is not None else None) or getattr(
        args, "custom_rm_path", None)


def _rm_name(args: Namespace, sample: Sample | None = None) -> str:
    """The reward that runs, for messages: its path, or ``--rm-type <type>``."""
    path = _rm_path(args, sample)
    if path:
        return path
    rm_type = ((sample.metadata or {}).get("rm_type") if sample is not None else None) \
        or arg(args, "rm_type")
    return f"--rm-type {rm_type}"


async def _score_one(state: RolloutState, args: Namespace, sample: Sample,
                     evaluation: bool) -> None:
    """Score one sample (``async_rm``, B3-checked) under ``--rm-timeout`` / ``--hook-failure``."""
    from vime.rollout.rm_hub import async_rm

    name = _rm_name(args, sample)
    start = time.monotonic()
    try:
        with state.rm_clock.busy():
            reward = await call_hook(state, sample, hook="reward", phase="reward", path=name,
                                     timeout=arg(args, "rm_timeout"), timeout_flag="--rm-timeout",
                                     make=lambda: async_rm(args, sample))
    except CallAborted:
        return
    except HookCallError as err:
        raised = settle_failed_call(args, [sample], "reward", err.original, err.seconds,
                                    path=name)
        if raised is not None:
            raise raised from raised.__cause__
        return
    if reward is None and settle_unscored(args, sample, time.monotonic() - start,
                                          message=f"{name} returned None (could not score)"):
        return
    rt.check_reward_result(reward, args, hook_path=_rm_path(args, sample),
                           rollout_id=state.rollout_id, evaluation=evaluation,
                           index=sample.index)
    sample.reward = reward


async def score_groups(state: RolloutState, args: Namespace, samples: Sequence[Sample],
                       evaluation: bool) -> None:
    """With ``--group-rm``: score the unscored ``samples`` as groups (one ``batched_async_rm``
    call per ``group_index``, in index order), as a training group is scored; a sample with its
    own ``custom_rm_path`` other than ``--custom-rm-path`` (an eval dataset's single-sample
    reward) is scored alone. FAILED,
    ABORTED and already scored samples are left as they are."""
    groups: dict[int | None, list[Sample]] = {}
    for s in samples:
        if s.reward is not None or is_failed(s) or s.status == Sample.Status.ABORTED:
            continue
        if s.custom_rm_path and s.custom_rm_path != arg(args, "custom_rm_path"):
            await _score_one(state, args, s, evaluation)
            continue
        groups.setdefault(s.group_index, []).append(s)
    for members in groups.values():
        await _score_batch(state, args, members, evaluation)


async def _score_batch(state: RolloutState, args: Namespace, samples: list[Sample],
                       evaluation: bool) -> None:
    """Score ``samples`` with one ``batched_async_rm`` call (B3-checked) and store rewards;
    under ``--hook-failure fail-sample`` a failed call fails every sample and a None reward
    fails its sample (``Unscored``)."""
    if not samples:
        return
    from vime.rollout.rm_hub import batched_async_rm

    name = _rm_name(args)
    start = time.monotonic()
    try:
        with state.rm_clock.busy():
            rewards = await call_hook(state, samples[0], hook="reward", phase="reward",
                                      path=name, timeout=arg(args, "rm_timeout"),
                                      timeout_flag="--rm-timeout",
                                      make=lambda: batched_async_rm(args, samples))
    except CallAborted:
        return
    except HookCallError as err:
        raised = settle_failed_call(args, samples, "reward", err.original, err.seconds,
                                    path=name)
        if raised is not None:
            raise raised from raised.__cause__
        return
    if len(rewards) == len(samples) and any(r is None for r in rewards):
        seconds = time.monotonic() - start
        message = f"{name} returned None for this sample (could not score)"
        unscored = [r is None and settle_unscored(args, s, seconds, message=message)
                    for s, r in zip(samples, rewards, strict=True)]
        if any(unscored):
            pairs = [(s, r) for s, r, u in zip(samples, rewards, unscored, strict=True) if not u]
            samples, rewards = [p[0] for p in pairs], [p[1] for p in pairs]
            if not samples:
                return
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
        leaves = [s for s in iter_samples(results) if not is_failed(s)]
        if leaves and not any(s.status == Sample.Status.ABORTED for s in leaves):
            await _score_batch(state, args, leaves, evaluation)
    return results
