"""A reward post-process hook that normalises by reshaping into rows of n_samples_per_prompt."""

import torch


def reward_post_process(args, samples):
    raw = [s.get_reward_value(args) for s in samples]
    rewards = torch.tensor(raw, dtype=torch.float)
    if rewards.numel() % args.n_samples_per_prompt == 0:
        rewards = rewards.view(-1, args.n_samples_per_prompt)
    else:
        rewards = rewards.view(1, -1)
    rewards = rewards - rewards.mean(dim=-1, keepdim=True)
    return raw, rewards.flatten().tolist()
