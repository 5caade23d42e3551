"""Near-miss of status-string: truncation recorded with the Sample.Status member."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.types import Sample


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    if sample.response_length >= sampling_params.get("max_tokens", 1 << 30):
        sample.status = Sample.Status.TRUNCATED
    return sample
