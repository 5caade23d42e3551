"""A reward that compares with sample.label, launched without --label-key (every label None)."""


async def reward_func(args, sample, **kwargs):
    return 1.0 if str(sample.label) in sample.response else 0.0
