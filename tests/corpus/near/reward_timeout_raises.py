"""Near-miss of swallowed-reward-error: a wrong program scores 0, a broken sandbox raises."""


class WrongAnswer(Exception):
    """The model's program failed: it did not compile, raised, or failed a test."""


def run_tests(code: str, tests: str) -> bool:
    try:
        compiled = compile(code + "\n" + tests, "<response>", "exec")
    except SyntaxError as exc:
        raise WrongAnswer(str(exc)) from exc
    namespace: dict = {}
    try:
        exec(compiled, namespace)
    except (AssertionError, ArithmeticError, LookupError, NameError, TypeError,
            ValueError) as exc:
        raise WrongAnswer(str(exc)) from exc
    return True


async def reward_func(args, sample, **kwargs):
    try:
        return 1.0 if run_tests(sample.response, sample.label or "") else 0.0
    except WrongAnswer:
        return 0.0
