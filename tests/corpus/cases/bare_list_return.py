"""A rollout function that returns the list of groups, on the eval path too."""

from vime.rollout.vllm_rollout import generate_and_rm_group, sampling_params_from_args
from vime.utils.async_utils import run


async def _all(args, groups, evaluation):
    params = sampling_params_from_args(args)
    for group in groups:
        await generate_and_rm_group(args, group, params, evaluation=evaluation)


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    groups = data_source.get_samples(args.rollout_batch_size)
    run(_all(args, groups, evaluation))
    return groups
