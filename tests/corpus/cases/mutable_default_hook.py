"""A reward that caches judged responses in a mutable default argument."""


async def reward_func(args, sample, cache={}, **kwargs):
    key = (sample.response, sample.label)
    if key not in cache:
        cache[key] = float(str(sample.label) in sample.response)
    return cache[key]
