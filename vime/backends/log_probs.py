"""The model's forward pass on token rows, and the log probs of their response tokens.

Usage (inside ``vime.backends.trainer.Trainer``)::

    batch, logits = forward(model, tokens, pad_id=0, device=device)        # (B, T, V) logits
    lp, valid, _ = response_log_probs(model, tokens, rlens, pad_id=0, device=device,
                                      temperature=1.0)                     # (B, R_max) each
    rows = compute_log_probs(model, tokens, rlens, dp=dp, pad_id=0, device=device,
                             temperature=1.0, micro_batch_size=8)          # list[list[float]]

Shapes: ``B`` rows of a micro-batch, ``T`` the longest row (prompt + response tokens), ``V``
the vocabulary, ``R_max`` the longest response. Log probs are natural logs of the model's
next-token distribution at ``temperature`` (logits divided by it, ``vime.backends.losses``);
rows are right-padded with ``pad_id`` (``vime.backends.batching.pad_batch``).

The functions read and change nothing but what they are given (the model's ``train``/``eval``
mode is put back as it was by :func:`compute_log_probs`).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch

from vime.backends.batching import (
    PaddedBatch,
    micro_batches,
    pad_batch,
    response_index,
    scatter_response,
)
from vime.backends.losses import response_token_stats
from vime.backends.parallel import DataParallel

__all__ = ["compute_log_probs", "forward", "keeps_logits", "response_log_probs"]


def forward(model: torch.nn.Module, tokens: Sequence[Sequence[int]], *, pad_id: int,
            device: torch.device) -> tuple[PaddedBatch, torch.Tensor]:
    """The right-padded batch of ``tokens`` (``B`` rows of ids) on ``device`` and the model's
    ``(B, T, V)`` logits on it (with grad unless the caller disabled it)."""
    batch = pad_batch(tokens, pad_id=pad_id, side="right", device=device)
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                   position_ids=batch.position_ids).logits
    return batch, logits


def response_log_probs(model: torch.nn.Module, tokens: Sequence[Sequence[int]],
                       response_lengths: Sequence[int], *, pad_id: int, device: torch.device,
                       temperature: float, with_stats: bool = False
                       ) -> tuple[torch.Tensor, torch.Tensor,
                                  tuple[torch.Tensor, torch.Tensor] | None]:
    """``(log_probs, valid, stats)`` of each row's last ``response_lengths[i]`` tokens.

    Only the response tokens' logits are normalised (``losses.response_token_stats``), and a
    model that takes ``logits_to_keep`` computes its output head from the first response
    position of the micro-batch on: the prompts' logits are never needed. The values equal
    the whole-batch computation's (``token_log_probs``, ``entropy_from_logits``,
    ``argmax_hits``) token for token.

    Returns:
        ``log_probs`` and ``valid`` (float 0/1), each ``(B, R_max)``, the response tokens
        left-aligned (``valid`` False past a row's response); ``stats`` (``with_stats``, else
        None) is ``(entropy, argmax_hits)``, each ``(B, R_max)``: the entropy with grad (for
        ``--entropy-coef``), the hits (1.0 where the argmax is the token) without.
    """
    batch = pad_batch(tokens, pad_id=pad_id, side="right", device=device)
    index = response_index(batch, response_lengths)
    kwargs: dict[str, Any] = {}
    if keeps_logits(model):   # the output head from the first response position on
        kwargs["logits_to_keep"] = batch.input_ids.shape[1] - index.first_col
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                   position_ids=batch.position_ids, **kwargs).logits
    lp, ent, hits = response_token_stats(logits, batch.input_ids, index,
                                         temperature=temperature, with_stats=with_stats)
    lp_out, valid = scatter_response(lp, index)
    if ent is None or hits is None:
        return lp_out, valid, None
    return lp_out, valid, (scatter_response(ent, index)[0],  # with grad: --entropy-coef
                           scatter_response(hits, index)[0])


def keeps_logits(model: torch.nn.Module) -> bool:
    """Whether ``model``'s forward takes ``logits_to_keep`` (Hugging Face causal LMs since
    transformers 4.45: the output head runs on the last N positions only); read once per
    model class, not on every micro-batch."""
    cls = type(model)
    known = _KEEPS_LOGITS.get(cls)
    if known is None:
        known = _KEEPS_LOGITS[cls] = "logits_to_keep" in inspect.signature(cls.forward).parameters
    return known


#: model class -> whether its forward takes ``logits_to_keep`` (:func:`keeps_logits`).
_KEEPS_LOGITS: dict[type, bool] = {}


@torch.no_grad()
def compute_log_probs(model: torch.nn.Module, tokens: Sequence[Sequence[int]],
                      response_lengths: Sequence[int], *, dp: DataParallel, pad_id: int,
                      device: torch.device, temperature: float, micro_batch_size: int = 8
                      ) -> list[list[float]]:
    """Log probs of each sample's response tokens under ``model`` (in eval mode, no grad).

    Args:
        tokens: ``list[list[int]]`` prompt + response ids, one row per sample.
        response_lengths: response tokens per sample (the last ones of its row).
        dp: the trainer ranks; with several, each rank scores its share (``dp.share``), runs
            as many forwards as the busiest rank (FSDP2's all-gathers pair up) and the shares
            are gathered, so every rank returns every sample's.
        micro_batch_size: rows per forward.

    Returns:
        ``list[list[float]]``, ``response_lengths[i]`` natural-log probs for sample ``i``
        (at ``temperature``).
    """
    was_training = model.training
    model.eval()
    mine = dp.share(len(tokens))
    out: dict[int, list[float]] = {}
    try:
        chunks = micro_batches([len(tokens[i]) for i in mine], micro_batch_size=micro_batch_size)
        # agreed before any forward: FSDP2's all-gathers must pair up across ranks
        passes = dp.pad_count(len(chunks))
        for pos in chunks:
            rows = [mine[k] for k in pos]
            lp, _, _ = response_log_probs(model, [tokens[i] for i in rows],
                                          [response_lengths[i] for i in rows], pad_id=pad_id,
                                          device=device, temperature=temperature)
            out.update({i: lp[k, :response_lengths[i]].tolist() for k, i in enumerate(rows)})
        for _ in range(passes - len(chunks)):
            forward(model, [[pad_id]], pad_id=pad_id, device=device)
    finally:
        model.train(was_training)
    if dp.sharded:
        for part in dp.gather(out):
            out.update(part)
    return [out[i] for i in range(len(tokens))]
