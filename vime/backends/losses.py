"""Per-token log probs and the built-in losses: PPO-clip / GSPO / CISPO ``policy_loss`` and
masked-NLL ``sft_loss``.

Usage::

    lp = token_log_probs(logits, input_ids)             # (B, T-1): log p(x_t | x_<t)
    loss, stats = policy_loss(lp, old_lp, advantages, mask, denom, num_rollouts,
                              eps_clip=0.2, eps_clip_high=0.28)
    loss, stats = sft_loss(lp, mask, denom, num_rollouts)

Reduction ("sum of sample means"): each sample's masked token losses are summed and divided by
its rollout's mask sum (``rollout_mask_sums``: the trainable tokens over all segments of that
rollout), then summed over the micro-batch and divided by the number of rollouts in the whole
optimiser step. Micro-batch losses therefore add up to the step's mean-over-rollouts of the
per-rollout token mean, and gradient accumulation needs no rescaling.

PPO-clip as in Schulman et al. 2017 ("Proximal Policy Optimization Algorithms", eq. 7), with the
asymmetric upper bound of DAPO (Yu et al. 2025); GSPO's sequence-level ratio from Zheng et al. 2025;
CISPO's stop-gradient clipped weight from MiniMax 2025 ("MiniMax-M1", arXiv:2506.13585);
the "k3" KL estimator from J. Schulman, "Approximating KL divergence" (2020).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from vime.backends.batching import ResponseIndex

__all__ = ["argmax_hits", "entropy_from_logits", "from_flat", "greedy_match", "kl_k3",
           "pg_token_losses", "policy_loss", "reduce_sample_mean", "response_log_probs",
           "response_token_stats", "sft_loss", "to_flat", "token_log_probs"]


def token_log_probs(logits: torch.Tensor, input_ids: torch.Tensor,
                    temperature: float = 1.0) -> torch.Tensor:
    """Log prob of each next token under ``logits / temperature``.

    Args:
        logits: ``(B, T, V)`` float.
        input_ids: ``(B, T)`` long.
        temperature: divides the logits (> 0).

    Returns:
        ``(B, T - 1)`` natural-log probs; entry ``t`` is ``log p(input_ids[:, t + 1] | ...)``.
    """
    logits = logits[:, :-1].float()
    if temperature != 1.0:
        logits = logits / temperature
    targets = input_ids[:, 1:].unsqueeze(-1)
    return torch.log_softmax(logits, dim=-1).gather(-1, targets).squeeze(-1)


def entropy_from_logits(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Entropy (nats) of the next-token distribution at every position but the last: ``(B, T-1)``."""
    logits = logits[:, :-1].float()
    if temperature != 1.0:
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def argmax_hits(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """1.0 where the next token is the argmax of the logits (the greedy choice), else 0.0.

    Args:
        logits: ``(B, T, V)``; input_ids: ``(B, T)``.

    Returns:
        ``(B, T - 1)`` float, aligned like :func:`token_log_probs`.
    """
    return (logits[:, :-1].argmax(-1) == input_ids[:, 1:]).float()


def greedy_match(hits: torch.Tensor, mask: torch.Tensor) -> float:
    """Share of the samples with trainable tokens whose every trainable token is the argmax.

    With teacher forcing on SFT data this is the share of the batch that greedy decoding
    reproduces exactly (the same argmax at every position, given the same prefix), measured
    for free on the training forward pass (before the optimiser step).

    Args:
        hits: ``(B, R)`` from :func:`argmax_hits`, response-aligned; mask: ``(B, R)`` 0/1.

    Returns:
        A fraction in [0, 1]; 0.0 when no sample has a trainable token.
    """
    has_tokens = mask.sum(-1) > 0
    if not bool(has_tokens.any()):
        return 0.0
    all_hit = ((hits * mask) == mask).all(-1) & has_tokens
    return float(all_hit.sum() / has_tokens.sum())


def reduce_sample_mean(values: torch.Tensor, mask: torch.Tensor, denom: torch.Tensor,
                       num_rollouts: int) -> torch.Tensor:
    """``sum_i sum_t values[i,t] * mask[i,t] / max(denom[i], 1) / num_rollouts``.

    Args:
        values, mask: ``(B, R)`` per response token (mask 0/1 float).
        denom: ``(B,)`` the rollout's mask sum (``rollout_mask_sums``), tokens.
        num_rollouts: rollouts in the optimiser step (>= 1).
    """
    per_sample = (values * mask).sum(-1) / denom.clamp(min=1).to(values.dtype)
    return per_sample.sum() / max(int(num_rollouts), 1)


def kl_k3(log_probs: torch.Tensor, ref_log_probs: torch.Tensor) -> torch.Tensor:
    """Per-token KL(pi || ref) estimate ``exp(ref - lp) - (ref - lp) - 1`` (>= 0), ``(B, R)``."""
    log_ratio = (ref_log_probs - log_probs).clamp(-20.0, 20.0)
    return log_ratio.exp() - log_ratio - 1.0


def pg_token_losses(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    eps_clip: float = 0.2,
    eps_clip_high: float | None = None,
    sequence_level: bool = False,
    cispo: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token policy-gradient losses, unreduced: ``(per_token, clipped)``, both ``(B, R)``.

    PPO-clip (default): ``max(-A r, -A clip(r, 1 - eps, 1 + eps_high))`` with
    ``r = exp(lp - old)``. GSPO (``sequence_level``): every token's ratio is the sample's
    geometric-mean ratio ``exp(mean_t(lp - old))`` (its gradient still flows through each token).
    CISPO (``cispo``): ``-sg(clip(r, 1 - eps, 1 + eps_high)) * A * lp``: the ratio is clipped
    under stop-gradient and every token keeps its gradient through ``lp`` (MiniMax 2025,
    "MiniMax-M1", arXiv:2506.13585, eq. 4-5; upstream slime's ``compute_cispo_loss``, whose
    bounds use the same distance-from-1 convention; the paper's CISPO has no lower bound, i.e.
    ``--eps-clip 1``).

    Args:
        log_probs: ``(B, R)`` current policy log probs (with grad).
        old_log_probs: ``(B, R)`` behaviour log probs (no grad).
        advantages: ``(B, R)`` per token.
        mask: ``(B, R)`` 0/1 (GSPO's per-sample mean runs over it).

    Returns:
        ``per_token`` (with grad) and ``clipped``: 1.0 where the clip changed the token's
        term (PPO: the clipped branch won; CISPO: the ratio was truncated), else 0.0.
    """
    high = eps_clip if eps_clip_high is None else eps_clip_high
    log_ratio = log_probs - old_log_probs.detach()
    if sequence_level:
        seq = (log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        log_ratio = seq.detach().unsqueeze(-1) + log_probs - log_probs.detach()
    ratio = log_ratio.clamp(-20.0, 20.0).exp()
    if cispo:
        truncated = ratio.detach().clamp(1.0 - eps_clip, 1.0 + high)
        return -truncated * advantages * log_probs, (truncated != ratio.detach()).float()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - eps_clip, 1.0 + high)
    return torch.maximum(unclipped, clipped), (clipped > unclipped).float().detach()


def policy_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    denom: torch.Tensor,
    num_rollouts: int,
    *,
    eps_clip: float = 0.2,
    eps_clip_high: float | None = None,
    sequence_level: bool = False,
    cispo: bool = False,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """:func:`pg_token_losses` reduced with :func:`reduce_sample_mean`.

    Args:
        log_probs, old_log_probs, advantages, mask: ``(B, R)``, see :func:`pg_token_losses`.
        denom: ``(B,)`` per-sample loss denominators (``rollout_mask_sums``).
        num_rollouts: rollouts in the optimiser step.
        eps_clip, eps_clip_high: the clip range (``eps_clip_high`` None = ``eps_clip``).
        sequence_level: GSPO; cispo: CISPO (see :func:`pg_token_losses`).

    Returns:
        ``(loss, stats)``: a scalar tensor and float stats ``pg_loss``, ``pg_clipfrac``,
        ``ppo_kl`` (masked token means over this micro-batch).
    """
    per_token, clipped = pg_token_losses(log_probs, old_log_probs, advantages, mask,
                                         eps_clip=eps_clip, eps_clip_high=eps_clip_high,
                                         sequence_level=sequence_level, cispo=cispo)
    loss = reduce_sample_mean(per_token, mask, denom, num_rollouts)
    with torch.no_grad():
        n = mask.sum().clamp(min=1)
        stats = {
            "pg_loss": float(loss.detach()),
            "pg_clipfrac": float((clipped * mask).sum() / n),
            "ppo_kl": float((-(log_probs - old_log_probs) * mask).sum() / n),
        }
    return loss, stats


def to_flat(values: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``(B, R_max)`` left-aligned response values -> ``(sum_i R_i,)`` in sample order (the
    layout upstream's hooks use: ``torch.cat`` of the per-sample tensors); keeps grad."""
    return values[valid.bool()]


def from_flat(flat: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`to_flat`: ``(sum_i R_i,)`` -> ``(B, R_max)``, 0 in padding; keeps grad.

    Raises:
        ValueError: ``flat`` does not hold one value per real response token.
    """
    keep = valid.bool()
    n = int(keep.sum())
    if flat.dim() != 1 or flat.shape[0] != n:
        raise ValueError(f"expected a flat (sum(response_lengths),) = ({n},) tensor, got shape "
                         f"{tuple(flat.shape)}")
    return torch.zeros(valid.shape, dtype=flat.dtype, device=flat.device).masked_scatter(keep, flat)


def response_log_probs(logits: torch.Tensor, batch: dict[str, Any],
                       temperature: float = 1.0) -> list[torch.Tensor]:
    """Each sample's response-token log probs from a custom loss's ``logits`` and ``batch``.

    Args:
        logits: ``(B, T, V)``, the model's output on ``batch["input_ids"]`` (right-padded).
        batch: the custom loss's batch (reads ``input_ids``, ``total_lengths``,
            ``response_lengths``).
        temperature: divides the logits (the trainer uses ``--rollout-temperature``).

    Returns:
        ``list[Tensor]``, ``(response_lengths[i],)`` each, with grad.
    """
    lp = token_log_probs(logits, batch["input_ids"], temperature)
    out = []
    for i, (n, r) in enumerate(zip(batch["total_lengths"], batch["response_lengths"],
                                   strict=True)):
        out.append(lp[i, n - r - 1:n - 1])
    return out


def sft_loss(log_probs: torch.Tensor, mask: torch.Tensor, denom: torch.Tensor,
             num_rollouts: int) -> tuple[torch.Tensor, dict[str, Any]]:
    """Masked negative log-likelihood of the response tokens.

    Args:
        log_probs: ``(B, R)`` log probs of the response tokens.
        mask: ``(B, R)`` 0/1; denom ``(B,)``; num_rollouts as in :func:`policy_loss`.

    Returns:
        ``(loss, {"sft_loss": float, "sft_token_nll": float})``; ``sft_token_nll`` is the plain
        masked token mean of this micro-batch.
    """
    loss = reduce_sample_mean(-log_probs, mask, denom, num_rollouts)
    with torch.no_grad():
        token_nll = float((-log_probs * mask).sum() / mask.sum().clamp(min=1))
    return loss, {"sft_loss": float(loss.detach()), "sft_token_nll": token_nll}


def response_token_stats(logits: torch.Tensor, input_ids: torch.Tensor, index: ResponseIndex,
                         *, temperature: float = 1.0, with_stats: bool = False
                         ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Log prob, entropy and greedy hit of each response token, computed on the response
    tokens' logits only (the prompt's are never normalised).

    Args:
        logits: ``(B, W, V)``: the model's logits for the last ``W`` positions of the padded
            batch (``W = T`` for all of them; fewer with ``logits_to_keep``), so next-token
            column ``c`` of :class:`~vime.backends.batching.ResponseIndex` is
            ``logits[:, c - (T - W)]``.
        input_ids: ``(B, T)`` long.
        index: where the response tokens are (:func:`vime.backends.batching.response_index`).
        temperature: divides the logits (> 0), as :func:`token_log_probs`.
        with_stats: also return the entropy (nats, with grad) and the greedy hits (0/1).

    Returns:
        ``(log_probs, entropy, hits)``, each ``(N,)`` in ``index`` order (``N`` response
        tokens; entropy and hits None without ``with_stats``). Equal, token for token, to
        :func:`token_log_probs`, :func:`entropy_from_logits` and :func:`argmax_hits` on the
        whole batch picked at ``index``.
    """
    offset = input_ids.shape[1] - logits.shape[1]
    picked = logits[index.rows, index.cols - offset].float()          # (N, V)
    scaled = picked / temperature if temperature != 1.0 else picked
    logp = torch.log_softmax(scaled, dim=-1)
    targets = input_ids[index.rows, index.cols + 1]
    lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    if not with_stats:
        return lp, None, None
    entropy = -(logp.exp() * logp).sum(-1)
    with torch.no_grad():
        hits = (picked.argmax(-1) == targets).float()
    return lp, entropy, hits
