"""A rollout function that builds its samples with positional arguments."""

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.utils.types import Sample


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    if evaluation:
        return RolloutFnEvalOutput(data={})
    groups = []
    for g, prompt in enumerate(["1+1=", "2+2="]):
        groups.append([Sample(g, g * 2 + i, None, prompt) for i in range(2)])
    return RolloutFnTrainOutput(samples=groups)
