"""Near-miss of zero-logprob-tool-tokens: the observation is appended as environment tokens,
when it fits the response budget, and the model answers it in a second turn."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.data import load_tokenizer
from vime.utils.types import Sample


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    sample = await engine_generate(args, sample, sampling_params)
    text = " <result>ok</result>"
    observation = tokenizer.encode(text, add_special_tokens=False)
    room = args.rollout_max_response_len - sample.response_length - len(observation)
    if sample.status == Sample.Status.COMPLETED and room > 1:
        sample.append_response_tokens(args, tokens=observation, trainable=False, text=text)
        sample.status = Sample.Status.PENDING
        sample = await engine_generate(args, sample, sampling_params)
    return sample
