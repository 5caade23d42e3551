"""Near-miss of sync-reward: the same scorer as an async def."""


async def reward_func(args, sample, **kwargs):
    return 1.0 if sample.label and sample.label in sample.response else 0.0
