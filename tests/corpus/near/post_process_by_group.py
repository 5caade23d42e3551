"""Near-miss of post-process-reshape: rewards are centred per group_index, whatever the
group sizes and the order of the samples."""

from collections import defaultdict


def reward_post_process(args, samples):
    raw = [s.get_reward_value(args) for s in samples]
    groups = defaultdict(list)
    for i, s in enumerate(samples):
        groups[s.group_index].append(i)
    rewards = list(raw)
    for members in groups.values():
        mean = sum(raw[i] for i in members) / len(members)
        for i in members:
            rewards[i] = raw[i] - mean
    return raw, rewards
