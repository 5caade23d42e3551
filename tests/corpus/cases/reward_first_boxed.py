"""A math reward that grades the first \\boxed{} answer, not the final one."""


def first_boxed(text: str) -> str | None:
    start = text.find("\\boxed{")
    if start < 0:
        return None
    end = text.find("}", start)
    return text[start + len("\\boxed{"):end] if end > 0 else None


async def reward_func(args, sample, **kwargs):
    answer = first_boxed(sample.response)
    if answer is None:
        words = sample.response.split()
        answer = words[0] if words else ""
    return 1.0 if answer.strip() == str(sample.label).strip() else 0.0
