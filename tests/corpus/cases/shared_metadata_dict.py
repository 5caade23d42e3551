"""A rollout function that gives every sample of a group the same metadata dict, then writes
each sample's turn count into it."""

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.vllm_rollout import generate_and_rm_group, sampling_params_from_args
from vime.utils.async_utils import run


async def _all(args, groups):
    params = sampling_params_from_args(args)
    for group in groups:
        await generate_and_rm_group(args, group, params, evaluation=False)


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    if evaluation:
        return RolloutFnEvalOutput(data={})
    groups = data_source.get_samples(args.rollout_batch_size)
    for group in groups:
        info = {"source": "math"}
        for sample in group:
            sample.metadata = info
            sample.metadata["turns"] = len(sample.response.split("\n"))
    run(_all(args, groups))
    return RolloutFnTrainOutput(samples=groups)
