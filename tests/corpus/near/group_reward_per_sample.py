"""Near-miss of group-reward-one-value: one reward per sample, in order."""


async def batched_reward_func(args, samples, **kwargs):
    return [float(str(s.label) in s.response) for s in samples]
