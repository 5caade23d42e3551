"""A code reward that turns every failure of the sandbox into a score of 0."""


def run_tests(code: str, tests: str) -> bool:
    namespace: dict = {}
    exec(code + "\n" + tests, namespace)
    return True


async def reward_func(args, sample, **kwargs):
    try:
        return 1.0 if run_tests(sample.response, sample.label or "") else 0.0
    except Exception:
        return 0.0
