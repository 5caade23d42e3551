"""Truncated importance sampling (``--use-tis``) and the train-vs-rollout mismatch metrics
(``--get-mismatch-metrics``).

Usage::

    pg_loss, masks, metrics = vanilla_tis_function(
        args=args, pg_loss=pg_flat, train_log_probs=train_lps, rollout_log_probs=rollout_lps,
        loss_masks=masks, total_lengths=tl, response_lengths=rl)
    mismatch_metrics(train_lps, rollout_lps, masks, clip_low=0.0, clip_high=2.0)

vLLM samples the rollout with its own kernels (and, on GPUs, often lower precision), so the
engine's log prob of a sampled token, ``rollout_logp``, differs from the trainer's log prob of
the same token under the same weights, ``train_logp``: the update is silently off-policy. TIS
re-weights each token's policy-gradient loss by the truncated ratio
``clip(exp(train_logp - rollout_logp), L, C)`` (Yao, Liu, et al. 2025, "Your Efficient RL
Framework Secretly Brings You Off-Policy RL Training", fengyao.notion.site; truncation as in
Ionides 2008, "Truncated importance sampling"). ``train_logp`` is the trainer's log prob before
the rollout step's first optimiser step (upstream slime's ``batch["log_probs"]``), so the
weight measures the engine/trainer gap only, not the policy's own movement, which the PPO ratio
handles.

The function's keyword interface is the ``--custom-tis-function-path`` contract
(``vime.contract.hooks.HOOKS["custom_tis_function_path"]``), and the built-in follows upstream
slime's ``vanilla_tis_function`` (``slime/backends/megatron_utils/loss.py``): ``pg_loss`` and the
returned metrics are flat, ``(sum(response_lengths),)``, in sample order; the per-sample lists are
``(R_i,)`` each.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Sequence
from typing import Any

import torch

from vime.backends.losses import kl_k3
from vime.config import arg

__all__ = ["MISMATCH_METRICS", "mismatch_metrics", "vanilla_tis_function"]

#: The keys :func:`mismatch_metrics` returns (logged as ``train/<key>``).
MISMATCH_METRICS = ("mismatch_logprob_abs_diff", "mismatch_kl_k3", "mismatch_ratio_outside_clip")


def vanilla_tis_function(*, args: Namespace, pg_loss: torch.Tensor,
                         train_log_probs: Sequence[torch.Tensor],
                         rollout_log_probs: Sequence[torch.Tensor],
                         loss_masks: Sequence[torch.Tensor], **_: Any
                         ) -> tuple[torch.Tensor, list[torch.Tensor], dict[str, torch.Tensor]]:
    """Weight the per-token policy-gradient loss by ``clip(exp(train - rollout), L, C)``.

    Args:
        args: reads ``tis_clip`` (C) and ``tis_clip_low`` (L).
        pg_loss: ``(N,)`` per-token pg loss, ``N = sum(response_lengths)``, in sample order.
        train_log_probs, rollout_log_probs: one ``(R_i,)`` tensor per sample (natural log).
        loss_masks: one ``(R_i,)`` 0/1 tensor per sample (returned unchanged).

    Returns:
        ``(pg_loss * weights, loss_masks, metrics)``; ``metrics`` holds per-token ``(N,)``
        tensors ``tis`` (the untruncated ratio), ``tis_clipfrac`` (1.0 where the clip changed
        it) and ``tis_abs`` (``|ratio - 1|``), as upstream names them.
    """
    log_ratio = torch.cat(list(train_log_probs)) - torch.cat(list(rollout_log_probs))
    ratio = log_ratio.clamp(-20.0, 20.0).exp().detach()
    weights = ratio.clamp(min=float(arg(args, "tis_clip_low")), max=float(arg(args, "tis_clip")))
    metrics = {"tis": ratio, "tis_clipfrac": (weights != ratio).float(),
               "tis_abs": (ratio - 1.0).abs()}
    return pg_loss * weights, list(loss_masks), metrics


def mismatch_metrics(train_log_probs: Sequence[Sequence[float]],
                     rollout_log_probs: Sequence[Sequence[float]],
                     loss_masks: Sequence[Sequence[float]], *, clip_low: float,
                     clip_high: float) -> dict[str, float]:
    """The trainer-vs-engine log-prob gap over the trainable tokens of one optimiser step.

    With ``d = train_logp - rollout_logp`` per trainable token (``loss_mask`` 1):

    - ``mismatch_logprob_abs_diff``: mean ``|d|`` (nats);
    - ``mismatch_kl_k3``: mean ``exp(d) - 1 - d``, the non-negative, unbiased "k3" estimate of
      ``KL(rollout || train)`` from tokens sampled by the engine (J. Schulman, "Approximating KL
      Divergence", 2020, joschu.net/blog/kl-approx.html);
    - ``mismatch_ratio_outside_clip``: share of tokens with ``exp(d)`` outside
      ``[clip_low, clip_high]`` (``--tis-clip-low``, ``--tis-clip``): where TIS would truncate.

    All three are 0 when the trainer reproduces the engine's log probs exactly.

    Args:
        train_log_probs, rollout_log_probs, loss_masks: ``list[list[float]]``, one entry per
            response token of each sample.

    Returns:
        The three floats; 0.0 each when the step has no trainable token.
    """
    d_all: list[float] = []
    for t, r, m in zip(train_log_probs, rollout_log_probs, loss_masks, strict=True):
        d_all += [a - b for a, b, keep in zip(t, r, m, strict=True) if keep]
    if not d_all:
        return dict.fromkeys(MISMATCH_METRICS, 0.0)
    d = torch.tensor(d_all, dtype=torch.float64)
    ratio = d.clamp(-20.0, 20.0).exp()
    return {
        "mismatch_logprob_abs_diff": float(d.abs().mean()),
        "mismatch_kl_k3": float(kl_k3(-d, torch.zeros_like(d)).mean()),
        "mismatch_ratio_outside_clip": float(((ratio < clip_low) | (ratio > clip_high))
                                             .double().mean()),
    }
