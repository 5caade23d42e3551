"""A generate that flags a cut-off response with the removed `truncated` boolean."""

from vime.rollout.vllm_rollout import generate as engine_generate


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    sample.truncated = sample.response_length >= sampling_params.get("max_tokens", 1 << 30)
    return sample
