"""Near-miss of reward-missing-metadata-key: the label comes from --label-key."""


async def reward_func(args, sample, **kwargs):
    truth = sample.label
    if truth is None:
        raise ValueError("this reward needs --label-key")
    return 1.0 if str(truth) in sample.response else 0.0
