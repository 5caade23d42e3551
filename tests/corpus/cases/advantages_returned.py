"""A custom advantage function that returns the advantages instead of storing them."""

import torch


def custom_advantages(args, rollout_data):
    rewards = torch.tensor(rollout_data["rewards"], dtype=torch.float)
    centred = rewards - rewards.mean()
    return [torch.full((n,), float(a)) for a, n in zip(centred, rollout_data["response_lengths"])]
