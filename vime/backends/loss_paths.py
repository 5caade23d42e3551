"""One micro-batch's loss from the model's outputs: the built-in ``policy_loss`` and ``sft_loss``
paths, and the ``batch`` a ``--custom-loss-function-path`` receives.

Usage (inside ``vime.backends.trainer.Trainer``)::

    settings = LossSettings.from_args(args)
    outputs = ResponseOutputs(log_probs, valid, entropy, hits)   # the forward, (B, R) each
    loss, stats, additive = builtin_loss(settings, step, rows, outputs, num_rollouts,
                                         tis=tis_fn, reducer=reducer_fn)
    batch, sum_of_sample_mean = custom_loss_batch(step, rows, padded, num_rollouts)
    loss, log = hooks.loss(args, batch, logits, sum_of_sample_mean, rollout_id)

The trainer runs the model and owns the hooks; these functions take the forward's response-aligned
tensors, the step's columns (``BatchBuilder.convert`` rows, ``split_into_steps`` steps) and the
hooks as plain callables, and touch no other state. The formulas are in ``vime.backends.losses``:

- ``policy_loss``: the per-token PPO-clip loss (Schulman et al. 2017, "Proximal Policy
  Optimization Algorithms", eq. 7; the asymmetric upper bound of DAPO, Yu et al. 2025), GSPO's
  sequence-level ratio (``--advantage-estimator gspo``, Zheng et al. 2025) or CISPO's
  stop-gradient clipped weight (``cispo``, MiniMax 2025, arXiv:2506.13585); with GRPO (Shao et
  al. 2024, "DeepSeekMath", eq. 3) the same PPO-clip loss on group-normalised advantages. Then
  truncated importance sampling (``--use-tis``; Yao et al. 2025, ``vime.backends.tis``), the
  reduction (``--custom-pg-loss-reducer-function-path`` or the sum of sample means), the k3 KL
  term against the reference model (``--use-kl-loss``; Schulman 2020, "Approximating KL
  divergence", as GRPO's eq. 4) and the entropy bonus (``--entropy-coef``; Schulman et al. 2017,
  eq. 9).
- ``sft_loss``: masked negative log-likelihood of the response tokens, plus the entropy bonus.

Units: log probs in nats at ``--rollout-temperature``; every loss is a "sum of sample means"
(``losses.reduce_sample_mean``), so the micro-batch losses of one optimiser step add up to its
mean over rollouts of each rollout's token mean.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from vime.backends.batching import PaddedBatch, float_tensors, pad_per_token
from vime.backends.losses import (
    from_flat,
    greedy_match,
    kl_k3,
    pg_token_losses,
    reduce_sample_mean,
    sft_loss,
    to_flat,
)
from vime.config import arg

__all__ = ["LossSettings", "PgReducer", "ResponseOutputs", "TisFunction", "apply_tis",
           "builtin_loss", "custom_loss_batch"]

#: A TIS function called with the TIS keywords (``pg_loss``, ``train_log_probs``,
#: ``rollout_log_probs``, ``loss_masks``, ``total_lengths``, ``response_lengths``; the caller adds
#: ``args``); returns ``(pg_loss, loss_masks, metrics)`` as ``vime.backends.tis`` describes.
TisFunction = Callable[[dict[str, Any]],
                       tuple[torch.Tensor, Sequence[torch.Tensor], Mapping[str, Any]]]

#: A pg-loss reducer called with the factory arguments ``(total_lengths, response_lengths,
#: loss_masks, calculate_per_token_loss)`` and the flat ``(sum(R_i),)`` per-token pg loss;
#: returns the scalar loss.
PgReducer = Callable[[tuple[list[int], list[int], list[torch.Tensor], bool], torch.Tensor],
                     torch.Tensor]


@dataclass(frozen=True)
class LossSettings:
    """What the built-in paths read from the arguments.

    Attributes:
        loss_type: ``"policy_loss"`` or ``"sft_loss"`` (``--loss-type``).
        estimator: ``--advantage-estimator``; ``gspo`` and ``cispo`` change the pg loss.
        eps_clip, eps_clip_high: the clip range (``eps_clip_high`` None = ``eps_clip``).
        kl_loss_coef: weight of the k3 KL term (used when the step has reference log probs
            and ``use_kl``).
        use_kl: ``--use-kl-loss`` (the trainer holds a reference model).
        entropy_coef: weight of the entropy bonus (0 = off; the entropy is still reported).
        per_token: ``--calculate-per-token-loss``: every loss is the step's token mean (each
            response token weighs the same) instead of its mean over rollouts of each
            rollout's token mean (each rollout weighs the same).
    """

    loss_type: str
    estimator: str
    eps_clip: float
    eps_clip_high: float | None
    kl_loss_coef: float
    use_kl: bool
    entropy_coef: float
    per_token: bool = False

    @classmethod
    def from_args(cls, args: Namespace) -> LossSettings:
        """Read ``loss_type``, ``advantage_estimator``, ``eps_clip(_high)``,
        ``use_kl_loss``/``kl_loss_coef``, ``entropy_coef`` and ``calculate_per_token_loss``
        from ``args``."""
        high = arg(args, "eps_clip_high")
        return cls(loss_type=str(arg(args, "loss_type")),
                   estimator=str(arg(args, "advantage_estimator")),
                   eps_clip=float(arg(args, "eps_clip")),
                   eps_clip_high=None if high is None else float(high),
                   kl_loss_coef=float(arg(args, "kl_loss_coef")),
                   use_kl=bool(arg(args, "use_kl_loss")),
                   entropy_coef=float(arg(args, "entropy_coef")),
                   per_token=bool(arg(args, "calculate_per_token_loss")))


@dataclass(frozen=True)
class ResponseOutputs:
    """The forward's response-aligned outputs on one micro-batch, ``(B, R_max)`` each,
    response token ``j`` in column ``j`` (``vime.backends.batching.gather_response``).

    Attributes:
        log_probs: log probs of the response tokens (with grad), nats.
        valid: 1.0 on real response columns, 0.0 in padding.
        entropy: next-token entropy at each response token (with grad), nats.
        hits: 1.0 where the token is the argmax (``losses.argmax_hits``).
    """

    log_probs: torch.Tensor
    valid: torch.Tensor
    entropy: torch.Tensor
    hits: torch.Tensor


def step_mask_tokens(step: dict[str, Any]) -> int:
    """Loss-mask tokens of the whole optimiser step: ``rollout_mask_sums`` summed once per
    rollout (``rollout_ids``), FAILED rollouts (the ``failed`` column) left out as the
    trainer's ``num_rollouts`` leaves them out."""
    failed = step.get("failed") or [0] * len(step["rollout_ids"])
    sums = {rid: m for rid, m, f in zip(step["rollout_ids"], step["rollout_mask_sums"], failed,
                                        strict=True) if not f}
    return int(sum(sums.values()))


