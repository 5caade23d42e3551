"""Near-miss of zero-logprob-tool-tokens: the observation is appended as environment tokens,
when it fits the response budget."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.data import load_tokenizer
from vime.utils.types import Sample


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    sample = await engine_generate(args, sample, sampling_params)
    text = " <result>ok</result>"
    observation = tokenizer.encode(text, add_special_tokens=False)
    budget = args.rollout_max_response_len
    if sample.status == Sample.Status.COMPLETED and sample.response_length + len(observation) <= budget:
        sample.append_response_tokens(args, tokens=observation, trainable=False, text=text)
    return sample
