"""A search-agent generate that marks the sample ABORTED when the tool call fails."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.types import Sample


def search(query: str) -> str:
    raise TimeoutError("search backend unreachable")


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    try:
        search(sample.response[-64:])
    except TimeoutError:
        sample.status = Sample.Status.ABORTED
    return sample
