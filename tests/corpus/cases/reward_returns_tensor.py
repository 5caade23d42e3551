"""A reward that returns the scorer's tensor instead of a Python number."""

import torch


async def reward_func(args, sample, **kwargs):
    hits = torch.tensor([float(sample.label in sample.response)])
    return hits.mean()
