"""A reward that strips \\boxed{} first, then hands the bare answer to a grader that looks for
\\boxed{} again."""

import re

BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def grade(solution: str, label: str) -> bool:
    found = BOXED.findall(solution)
    return bool(found) and found[-1].strip() == label.strip()


async def reward_func(args, sample, **kwargs):
    found = BOXED.findall(sample.response)
    extracted = found[-1] if found else sample.response
    return 1.0 if grade(extracted, str(sample.label)) else 0.0
