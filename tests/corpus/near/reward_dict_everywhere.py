"""Near-miss of reward-mixed-kinds: a dict on every path, read through --reward-key."""


async def reward_func(args, sample, **kwargs):
    if sample.label is None:
        return {"score": 0.0, "acc": False}
    correct = sample.label in sample.response
    return {"score": float(correct), "acc": correct}
