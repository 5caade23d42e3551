"""Near-miss of sample-filter-returns-list: the filter marks samples in place."""


def rollout_sample_filter(args, groups):
    for group in groups:
        for sample in group:
            if sample.response_length > 16:
                sample.remove_sample = True
