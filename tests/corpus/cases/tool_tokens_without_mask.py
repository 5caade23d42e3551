"""A tool-calling generate that splices the tool's output into tokens by hand."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.data import load_tokenizer

MAX_TURNS = 3


def run_tool(text: str) -> str:
    return "<result>ok</result>"


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    for _ in range(MAX_TURNS):
        sample = await engine_generate(args, sample, sampling_params)
        if "<tool>" not in sample.response:
            break
        result_ids = tokenizer.encode(run_tool(sample.response), add_special_tokens=False)
        sample.tokens = sample.tokens + result_ids
        sample.response_length += len(result_ids)
    return sample
