"""Mistakes: old `data_buffer` name, no evaluation branch, a bare list returned."""

from vime.utils.types import Sample


def generate_rollout(args, rollout_id, data_buffer, evaluation=False):
    groups = data_buffer.get_samples(args.rollout_batch_size)
    for group in groups:
        for sample in group:
            sample.status = "completed"
    return groups


async def reward_func(args, sample, **kwargs):
    if sample.response:
        return 1.0


def make_sample(prompt):
    return Sample(0, 0, None, prompt)
