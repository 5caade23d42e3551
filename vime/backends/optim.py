"""AdamW and the learning-rate schedule: linear warm-up, then constant, cosine or linear decay.

Usage::

    optimizer = build_optimizer(model, args)          # AdamW(lr, betas, eps, weight_decay)
    scheduler = build_scheduler(optimizer, args, total_steps=100)
    lr_at(step=10, lr=1e-3, min_lr=0.0, warmup=5, total=100, style="cosine")

``lr_at(step)`` is the rate used for optimiser step ``step`` (0-based): ``lr * (step + 1) /
warmup`` during warm-up, then ``constant``: ``lr``; ``linear``: from ``lr`` down to ``min_lr`` at
``total``; ``cosine``: ``min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2`` with ``p`` the
post-warm-up progress in [0, 1].

AdamW as in Loshchilov & Hutter 2019; cosine decay as in Loshchilov & Hutter 2017 (SGDR), without
restarts.
"""

from __future__ import annotations

import math
from argparse import Namespace

import torch

from vime.config import arg

__all__ = ["LR_STYLES", "build_optimizer", "build_scheduler", "lr_at"]

LR_STYLES = ("constant", "linear", "cosine")


def lr_at(step: int, *, lr: float, min_lr: float, warmup: int, total: int | None,
          style: str) -> float:
    """The learning rate of optimiser step ``step`` (0-based).

    Args:
        lr: peak rate; min_lr: floor of the decay; warmup: warm-up steps (0 = none);
        total: total optimiser steps (decay horizon; None = no decay, as ``constant``);
        style: one of :data:`LR_STYLES`.

    Raises:
        ValueError: unknown ``style`` (lists the allowed ones).
    """
    if style not in LR_STYLES:
        raise ValueError(f"--lr-decay-style {style!r} is not supported; use one of {LR_STYLES}")
    if warmup > 0 and step < warmup:
        return lr * (step + 1) / warmup
    if style == "constant" or not total or total <= warmup:
        return lr
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    if style == "linear":
        return lr + (min_lr - lr) * progress
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


def build_optimizer(model: torch.nn.Module, args: Namespace) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters; biases and norm weights (1-D) get no weight decay
    unless ``weight_decay_all``.

    Reads ``lr``, ``weight_decay``, ``weight_decay_all``, ``adam_beta1``, ``adam_beta2``,
    ``adam_eps`` (default 1e-8).
    """
    decay_all = bool(arg(args, "weight_decay_all"))
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for p in model.parameters():
        if p.requires_grad:
            (decay if p.ndim >= 2 or decay_all else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": float(arg(args, "weight_decay"))},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(
        groups, lr=float(args.lr),
        betas=(float(arg(args, "adam_beta1")), float(arg(args, "adam_beta2"))),
        eps=float(getattr(args, "adam_eps", 1e-8) or 1e-8),
    )


def build_scheduler(optimizer: torch.optim.Optimizer, args: Namespace,
                    total_steps: int | None) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` following :func:`lr_at` (reads ``lr``, ``min_lr``, ``lr_warmup_steps``,
    ``lr_decay_style``); its ``state_dict`` checkpoints the step count."""
    lr = float(args.lr)
    min_lr = float(arg(args, "min_lr"))
    warmup = int(arg(args, "lr_warmup_steps"))
    style = arg(args, "lr_decay_style")
    lr_at(0, lr=lr, min_lr=min_lr, warmup=warmup, total=total_steps, style=style)  # validate

    def factor(step: int) -> float:
        return lr_at(step, lr=lr, min_lr=min_lr, warmup=warmup, total=total_steps,
                     style=style) / lr if lr else 0.0

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
