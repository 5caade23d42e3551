"""A reward that shapes the score by `sample.tool_call_count`, a field Sample does not have."""


async def reward_func(args, sample, **kwargs):
    num_turns = getattr(sample, "tool_call_count", 0)
    base = 1.0 if str(sample.label) in sample.response else -1.0
    return base + 0.1 * min(num_turns, 3)
