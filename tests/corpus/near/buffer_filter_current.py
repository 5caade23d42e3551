"""Near-miss of buffer-filter-stale-signature: the current signature, groups removed."""


def buffer_filter(args, rollout_id, buffer, num_samples):
    taken = buffer[:num_samples]
    del buffer[:num_samples]
    return taken
