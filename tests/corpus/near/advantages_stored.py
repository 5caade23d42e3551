"""Near-miss of advantages-returned: the advantages are stored in rollout_data."""

import torch


def custom_advantages(args, rollout_data):
    rewards = torch.tensor(rollout_data["rewards"], dtype=torch.float)
    centred = rewards - rewards.mean()
    rollout_data["advantages"] = [torch.full((n,), float(a))
                                  for a, n in zip(centred, rollout_data["response_lengths"])]
    rollout_data["returns"] = rollout_data["advantages"]
