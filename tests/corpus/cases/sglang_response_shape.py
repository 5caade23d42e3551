"""A generate ported from an SGLang-based trainer: it reads SGLang's response keys."""

from vime.rollout.vllm_rollout import get_model_url
from vime.utils.http_utils import post
from vime.utils.types import Sample


async def generate(args, sample, sampling_params):
    output = await post(get_model_url(args, endpoint="/generate"),
                        {"input_ids": sample.tokens, "sampling_params": sampling_params,
                         "return_logprob": True})
    new_ids = [t[1] for t in output["meta_info"]["output_token_logprobs"]]
    lps = [t[0] for t in output["meta_info"]["output_token_logprobs"]]
    sample.append_response_tokens(args, tokens=new_ids, log_probs=lps, text=output["text"])
    reason = output["meta_info"]["finish_reason"]["type"]
    sample.status = Sample.Status.TRUNCATED if reason == "length" else Sample.Status.COMPLETED
    return sample
