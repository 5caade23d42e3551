"""Near-miss of tool-tokens-without-mask: the tool's output goes in as non-trainable tokens."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.data import load_tokenizer
from vime.utils.types import Sample

MAX_TURNS = 3


def run_tool(text: str) -> str:
    return "<result>ok</result>"


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    for _ in range(MAX_TURNS):
        sample = await engine_generate(args, sample, sampling_params)
        if sample.status != Sample.Status.COMPLETED or "<tool>" not in sample.response:
            break
        result = run_tool(sample.response)
        result_ids = tokenizer.encode(result, add_special_tokens=False)
        sample.append_response_tokens(args, tokens=result_ids, trainable=False, text=result)
        sample.status = Sample.Status.PENDING
    return sample
