"""Near-miss of response-text-cut: the engine stops at the marker, so the text and the
tokens end at the same place; the text is only stripped of whitespace."""

from vime.rollout.vllm_rollout import generate as engine_generate

STOP = "</answer>"


async def generate(args, sample, sampling_params):
    params = {**sampling_params, "stop": [STOP], "include_stop_str_in_output": True}
    sample = await engine_generate(args, sample, params)
    sample.response = sample.response.rstrip()
    return sample
