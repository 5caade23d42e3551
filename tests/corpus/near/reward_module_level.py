"""Near-miss of nested-reward-factory: the weight is a module constant, the hook a plain def."""

WEIGHT = 0.5


async def reward_func(args, sample, **kwargs):
    return WEIGHT * float(str(sample.label) in sample.response)
