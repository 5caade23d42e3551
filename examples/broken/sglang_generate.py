"""Mistakes: a generate function ported from an SGLang-based trainer without changes."""

import httpx


async def generate(args, sample, sampling_params):
    url = f"http://{args.vllm_router_ip}:{args.vllm_router_port}/generate"
    payload = {"input_ids": sample.tokens, "sampling_params": sampling_params,
               "return_logprob": True}
    async with httpx.AsyncClient() as client:
        output = (await client.post(url, json=payload)).json()
    pairs = output["meta_info"]["output_token_logprobs"]
    sample.tokens = sample.tokens + [token for _, token in pairs]
    sample.response_length += len(pairs)
    sample.response += output["text"]
    return sample
