"""A reward that returns a dict of score and accuracy, launched without --reward-key."""


async def reward_func(args, sample, **kwargs):
    correct = sample.label is not None and sample.label in sample.response
    return {"score": 1.0 if correct else -1.0, "acc": float(correct)}
