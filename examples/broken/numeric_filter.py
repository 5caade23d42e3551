"""Mistakes: a filter and a logger that assume flat groups of numeric rewards."""

import numpy as np


def dynamic_sampling_filter(args, samples, **kwargs):
    mean = sum(s.reward for s in samples) / len(samples)
    return any(s.reward - mean != 0 for s in samples)


def process_all_samples(args, all_groups, data_source):
    for group in all_groups:
        for element in group:
            if getattr(element, "status", None) is not None:
                element.metadata["reward_array"] = np.array([element.reward])
