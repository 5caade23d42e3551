"""A rollout function declared async def (the manager calls it synchronously)."""

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.vllm_rollout import generate_and_rm_group


async def generate_rollout(args, rollout_id, data_source, evaluation=False):
    if evaluation:
        return RolloutFnEvalOutput(data={})
    groups = data_source.get_samples(args.rollout_batch_size)
    for group in groups:
        await generate_and_rm_group(args, group, {}, evaluation=False)
    return RolloutFnTrainOutput(samples=groups)
