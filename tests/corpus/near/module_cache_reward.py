"""Near-miss of mutable-default-hook: the cache is a module-level dict, the signature clean."""

_CACHE: dict = {}


async def reward_func(args, sample, **kwargs):
    key = (sample.response, sample.label)
    if key not in _CACHE:
        _CACHE[key] = float(str(sample.label) in sample.response)
    return _CACHE[key]
