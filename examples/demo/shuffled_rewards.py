"""The demo's control run (``--custom-reward-post-process-path``): GRPO on shuffled rewards.

Each step's rewards are shuffled across all its samples before the per-group normalisation,
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

Source: ours (a permutation control, as in the shuffled-label baselines of supervised
learning).
"""

from __future__ import annotations

import random
from argparse import Namespace
from collections.abc import Sequence

from vime.data.batch_builder import normalize_group_rewards
from vime.utils.types import Sample

__all__ = ["reward_post_process"]

_RNG = random.Random(0)


def reward_post_process(args: Namespace, samples: Sequence[Sample]) -> tuple[list[float],
                                                                            list[float]]:
    """``(raw, rewards)``, one of each per flat sample: ``raw`` the samples' own rewards,
    ``rewards`` a permutation of them normalised per ``group_index`` (GRPO: ``(r - mean) /
    (std + 1e-6)``, ``vime.data.batch_builder.normalize_group_rewards``).

    Raises:
        ValueError: a sample without a real-valued reward or without a ``group_index``.
    """
    raw: list[float] = []
    for sample in samples:
        value = sample.get_reward_value(args)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"sample index={sample.index}: reward {value!r} is not a number")
        if sample.group_index is None:
            raise ValueError(f"sample index={sample.index}: no group_index to normalise by")
        raw.append(float(value))
    shuffled = _RNG.sample(raw, len(raw))
    groups: dict[int, list[int]] = {}
    for i, sample in enumerate(samples):
        groups.setdefault(int(sample.group_index), []).append(i)  # type: ignore[arg-type]
    divide = bool(getattr(args, "grpo_std_normalization", True))
    rewards = [0.0] * len(samples)
    for members in groups.values():
        normed = normalize_group_rewards([shuffled[i] for i in members], divide_by_std=divide)
        for i, value in zip(members, normed, strict=True):
            rewards[i] = value
    return raw, rewards
