"""Near-miss of reward-first-boxed: the last \\boxed{} answer is graded."""


def last_boxed(text: str) -> str | None:
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    end = text.find("}", start)
    return text[start + len("\\boxed{"):end] if end > 0 else None


async def reward_func(args, sample, **kwargs):
    answer = last_boxed(sample.response)
    if answer is None:
        words = sample.response.split()
        answer = words[-1] if words else ""
    return 1.0 if answer.strip(" .$") == str(sample.label).strip() else 0.0
