"""The four trainer hooks: loaded once, called where upstream slime calls them, checked at B7.

Usage (inside ``vime.backends.trainer.Trainer``)::

    hooks = TrainerHooks.from_args(args)                # load_function(..., hook=dest): VIM100
    hooks.advantages(args, rollout_data, response_lengths, rollout_id)      # VIM191
    loss, log = hooks.loss(args, batch, logits, sum_of_sample_mean, rollout_id)   # VIM190
    pg, masks, metrics = hooks.tis(tis_kwargs, rollout_id)                # VIM192
    pg_loss = hooks.reduce_pg_loss(factory_args, pg_flat, rollout_id)     # VIM193

Each call's result goes through its check in ``vime.contract.checks.trainer`` before anything
reaches ``backward()`` or the optimiser; a violation raises ``ContractError`` naming the hook's
dotted path, its argument, the field and the fix (always, whatever ``--contract-check`` says).

Where upstream calls them (``slime/backends/megatron_utils/loss.py``):

- ``--custom-advantage-function-path``: ``compute_advantages_and_returns``, once per rollout
  step on the whole step's data, after the log probs, instead of ``--advantage-estimator``.
- ``--custom-loss-function-path`` (``--loss-type custom_loss``): ``loss_function``, once per
  micro-batch, instead of the built-in loss (the hook's loss is the whole loss).
- ``--custom-tis-function-path`` (``--use-tis`` or ``--get-mismatch-metrics``):
  ``policy_loss_function``, on the per-token pg loss before its reduction, by keyword.
- ``--custom-pg-loss-reducer-function-path``: ``policy_loss_function``, building the reducer of
  the per-token pg loss from ``(total_lengths, response_lengths, loss_masks,
  calculate_per_token_loss)`` (the TIS function's masks when TIS ran).

What the hooks receive is documented in docs/en/training.md ("Trainer hooks").
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from vime.config import arg
from vime.contract.checks.trainer import (
    advantages_result_problems,
    custom_loss_result_problems,
    reduced_loss_problems,
    reducer_factory_problems,
    require_trainer_result,
    tis_result_problems,
)

__all__ = ["TRAINER_HOOKS", "TrainerHooks"]

#: The ``HOOKS`` dests the trainer calls.
TRAINER_HOOKS = ("custom_loss_function_path", "custom_advantage_function_path",
                 "custom_tis_function_path", "custom_pg_loss_reducer_function_path")


@dataclass
class TrainerHooks:
    """The configured trainer hooks (None when off) and their dotted paths."""

    paths: dict[str, str]
    fns: dict[str, Callable[..., Any]]

    @classmethod
    def from_args(cls, args: Namespace) -> TrainerHooks:
        """Load every configured trainer hook with its load-time signature check (VIM100).

        Raises:
            ContractError: a path cannot be loaded, or its signature breaks the HookSpec.
        """
        from vime.utils.misc import load_function

        paths = {dest: str(arg(args, dest)) for dest in TRAINER_HOOKS if arg(args, dest)}
        return cls(paths, {dest: load_function(p, hook=dest) for dest, p in paths.items()})

    def has(self, dest: str) -> bool:
        """True when the hook ``dest`` is configured."""
        return dest in self.fns

    def _require(self, found: list[Any], dest: str, rollout_id: int | None) -> None:
        require_trainer_result(found, hook=dest, hook_path=self.paths.get(dest),
                               rollout_id=rollout_id)

    def advantages(self, args: Namespace, rollout_data: dict[str, Any],
                   response_lengths: list[int], rollout_id: int | None
                   ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        """Call ``advantage_fn(args, rollout_data)`` and check what it stored (VIM191).

        Returns:
            ``(advantages, returns)``: one ``(R_i,)`` tensor per sample each; ``returns`` None
            when the hook did not set it (vime has no critic, so nothing reads it).
        """
        dest = "custom_advantage_function_path"
        result = self.fns[dest](args, rollout_data)
        self._require(advantages_result_problems(result, rollout_data, response_lengths), dest,
                      rollout_id)
        return list(rollout_data["advantages"]), rollout_data.get("returns")

    def loss(self, args: Namespace, batch: dict[str, Any], logits: torch.Tensor,
             sum_of_sample_mean: Callable[[torch.Tensor], torch.Tensor],
             rollout_id: int | None) -> tuple[torch.Tensor, dict[str, float]]:
        """Call ``custom_loss(args, batch, logits, sum_of_sample_mean)`` and check it (VIM190).

        Returns:
            ``(loss, log_dict)`` with the log values as floats.
        """
        dest = "custom_loss_function_path"
        result = self.fns[dest](args, batch, logits, sum_of_sample_mean)
        self._require(custom_loss_result_problems(result), dest, rollout_id)
        loss, log_dict = result
        return loss, {k: float(v.detach()) if hasattr(v, "detach") else float(v)
                      for k, v in log_dict.items()}

    def tis(self, kwargs: dict[str, Any], rollout_id: int | None
            ) -> tuple[torch.Tensor, list[torch.Tensor], dict[str, Any]]:
        """Call the TIS function by keyword (``args, pg_loss, train_log_probs,
        rollout_log_probs, loss_masks, total_lengths, response_lengths``) and check (VIM192)."""
        dest = "custom_tis_function_path"
        result = self.fns[dest](**kwargs)
        self._require(tis_result_problems(result, tuple(kwargs["pg_loss"].shape),
                                          [tuple(m.shape) for m in kwargs["loss_masks"]]),
                      dest, rollout_id)
        pg_loss, masks, metrics = result
        return pg_loss, list(masks), dict(metrics)

    def reduce_pg_loss(self, factory_args: tuple[Any, ...], pg_loss: torch.Tensor,
                       rollout_id: int | None) -> torch.Tensor:
        """Build the reducer from ``(total_lengths, response_lengths, loss_masks,
        calculate_per_token_loss)`` and apply it to the flat per-token ``pg_loss`` (VIM193)."""
        dest = "custom_pg_loss_reducer_function_path"
        reducer = self.fns[dest](*factory_args)
        self._require(reducer_factory_problems(reducer), dest, rollout_id)
        value = reducer(pg_loss)
        self._require(reduced_loss_problems(value, input_requires_grad=pg_loss.requires_grad),
                      dest, rollout_id)
        out: torch.Tensor = value.reshape(())
        return out
