"""Padding token sequences into tensors and cutting steps into micro-batches.

Usage::

    batch = pad_batch([[5, 6, 7], [5, 6]], pad_id=0, side="left")
    batch.input_ids          # (B, T) long
    batch.position_ids       # cumsum(attention_mask) - 1, clamped at 0
    resp = gather_response(token_lp, batch, response_lengths=[2, 1])   # (B, R) log probs
    micro_batches(step_rows=8, micro_batch_size=2)                       # [[0, 1], [2, 3], ...]

With left padding a model given no ``position_ids`` numbers the pad tokens too, so the real
tokens get shifted positions and different log probs than the sampler computed; passing
``position_ids = cumsum(mask) - 1`` fixes that for either side (docs/environment.md, "Pitfalls").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["PaddedBatch", "ResponseIndex", "float_tensors", "gather_response", "micro_batches",
           "pad_batch", "pad_per_token", "response_index", "scatter_response"]


@dataclass(frozen=True)
class PaddedBatch:
    """A padded batch: ``input_ids``, ``attention_mask`` (1 = token), ``position_ids``, all
    ``(B, T)``, plus each row's token count ``lengths`` and the padding ``side``."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    lengths: list[int]
    side: str


def pad_batch(tokens: Sequence[Sequence[int]], *, pad_id: int = 0, side: str = "right",
              device: torch.device | str = "cpu") -> PaddedBatch:
    """Pad ``tokens`` (``list[list[int]]``) to the longest row on ``side`` ("left"/"right").

    Raises:
        ValueError: an empty row, or an unknown ``side``.
    """
    if side not in ("left", "right"):
        raise ValueError(f"padding side {side!r}: expected 'left' or 'right'")
    lengths = [len(t) for t in tokens]
    if not lengths or min(lengths) == 0:
        raise ValueError("pad_batch: every sequence needs at least one token")
    width = max(lengths)
    ids = torch.full((len(tokens), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(tokens), width), dtype=torch.long)
    for i, row in enumerate(tokens):
        start = width - len(row) if side == "left" else 0
        ids[i, start:start + len(row)] = torch.tensor(list(row), dtype=torch.long)
        mask[i, start:start + len(row)] = 1
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    return PaddedBatch(ids.to(device), mask.to(device), position_ids.to(device), lengths, side)


@dataclass(frozen=True)
class ResponseIndex:
    """Where each response token's next-token values sit in a :class:`PaddedBatch`.

    ``rows[k]``, ``cols[k]``: the ``(B, T - 1)`` next-token column of the ``k``-th response
    token (``logits[rows[k], cols[k]]`` predicts ``input_ids[rows[k], cols[k] + 1]``);
    ``out_cols[k]``: its column in the ``(B, R_max)`` left-aligned result. ``first_col`` is
    ``min(cols)``: logits before it are never read (the prompts).
    """

    rows: torch.Tensor
    cols: torch.Tensor
    out_cols: torch.Tensor
    shape: tuple[int, int]

    @property
    def first_col(self) -> int:
        return int(self.cols.min())


def response_index(batch: PaddedBatch, response_lengths: Sequence[int]) -> ResponseIndex:
    """The :class:`ResponseIndex` of ``response_lengths`` (tokens at the end of each row,
    ``1 <= r <= length - 1``) in ``batch``.

    Raises:
        ValueError: a response length is < 1 or leaves no prompt token (names the row).
    """
    width = batch.input_ids.shape[1]
    rows: list[int] = []
    cols: list[int] = []
    out_cols: list[int] = []
    for i, (n, r) in enumerate(zip(batch.lengths, response_lengths, strict=True)):
        if r < 1 or r > n - 1:
            raise ValueError(f"row {i}: response_length={r} must be in [1, len(tokens) - 1 = "
                             f"{n - 1}] (the first token has no log prob)")
        end = (width if batch.side == "left" else n) - 2  # token_lp column of the last token
        rows += [i] * r
        cols += range(end - r + 1, end + 1)
        out_cols += range(r)
    device = batch.input_ids.device
    return ResponseIndex(torch.tensor(rows, device=device), torch.tensor(cols, device=device),
                         torch.tensor(out_cols, device=device),
                         (len(response_lengths), max(response_lengths)))


def scatter_response(values: torch.Tensor, index: ResponseIndex
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(out, valid)``, each ``(B, R_max)``: the per-response-token ``values`` (``(N,)``, in
    :class:`ResponseIndex` order) left-aligned per row, and the float mask of real columns."""
    out = values.new_zeros(index.shape).index_put((index.rows, index.out_cols), values)
    valid = values.new_zeros(index.shape)
    valid[index.rows, index.out_cols] = 1.0
    return out, valid


def gather_response(token_lp: torch.Tensor, batch: PaddedBatch,
                    response_lengths: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick each row's response-token values out of next-token values.

    Args:
        token_lp: ``(B, T - 1)``; entry ``t`` belongs to token ``t + 1`` (see
            ``losses.token_log_probs``).
        batch: the :class:`PaddedBatch` it was computed on.
        response_lengths: tokens at the end of each row (``1 <= r <= length - 1``).

    Returns:
        ``(values, valid)``: ``(B, R_max)`` values, left-aligned (response token j at column j),
        and a ``(B, R_max)`` float mask of real columns.

    Raises:
        ValueError: a response length is < 1 or leaves no prompt token (names the row).
    """
    index = response_index(batch, response_lengths)
    return scatter_response(token_lp[index.rows, index.cols], index)


def pad_per_token(rows: Sequence[Sequence[float]], width: int, *,
                  device: torch.device | str = "cpu") -> torch.Tensor:
    """``list[list[float]]`` (one entry per response token) -> ``(B, width)`` float32, 0-padded."""
    out = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, row in enumerate(rows):
        if len(row):
            out[i, :len(row)] = torch.tensor(list(row), dtype=torch.float32)
    return out.to(device)


def float_tensors(rows: Sequence[Sequence[float]], device: torch.device | str = "cpu"
                  ) -> list[torch.Tensor]:
    """``list[list[float]]`` -> one ``(len(row),)`` float32 tensor per row on ``device``."""
    return [torch.tensor(list(r), dtype=torch.float32, device=device) for r in rows]


def micro_batches(total_lengths: Sequence[int], *, micro_batch_size: int,
                  max_tokens: int | None = None) -> list[list[int]]:
    """Row indices of each micro-batch, in order.

    Fixed size ``micro_batch_size`` rows, or with ``max_tokens`` (``--use-dynamic-batch-size``
    with ``--max-tokens-per-gpu``) greedy packs whose summed ``total_lengths`` stay within
    ``max_tokens`` (a longer single row gets its own micro-batch).

    Raises:
        ValueError: ``micro_batch_size < 1`` or ``max_tokens < 1``.
    """
    if max_tokens is None:
        if micro_batch_size < 1:
            raise ValueError(f"--micro-batch-size={micro_batch_size} must be >= 1")
        n = len(total_lengths)
        return [list(range(i, min(i + micro_batch_size, n))) for i in range(0, n, micro_batch_size)]
    if max_tokens < 1:
        raise ValueError(f"--max-tokens-per-gpu={max_tokens} must be >= 1")
    out: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, n_tok in enumerate(total_lengths):
        if current and used + n_tok > max_tokens:
            out.append(current)
            current, used = [], 0
        current.append(i)
        used += n_tok
    if current:
        out.append(current)
    return out
