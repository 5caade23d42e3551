"""A tool-calling generate that appends the tool's output as trainable tokens with log-prob 0."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.data import load_tokenizer


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    sample = await engine_generate(args, sample, sampling_params)
    observation = tokenizer.encode(" <result>" + "ok " * 12 + "</result>", add_special_tokens=False)
    sample.append_response_tokens(args, tokens=observation, log_probs=[0.0] * len(observation),
                                  trainable=True)
    return sample
