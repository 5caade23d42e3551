"""Near-miss of swallowed-reward-error: a wrong program scores 0, a broken sandbox raises."""


class WrongAnswer(Exception):
    """The program ran and a test failed."""


def run_tests(code: str, tests: str) -> bool:
    namespace: dict = {}
    try:
        exec(code + "\n" + tests, namespace)
    except AssertionError as exc:
        raise WrongAnswer(str(exc)) from exc
    return True


async def reward_func(args, sample, **kwargs):
    try:
        return 1.0 if run_tests(sample.response, sample.label or "") else 0.0
    except WrongAnswer:
        return 0.0
