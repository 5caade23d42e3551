"""Near-miss of mask-from-full-tokens: the loss mask has one entry per response token."""

from vime.rollout.vllm_rollout import generate as engine_generate


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    sample.loss_mask = [1] * sample.response_length
    return sample
