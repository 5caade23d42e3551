"""A custom rollout function that returns its groups without finalize_rollout_groups while the
launch sets --rollout-sample-filter-path."""

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.vllm_rollout import generate_and_rm_group, sampling_params_from_args
from vime.utils.async_utils import run


def drop_overlong(args, groups):
    for group in groups:
        for sample in group:
            if sample.response_length > 16:
                sample.remove_sample = True


async def _all(args, groups):
    params = sampling_params_from_args(args)
    for group in groups:
        await generate_and_rm_group(args, group, params, evaluation=False)


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    if evaluation:
        return RolloutFnEvalOutput(data={})
    groups = data_source.get_samples(args.rollout_batch_size)
    run(_all(args, groups))
    return RolloutFnTrainOutput(samples=groups)
