"""An async reward that does seconds of CPU-bound checking on the event loop."""


def equivalent(answer: str, label: str, rounds: int = 200_000) -> bool:
    acc = 0
    for i in range(rounds):
        acc = (acc * 31 + hash((answer, i))) % 1_000_003
    return answer.strip() == label.strip()


async def reward_func(args, sample, **kwargs):
    words = sample.response.split()
    return 1.0 if words and equivalent(words[-1], str(sample.label)) else 0.0
