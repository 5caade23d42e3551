"""A length-normalised reward that divides by the number of words of the response."""


async def reward_func(args, sample, **kwargs):
    words = sample.response.split()
    hits = sum(1 for w in words if w.strip(".") == str(sample.label))
    return hits / len(words) if words else float("nan")
