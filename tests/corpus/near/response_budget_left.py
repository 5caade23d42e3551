"""Near-miss of budget-minus-prompt: each turn's budget subtracts the response so far."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.types import Sample

MAX_TURNS = 3


async def generate(args, sample, sampling_params):
    for _ in range(MAX_TURNS):
        left = args.rollout_max_response_len - sample.response_length
        if left <= 0:
            sample.status = Sample.Status.TRUNCATED
            break
        sample = await engine_generate(args, sample, {**sampling_params, "max_tokens": left})
        if sample.status != Sample.Status.COMPLETED or "<tool>" not in sample.response:
            break
        sample.append_response_tokens(args, tokens=[0], trainable=False, text=" ")
        sample.status = Sample.Status.PENDING
    return sample
