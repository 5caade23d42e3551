"""A reward that abstains (returns None) when it finds no boxed answer."""

import re

BOXED = re.compile(r"\\boxed\{([^}]*)\}")


async def reward_func(args, sample, **kwargs):
    found = BOXED.findall(sample.response)
    if not found:
        return None
    return 1.0 if found[-1].strip() == sample.label else 0.0
