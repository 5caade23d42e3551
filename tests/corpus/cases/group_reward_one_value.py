"""A group reward (--group-rm) that returns the group's mean as a single reward."""


async def batched_reward_func(args, samples, **kwargs):
    hits = [float(str(s.label) in s.response) for s in samples]
    return [sum(hits) / len(hits)]
