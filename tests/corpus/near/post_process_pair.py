"""Near-miss of post-process-one-list: raw and normalised rewards, one of each per sample."""


def reward_post_process(args, samples):
    raw = [s.get_reward_value(args) for s in samples]
    mean = sum(raw) / len(raw)
    return raw, [r - mean for r in raw]