def _mask_and_denom(step: dict[str, Any], rows: Sequence[int], valid: torch.Tensor,
                    num_rollouts: int = 1, per_token: bool = False
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(B, R)`` loss mask (``loss_masks`` times ``valid``) and ``(B,)`` denominators of
    ``rows``: each rollout's ``rollout_mask_sums``, or with ``per_token`` the step's mean
    (:func:`step_mask_tokens` / ``num_rollouts``) for every row, which turns
    :func:`~vime.backends.losses.reduce_sample_mean`'s sum of sample means into the step's
    token mean (DAPO's token-level loss, Yu et al. 2025, sec. 3.3; slime's
    ``--calculate-per-token-loss``)."""
    mask = pad_per_token([step["loss_masks"][i] for i in rows], valid.shape[1],
                         device=valid.device) * valid
    if per_token:
        mean = step_mask_tokens(step) / max(int(num_rollouts), 1)
        denom = torch.full((len(rows),), float(mean), dtype=torch.float32, device=valid.device)
    else:
        denom = torch.tensor([step["rollout_mask_sums"][i] for i in rows],
                             dtype=torch.float32, device=valid.device)
    return mask, denom


def builtin_loss(settings: LossSettings, step: dict[str, Any], rows: list[int],
                 outputs: ResponseOutputs, num_rollouts: int, *,
                 tis: TisFunction | None = None, reducer: PgReducer | None = None
                 ) -> tuple[torch.Tensor, dict[str, float], set[str]]:
    """One micro-batch of ``policy_loss`` (TIS, the pg-loss reducer, KL, entropy) or ``sft_loss``.

    Args:
        settings: the loss's arguments (:class:`LossSettings`).
        step: one optimiser step's columns; reads ``tokens``, ``response_lengths``,
            ``total_lengths``, ``loss_masks``, ``rollout_mask_sums`` and for ``policy_loss``
            ``old_log_probs``, ``advantages`` (``ref_log_probs`` with ``use_kl``;
            ``train_log_probs`` and ``rollout_log_probs`` with ``tis``).
        rows: the step's rows in this micro-batch (the order of ``outputs``' rows).
        outputs: the forward on those rows (:class:`ResponseOutputs`).
        num_rollouts: rollouts in the whole optimiser step (the reduction's divisor, >= 1).
        tis: the TIS function to apply to the per-token pg loss, or None (no TIS).
        reducer: the pg-loss reducer, or None (the sum of sample means).

    Returns:
        ``(loss, stats, additive)``: the scalar loss (with grad); float stats (``pg_loss``,
        ``pg_clipfrac``, ``ppo_kl``, ``kl_loss``, the TIS metrics, or ``sft_loss``,
        ``sft_token_nll``; always ``entropy`` and ``greedy_match``); and the names of the
        TIS metrics, which add up over micro-batches like the losses.

    Raises:
        ValueError: a TIS function's flat output does not hold one value per response token.
    """
    lp, valid = outputs.log_probs, outputs.valid
    width = lp.shape[1]
    mask, denom = _mask_and_denom(step, rows, valid, num_rollouts, settings.per_token)
    additive: set[str] = set()
    stats: dict[str, float]
    if settings.loss_type == "sft_loss":
        loss, stats = sft_loss(lp, mask, denom, num_rollouts)
        reduce_mask = mask
    else:
        old = pad_per_token([step["old_log_probs"][i] for i in rows], width, device=lp.device)
        adv = pad_per_token([step["advantages"][i] for i in rows], width, device=lp.device)
        per_token, clipped = pg_token_losses(
            lp, old, adv, mask, eps_clip=settings.eps_clip, eps_clip_high=settings.eps_clip_high,
            sequence_level=settings.estimator == "gspo", cispo=settings.estimator == "cispo")
        stats = {}
        reduce_mask = mask
        if tis is not None:
            per_token, reduce_mask, tis_stats = apply_tis(tis, step, rows, per_token, mask,
                                                          valid, denom, num_rollouts)
            stats.update(tis_stats)
            additive |= set(tis_stats)
        if reducer is not None:
            rlens = [step["response_lengths"][i] for i in rows]
            masks = [reduce_mask[k, :r] for k, r in enumerate(rlens)]
            pg = reducer(([len(step["tokens"][i]) for i in rows], rlens, masks,
                          settings.per_token),
                         to_flat(per_token, valid))
        else:
            pg = reduce_sample_mean(per_token, reduce_mask, denom, num_rollouts)
        loss = pg
        with torch.no_grad():
            n_tok = reduce_mask.sum().clamp(min=1)
            stats["pg_loss"] = float(pg.detach())
            stats["pg_clipfrac"] = float((clipped * reduce_mask).sum() / n_tok)
            stats["ppo_kl"] = float((-(lp - old) * reduce_mask).sum() / n_tok)
        if settings.use_kl:
            ref = pad_per_token([step["ref_log_probs"][i] for i in rows], width,
                                device=lp.device)
            kl = reduce_sample_mean(kl_k3(lp, ref), reduce_mask, denom, num_rollouts)
            loss = loss + settings.kl_loss_coef * kl
            stats["kl_loss"] = float(kl.detach())
    ent_term = reduce_sample_mean(outputs.entropy, reduce_mask, denom, num_rollouts)
    if settings.entropy_coef:
        loss = loss - settings.entropy_coef * ent_term
    stats["entropy"] = float(ent_term.detach())
    stats["greedy_match"] = greedy_match(outputs.hits, mask)
    return loss, stats, additive


def apply_tis(tis: TisFunction, step: dict[str, Any], rows: list[int], per_token: torch.Tensor,
              mask: torch.Tensor, valid: torch.Tensor, denom: torch.Tensor, num_rollouts: int
              ) -> tuple[torch.Tensor, torch.Tensor, dict[str, float]]:
    """Run a TIS function on one micro-batch's per-token pg loss.

    Args:
        tis: the TIS function (:data:`TisFunction`).
        step, rows: as in :func:`builtin_loss` (reads ``train_log_probs``,
            ``rollout_log_probs``, ``total_lengths``, ``response_lengths``).
        per_token, mask, valid: ``(B, R)`` per-token pg loss, loss mask and real columns.
        denom, num_rollouts: the reduction's denominators, as in :func:`builtin_loss`.

    Returns:
        ``(per_token, reduce_mask, stats)``: the re-weighted ``(B, R)`` loss, the ``(B, R)``
        mask the loss is reduced with (the function's masks), and the metrics, each named
        ``tis*`` (a per-token metric reduced over the original ``mask``, as upstream does).

    Raises:
        ValueError: the function's flat pg loss does not hold one value per response token.
    """
    rlens = [step["response_lengths"][i] for i in rows]
    kwargs = dict(
        pg_loss=to_flat(per_token, valid),
        train_log_probs=float_tensors([step["train_log_probs"][i] for i in rows], mask.device),
        rollout_log_probs=float_tensors([step["rollout_log_probs"][i] for i in rows],
                                        mask.device),
        loss_masks=[mask[k, :r] for k, r in enumerate(rlens)],
        total_lengths=[step["total_lengths"][i] for i in rows], response_lengths=rlens)
    pg_flat, new_masks, metrics = tis(kwargs)
    reduce_mask = torch.zeros_like(mask)
    for k, m in enumerate(new_masks):
        reduce_mask[k, :m.shape[0]] = m.to(mask.dtype)
    stats: dict[str, float] = {}
    for key, value in metrics.items():
        name = key if key.startswith("tis") else f"tis_{key}"
        if hasattr(value, "numel") and value.numel() != 1:
            stats[name] = float(reduce_sample_mean(from_flat(value.detach().float(), valid),
                                                   mask, denom, num_rollouts))
        else:
            stats[name] = float(value)
    return from_flat(pg_flat, valid), reduce_mask * valid, stats


def custom_loss_batch(step: dict[str, Any], rows: list[int], padded: PaddedBatch,
                      num_rollouts: int, per_token: bool = False
                      ) -> tuple[dict[str, Any], Callable[[torch.Tensor], torch.Tensor]]:
    """What ``--custom-loss-function-path`` receives for one micro-batch (docs/en/training.md).

    Args:
        step, rows: as in :func:`builtin_loss` (also reads ``rewards`` and, where present,
            ``advantages``, ``returns``, ``old_log_probs``, ``rollout_log_probs``,
            ``ref_log_probs``).
        padded: the right-padded batch the model ran on (``PaddedBatch``, ``(B, T)``).
        num_rollouts: rollouts in the optimiser step.
        per_token: ``--calculate-per-token-loss`` (``sum_of_sample_mean`` is then the step's
            token mean, as for the built-in losses).

    Returns:
        ``(batch, sum_of_sample_mean)``: the batch dict (per-sample lists, per-token
        ``(R_i,)`` float32 tensors under upstream's names, and the padded ``(B, T)``
        ``input_ids``, ``attention_mask``, ``position_ids``), and the reducer of a ``(B, R)``
        or flat ``(sum(R_i),)`` per-token tensor to the step's sum of sample means.
    """
    device = padded.input_ids.device
    tokens = [step["tokens"][i] for i in rows]
    rlens = [step["response_lengths"][i] for i in rows]
    width = max(rlens)
    valid = torch.zeros((len(rows), width), dtype=torch.float32, device=device)
    for k, r in enumerate(rlens):
        valid[k, :r] = 1.0
    mask, denom = _mask_and_denom(step, rows, valid, num_rollouts, per_token)

    def sum_of_sample_mean(values: torch.Tensor) -> torch.Tensor:
        if values.dim() == 1:
            values = from_flat(values, valid)
        return reduce_sample_mean(values, mask, denom, num_rollouts)

    batch: dict[str, Any] = {
        "tokens": tokens,
        "unconcat_tokens": [torch.tensor(t, dtype=torch.long, device=device) for t in tokens],
        "response_lengths": rlens,
        "total_lengths": [len(t) for t in tokens],
        "loss_masks": [mask[k, :r] for k, r in enumerate(rlens)],
        "rollout_mask_sums": [step["rollout_mask_sums"][i] for i in rows],
        "rewards": [float(step["rewards"][i]) for i in rows],
        "num_rollouts": num_rollouts,
        "input_ids": padded.input_ids,
        "attention_mask": padded.attention_mask,
        "position_ids": padded.position_ids,
    }
    for key, column in (("advantages", "advantages"), ("returns", "returns"),
                        ("log_probs", "old_log_probs"),
                        ("rollout_log_probs", "rollout_log_probs"),
                        ("ref_log_probs", "ref_log_probs")):
        if column in step:
            batch[key] = float_tensors([step[column][i] for i in rows], device)
    return batch, sum_of_sample_mean
