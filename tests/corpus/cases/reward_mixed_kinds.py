"""A reward that returns a dict when it can grade and a bare 0.0 when it cannot."""


async def reward_func(args, sample, **kwargs):
    if sample.label is None:
        return 0.0
    correct = sample.label in sample.response
    return {"score": float(correct), "acc": correct}
