"""A dynamic sampling filter that keeps a group when the std of its rewards is not exactly 0."""

import statistics

from vime.rollout.filter_hub.base_types import DynamicFilterOutput


def dynamic_sampling_filter(args, samples, **kwargs):
    rewards = [s.get_reward_value(args) for s in samples]
    keep = statistics.pstdev(rewards) != 0.0
    return DynamicFilterOutput(keep=keep, reason=None if keep else "zero_std")
