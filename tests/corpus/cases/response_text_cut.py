"""A generate that cuts the response text at the first stop marker but keeps every token."""

from vime.rollout.vllm_rollout import generate as engine_generate

STOP = "</answer>"


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    cut = sample.response.find(STOP)
    if cut >= 0:
        sample.response = sample.response[:cut + len(STOP)]
    return sample
