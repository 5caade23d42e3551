"""A two-turn generate that forgets to await the engine on the second turn."""

from vime.rollout.vllm_rollout import generate as engine_generate


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    if sample.response.rstrip().endswith("</tool>"):
        sample = engine_generate(args, sample, sampling_params)
    return sample
