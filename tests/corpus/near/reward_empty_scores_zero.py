"""Near-miss of reward-nan: the length-normalised reward scores an empty response 0.0."""


async def reward_func(args, sample, **kwargs):
    words = sample.response.split()
    if not words:
        return 0.0
    hits = sum(1 for w in words if w.strip(".") == str(sample.label))
    return hits / len(words)
