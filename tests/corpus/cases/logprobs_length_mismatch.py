"""A generate that collects token ids only where the engine's logprob entry has one, but every
log-prob."""

from vime.rollout.vllm_rollout import get_model_url
from vime.utils.data import load_tokenizer
from vime.utils.http_utils import post


async def generate(args, sample, sampling_params):
    if not sample.tokens:
        tokenizer = load_tokenizer(args.hf_checkpoint)
        sample.tokens = tokenizer.encode(str(sample.prompt), add_special_tokens=False)
    out = await post(get_model_url(args),
                     {"token_ids": sample.tokens, "sampling_params": sampling_params})
    choice = out["choices"][0]
    ids, lps = [], []
    for entry in choice["logprobs"]["content"]:
        if entry.get("token_id") is not None and entry["token_id"] % 7 != 0:
            ids.append(entry["token_id"])
        lps.append(float(entry.get("logprob") or 0.0))
    sample.tokens = sample.tokens + ids
    sample.response_length += len(ids)
    sample.rollout_log_probs = list(sample.rollout_log_probs or []) + lps
    sample.append_response_tokens(args, tokens=[], log_probs=[],
                                  meta_info={"finish_reason": {"type": choice["finish_reason"]}})
    return sample
