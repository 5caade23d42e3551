"""Mistakes: an async rollout function, a blocking call in async code, args mutation."""

import time

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput


async def generate_rollout(args, rollout_id, data_source, evaluation=False):
    args.last_rollout_id = rollout_id
    time.sleep(0.1)
    groups = data_source.get_samples(args.rollout_batch_size)
    if evaluation:
        return RolloutFnEvalOutput(data={"toy": {"rewards": []}})
    return RolloutFnTrainOutput(samples=groups)


def generate(args, sample, sampling_params):
    sample.tokens = sample.tokens + [1, 2]
    sample.response_length += 2
    sample.truncated = False
    return sample
