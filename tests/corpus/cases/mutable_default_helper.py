"""A reward whose helper keeps the answers it has seen in a mutable default argument."""


def novelty(answer: str, seen: set = set()) -> float:
    bonus = 0.0 if answer in seen else 0.1
    seen.add(answer)
    return bonus


async def reward_func(args, sample, **kwargs):
    answer = sample.response.strip().split()[-1] if sample.response.strip() else ""
    return float(answer == str(sample.label)) + novelty(answer)
