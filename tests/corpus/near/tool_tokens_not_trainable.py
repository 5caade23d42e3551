"""Near-miss of zero-logprob-tool-tokens: the observation is appended as environment tokens."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.data import load_tokenizer


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    sample = await engine_generate(args, sample, sampling_params)
    text = " <result>ok</result>"
    observation = tokenizer.encode(text, add_special_tokens=False)
    sample.append_response_tokens(args, tokens=observation, trainable=False, text=text)
    return sample
