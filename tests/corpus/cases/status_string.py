"""A generate that records truncation with the status string of an older API."""

from vime.rollout.vllm_rollout import generate as engine_generate


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    if sample.response_length >= sampling_params.get("max_tokens", 1 << 30):
        sample.status = "truncated"
    return sample
