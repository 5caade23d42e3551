"""Arguments shared by the trainer tests (imported as ``trainer_helpers``)."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path


def make_args(model: Path, **kw: object) -> Namespace:
    """A GRPO policy-loss trainer configuration on ``model``: 2 prompts x 2 samples, one global
    batch of 4, micro-batches of 2; ``kw`` overrides any key."""
    base: dict[str, object] = dict(
        hf_checkpoint=str(model), lr=1e-2, loss_type="policy_loss", advantage_estimator="grpo",
        rollout_batch_size=2, n_samples_per_prompt=2, global_batch_size=4, micro_batch_size=2,
        train_device="cpu", seed=0, rollout_temperature=1.0, clip_grad=1.0, eps_clip=0.2,
        rewards_normalization=True, grpo_std_normalization=True)
    base.update(kw)
    return Namespace(**base)
