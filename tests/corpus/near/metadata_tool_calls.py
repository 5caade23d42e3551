"""Near-miss of getattr-missing-field: the tool-call count is read from metadata, where the
generate stores it."""


async def reward_func(args, sample, **kwargs):
    num_turns = int(sample.metadata.get("tool_call_count", 0))
    base = 1.0 if str(sample.label) in sample.response else -1.0
    return base + 0.1 * min(num_turns, 3)
