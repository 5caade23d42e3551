"""Near-miss of reward-returns-none: no boxed answer scores 0.0, never None."""

import re

BOXED = re.compile(r"\\boxed\{([^}]*)\}")


async def reward_func(args, sample, **kwargs):
    found = BOXED.findall(sample.response)
    if not found:
        return 0.0
    return 1.0 if found[-1].strip() == sample.label else 0.0
