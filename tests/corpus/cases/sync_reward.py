"""A reward written as a plain function; vime awaits --custom-rm-path hooks."""


def reward_func(args, sample, **kwargs):
    return 1.0 if sample.label and sample.label in sample.response else 0.0
