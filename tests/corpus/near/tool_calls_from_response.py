"""Near-miss of getattr-missing-field: the tool-call count is read from the response the
reward scores, which every sample has."""


async def reward_func(args, sample, **kwargs):
    num_turns = sample.response.count("<tool_call>")
    base = 1.0 if str(sample.label) in sample.response else -1.0
    return base + 0.1 * min(num_turns, 3)
