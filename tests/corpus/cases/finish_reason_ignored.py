"""A generate that calls the engine itself and marks every response COMPLETED."""

from vime.rollout.vllm_rollout import get_model_url
from vime.utils.data import load_tokenizer
from vime.utils.http_utils import post
from vime.utils.types import Sample


async def generate(args, sample, sampling_params):
    if not sample.tokens:
        tokenizer = load_tokenizer(args.hf_checkpoint)
        sample.tokens = tokenizer.encode(str(sample.prompt), add_special_tokens=False)
    out = await post(get_model_url(args),
                     {"token_ids": sample.tokens, "sampling_params": sampling_params})
    choice = out["choices"][0]
    lps = [c["logprob"] for c in choice["logprobs"]["content"]]
    sample.append_response_tokens(args, tokens=choice["token_ids"], log_probs=lps)
    if choice["finish_reason"] in ("stop", "length"):
        sample.status = Sample.Status.COMPLETED
    return sample
