"""Near-miss of filter-returns-bool: the filter returns DynamicFilterOutput with a bool."""

import torch

from vime.rollout.filter_hub.base_types import DynamicFilterOutput


def dynamic_sampling_filter(args, samples, **kwargs):
    rewards = [sample.get_reward_value(args) for sample in samples]
    keep = bool(torch.tensor(rewards, dtype=torch.float).std() > 0.0)
    return DynamicFilterOutput(keep=keep, reason=None if keep else "zero_std")
