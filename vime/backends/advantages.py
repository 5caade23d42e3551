"""Per-token advantages of a rollout step, one 1-D tensor per sample (the built-in estimators).

Usage::

    adv = estimator_advantages(args, rewards, loss_masks)      # list[Tensor], (R_i,) each
    adv = discounted_returns(token_rewards, gamma=1.0)          # one sample's G_t, (R,)
    view = custom_advantage_data(data, loss_masks, device)      # a custom estimator's input

The trainer (``vime.backends.trainer``) calls :func:`estimator_advantages` once per rollout step,
after the log probs, unless ``--custom-advantage-function-path`` sets them instead
(``vime.backends.trainer_hooks``). ``rewards`` are the converted ``rewards`` column: already
normalised per prompt group by ``vime.data.batch_builder`` for grpo / gspo / cispo (mean and
std) and reinforce_plus_plus_baseline (mean only); raw for reinforce_plus_plus.

- ``grpo``, ``gspo``, ``cispo``: the sample's normalised reward on every response token
  (Shao et al. 2024, "DeepSeekMath", GRPO; the same advantage for GSPO, Zheng et al. 2025, and
  CISPO, MiniMax 2025, "MiniMax-M1", arXiv:2506.13585; as upstream slime's ``get_grpo_returns``).
- ``reinforce_plus_plus_baseline``: the group-mean-subtracted reward on every token, then
  whitened over all trainable tokens of the rollout step (Hu 2025, "REINFORCE++",
  arXiv:2501.03262, the baseline variant).
- ``reinforce_plus_plus``: the raw reward placed on the sample's last trainable token,
  discounted back over the response with ``--gamma`` (``G_t = r_t + gamma * G_{t+1}``), then
  whitened over all trainable tokens of the rollout step (Hu 2025, global advantage
  normalisation; upstream's ``get_reinforce_plus_plus_returns``). vime has no KL-in-reward term
  (``--kl-coef`` is rejected), so the per-token KL penalty of the paper is zero here.

Upstream whitens only with ``--normalize-advantages``; vime always whitens the two REINFORCE++
estimators and never the others.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Sequence
from typing import Any

import torch

from vime.backends.batching import float_tensors
from vime.config import arg
from vime.contract.estimators import BROADCAST_ESTIMATORS, ESTIMATORS

__all__ = ["custom_advantage_data", "discounted_returns", "estimator_advantages", "masked_whiten"]


_EPS = 1e-8


def masked_whiten(values: Sequence[torch.Tensor], masks: Sequence[torch.Tensor]
                  ) -> list[torch.Tensor]:
    """``(x - mean) / sqrt(var + 1e-8)`` with mean and variance over the masked tokens of all
    samples together; unmasked tokens are shifted and scaled the same way.

    Args:
        values, masks: one ``(R_i,)`` tensor each per sample (masks 0/1).
    """
    flat_v = torch.cat(list(values))
    flat_m = torch.cat(list(masks)).to(flat_v.dtype)
    n = flat_m.sum().clamp(min=1)
    mean = (flat_v * flat_m).sum() / n
    var = (((flat_v - mean) * flat_m) ** 2).sum() / n
    out = (flat_v - mean) * torch.rsqrt(var + _EPS)
    return list(torch.split(out, [len(v) for v in values]))


def discounted_returns(token_rewards: torch.Tensor, gamma: float) -> torch.Tensor:
    """``G_t = r_t + gamma * G_{t+1}`` over one response, ``(R,)`` -> ``(R,)``."""
    out = torch.zeros_like(token_rewards)
    running = token_rewards.new_zeros(())
    for t in range(token_rewards.shape[0] - 1, -1, -1):
        running = token_rewards[t] + gamma * running
        out[t] = running
    return out


def estimator_advantages(args: Namespace, rewards: Sequence[float],
                         loss_masks: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The built-in ``--advantage-estimator``'s per-token advantages of one rollout step.

    Args:
        args: reads ``advantage_estimator`` and ``gamma``.
        rewards: ``list[float]``, the converted ``rewards`` column (one per sample).
        loss_masks: one ``(R_i,)`` float 0/1 tensor per sample, on the trainer's device.

    Returns:
        ``list[Tensor]``, one float32 ``(R_i,)`` tensor per sample on the masks' device.

    Raises:
        NotImplementedError: an estimator outside :data:`ESTIMATORS`.
    """
    estimator = arg(args, "advantage_estimator")
    if estimator not in ESTIMATORS:
        raise NotImplementedError(f"--advantage-estimator {estimator} is not implemented in "
                                  f"vime's trainer; use one of {ESTIMATORS}")
    per_token = [torch.full_like(m, float(r), dtype=torch.float32)
                 for r, m in zip(rewards, loss_masks, strict=True)]
    if estimator in BROADCAST_ESTIMATORS:
        return per_token
    if estimator == "reinforce_plus_plus":
        gamma = float(arg(args, "gamma"))
        returns = []
        for r, m in zip(rewards, loss_masks, strict=True):
            token_rewards = torch.zeros_like(m, dtype=torch.float32)
            trainable = m.nonzero(as_tuple=True)[0]
            if trainable.numel():
                token_rewards[trainable[-1]] = float(r)
            returns.append(discounted_returns(token_rewards, gamma))
        per_token = returns
    return masked_whiten(per_token, [m.float() for m in loss_masks])


def custom_advantage_data(data: dict[str, Any], masks: list[torch.Tensor],
                          device: torch.device | str) -> dict[str, Any]:
    """What ``--custom-advantage-function-path`` receives (docs/en/training.md): a shallow copy
    of the converted columns ``data``, with the per-token ones as ``(R_i,)`` float32 tensors
    on ``device`` under upstream's names.

    Args:
        data: ``BatchBuilder.convert`` columns with ``old_log_probs`` (the trainer's or the
            rollout's), and ``rollout_log_probs``/``ref_log_probs``/``train_log_probs`` where
            present (``list[list[float]]``, one value per response token).
        masks: the loss masks as ``(R_i,)`` tensors (kept as ``loss_masks``).

    Returns:
        The columns with ``log_probs`` (from ``old_log_probs``, which is dropped), the other
        log probs as tensors, ``kl`` (zeros, ``(R_i,)``), ``total_lengths`` (tokens per
        sample) and ``rewards`` as floats; ``data`` itself is not changed.
    """
    view = dict(data)
    view["loss_masks"] = masks
    view["log_probs"] = float_tensors(data["old_log_probs"], device)
    for key in ("rollout_log_probs", "ref_log_probs", "train_log_probs"):
        if key in data:
            view[key] = float_tensors(data[key], device)
    view["kl"] = [torch.zeros_like(m) for m in masks]
    view["total_lengths"] = [len(t) for t in data["tokens"]]
    view["rewards"] = [float(r) for r in data["rewards"]]
    view.pop("old_log_probs", None)
    return view
