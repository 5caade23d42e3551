"""Near-miss of sample-positional: the samples are built with keywords and generated."""

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.vllm_rollout import generate_and_rm_group, sampling_params_from_args
from vime.utils.async_utils import run
from vime.utils.types import Sample


async def _all(args, groups):
    params = sampling_params_from_args(args)
    for group in groups:
        await generate_and_rm_group(args, group, params, evaluation=False)


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    if evaluation:
        return RolloutFnEvalOutput(data={})
    groups = []
    for g, prompt in enumerate(["1+1=", "2+2="]):
        groups.append([Sample(group_index=g, index=g * 2 + i, prompt=prompt, label=str(2 * g + 2))
                       for i in range(2)])
    run(_all(args, groups))
    return RolloutFnTrainOutput(samples=groups)
