"""Near-miss of fanout-new-rollout-ids: both branches keep the trajectory's rollout id."""

import copy

from vime.rollout.vllm_rollout import generate as engine_generate


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    if sample.rollout_id is None:
        sample.rollout_id = sample.index
    branch = copy.deepcopy(sample)
    return [sample, branch]
