"""Near-miss of filter-reward-arithmetic: rewards are read with get_reward_value(args)."""

from vime.rollout.filter_hub.base_types import DynamicFilterOutput


def dynamic_sampling_filter(args, samples, **kwargs):
    mean = sum(s.get_reward_value(args) for s in samples) / len(samples)
    keep = 0.0 < mean < 1.0
    return DynamicFilterOutput(keep=keep, reason=None if keep else "all_same")
