"""The demo's control run (``--custom-reward-post-process-path``): GRPO on shuffled rewards.

Each step's rewards are shuffled across its rollouts before the per-group normalisation,
so the policy is trained on rewards that have nothing to do with its answers, at the same
reward rate, with the same optimiser, learning rate and number of steps. If GRPO's gain in
``make demo`` came from continued training rather than from the reward, this run would gain
as much. The logged ``raw_reward`` stays the true one (what the policy actually earns).

    reward_post_process(args, samples)   # -> (true raw rewards, normalised shuffled rewards)

Run it from the demo's SFT checkpoint (from the repository root, after ``make demo``)::

    python -m vime.demo --skip-lint --skip-sft --control
    PYTHONPATH=$PWD vime train --config examples/demo/grpo.yaml --run-dir runs/demo/control \
        --custom-reward-post-process-path examples.demo.shuffled_rewards.reward_post_process
    vime-lint rollout examples/demo/shuffled_rewards.py

A permutation control, as in the shuffled-label baselines of supervised learning.
"""

from __future__ import annotations

import random
from argparse import Namespace
from collections.abc import Sequence

from vime.data.batch_builder import normalised_rewards, raw_rewards, rollout_keys
from vime.utils.types import Sample

__all__ = ["reward_post_process"]

_RNG = random.Random(0)


def reward_post_process(args: Namespace, samples: Sequence[Sample]) -> tuple[list[float],
                                                                            list[float]]:
    """``(raw, rewards)``, one of each per flat sample: ``raw`` the samples' own rewards,
    ``rewards`` the built-in group normalisation (``vime.data.batch_builder``; GRPO:
    ``(r - mean) / (std + 1e-6)`` per prompt group) of a permutation of the rollouts' rewards.
    The segments of one rollout keep one reward between them.

    Raises:
        ContractError: the built-in checks: VIM110 (a reward that is not a finite real),
            VIM113/VIM115 (groups, segments).
    """
    raw = raw_rewards(args, samples)
    keys = rollout_keys(samples)
    first: dict[object, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    rollouts = list(first)
    permuted = _RNG.sample([raw[first[key]] for key in rollouts], len(rollouts))
    reward_of = dict(zip(rollouts, permuted, strict=True))
    return raw, normalised_rewards(args, samples, [reward_of[key] for key in keys], keys)
