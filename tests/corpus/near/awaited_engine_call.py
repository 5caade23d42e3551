"""Near-miss of unawaited-engine-call: both turns await the engine."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.types import Sample


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    if sample.status == Sample.Status.COMPLETED and sample.response.rstrip().endswith("</tool>"):
        sample.append_response_tokens(args, tokens=[0], trainable=False, text=" ")
        sample.status = Sample.Status.PENDING
        sample = await engine_generate(args, sample, sampling_params)
    return sample
