"""A dynamic sampling filter that returns the comparison tensor, as older docs showed."""

import torch


def dynamic_sampling_filter(args, samples, **kwargs):
    rewards = [sample.get_reward_value(args) for sample in samples]
    return torch.tensor(rewards, dtype=torch.float).std() > 0.0
