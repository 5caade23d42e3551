"""Near-miss of reward-returns-tensor: the tensor is computed, a float is returned."""

import torch


async def reward_func(args, sample, **kwargs):
    hits = torch.tensor([float(str(sample.label) in sample.response)])
    return float(hits.mean().item())
