"""A rollout function with the old (args, rollout_id, data_buffer, evaluation) signature."""

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput


def generate_rollout(args, rollout_id, data_buffer, evaluation):
    if evaluation:
        return RolloutFnEvalOutput(data={})
    groups = data_buffer.get_samples(args.rollout_batch_size)
    return RolloutFnTrainOutput(samples=groups)
