"""A reward that accepts an answer when either string contains the other."""


async def reward_func(args, sample, **kwargs):
    answer = sample.response.strip().split("\n")[-1].strip() if sample.response.strip() else ""
    label = str(sample.label).strip()
    return 1.0 if (label in answer or answer in label) else 0.0
