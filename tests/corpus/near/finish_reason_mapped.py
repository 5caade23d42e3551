"""Near-miss of finish-reason-ignored: the finish reason goes to append_response_tokens."""

from vime.rollout.vllm_rollout import get_model_url
from vime.utils.data import load_tokenizer
from vime.utils.http_utils import post


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    if not sample.tokens:
        sample.tokens = tokenizer.encode(str(sample.prompt), add_special_tokens=False)
    out = await post(get_model_url(args),
                     {"token_ids": sample.tokens, "sampling_params": sampling_params})
    choice = out["choices"][0]
    lps = [c["logprob"] for c in choice["logprobs"]["content"]]
    sample.append_response_tokens(args, tokens=choice["token_ids"], log_probs=lps,
                                  text=tokenizer.decode(choice["token_ids"]),
                                  meta_info={"finish_reason": {"type": choice["finish_reason"]}})
    return sample
