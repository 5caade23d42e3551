"""A generate that sizes the loss mask by the whole sequence, prompt included."""

from vime.rollout.vllm_rollout import generate as engine_generate


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    sample.loss_mask = [1] * len(sample.tokens)
    return sample
