"""A multi-turn generate that asks every turn for the whole response budget."""

from vime.rollout.vllm_rollout import get_model_url
from vime.utils.data import load_tokenizer
from vime.utils.http_utils import post
from vime.utils.types import Sample

MAX_TURNS = 4


async def generate(args, sample, sampling_params):
    if not sample.tokens:
        tokenizer = load_tokenizer(args.hf_checkpoint)
        sample.tokens = tokenizer.encode(str(sample.prompt), add_special_tokens=False)
    for _ in range(MAX_TURNS):
        params = {**sampling_params, "max_tokens": args.rollout_max_response_len}
        out = await post(get_model_url(args),
                         {"token_ids": sample.tokens, "sampling_params": params})
        choice = out["choices"][0]
        lps = [c["logprob"] for c in choice["logprobs"]["content"]]
        sample.append_response_tokens(args, tokens=choice["token_ids"], log_probs=lps,
                                      meta_info={"finish_reason": {"type": choice["finish_reason"]}})
        if sample.status != Sample.Status.COMPLETED:
            break
    return sample
