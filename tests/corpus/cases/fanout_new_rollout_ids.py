"""A generate that forks one trajectory into two samples, each with a fresh rollout id."""

import copy
import itertools

from vime.rollout.vllm_rollout import generate as engine_generate

_IDS = itertools.count(10_000)


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    branch = copy.deepcopy(sample)
    sample.rollout_id = next(_IDS)
    branch.rollout_id = next(_IDS)
    return [sample, branch]
