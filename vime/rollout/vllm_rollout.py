"""The default rollout: generate with vLLM over HTTP, score, filter, batch (docs/contract.md §8).

This module is the stable import path; the code lives in :mod:`vime.rollout.vllm`, one job per
module (state, engine client, sampling + reward, abort, train loop, evaluation, entry point).

Usage::

    --rollout-function-path vime.rollout.vllm_rollout.generate_rollout   # the default
    --custom-generate-function-path vime.rollout.vllm_rollout.generate   # the built-in generate

    out = generate_rollout(args, rollout_id, data_source)                  # train step
    out.samples        # rollout_batch_size groups of n_samples_per_prompt Samples
    out.metrics        # {"rollout/vllm_rollout/generated_tokens_per_s": 2603.0, ...,
                       #  "rollout/dynamic_filter/drop_zero_std_1.0": 3}  (rollout_metrics.py)
    ev = generate_rollout(args, rollout_id, data_source, evaluation=True)  # eval step
    ev.data            # {name: {"rewards": [...], "truncated": [...], "samples": [...]}}

    # inside a custom rollout or generate function (async):
    sample = await generate(args, sample, sampling_params)      # one engine call
    sample = await generate_and_rm(args, sample, sampling_params)
    group = await generate_and_rm_group(args, group, sampling_params)

Engine failures: a request that fails with a connection error or HTTP 500/502/503/504 is sent
again through the router with back-off for up to ``--rollout-engine-retry-secs``, then the
rollout fails with ``EngineUnavailableError`` naming the engines that do not answer
``GET /health``; see :func:`generate`.
"""

from __future__ import annotations

from vime.rollout.vllm.abort import abort
from vime.rollout.vllm.client import generate
from vime.rollout.vllm.evaluation import eval_rollout
from vime.rollout.vllm.rollout_fn import generate_rollout
from vime.rollout.vllm.sampling import (
    generate_and_rm,
    generate_and_rm_group,
    sampling_params_from_args,
)
from vime.rollout.vllm.state import get_model_url
from vime.rollout.vllm.train_loop import generate_rollout_async

__all__ = [
    "abort",
    "eval_rollout",
    "generate",
    "generate_and_rm",
    "generate_and_rm_group",
    "generate_rollout",
    "generate_rollout_async",
    "get_model_url",
    "sampling_params_from_args",
]

