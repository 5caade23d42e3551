"""A rollout sample filter that returns the kept groups instead of marking remove_sample."""


def rollout_sample_filter(args, groups):
    return [[s for s in group if s.response_length <= 16] for group in groups]
