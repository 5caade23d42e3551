"""Near-miss of cpu-bound-reward: the CPU-bound check runs in a worker thread."""

import asyncio


def equivalent(answer: str, label: str, rounds: int = 200_000) -> bool:
    acc = 0
    for i in range(rounds):
        acc = (acc * 31 + hash((answer, i))) % 1_000_003
    return answer.strip() == label.strip()


async def reward_func(args, sample, **kwargs):
    words = sample.response.split()
    if not words:
        return 0.0
    return 1.0 if await asyncio.to_thread(equivalent, words[-1], str(sample.label)) else 0.0
