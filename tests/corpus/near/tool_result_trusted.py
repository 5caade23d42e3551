"""Near-miss of aborted-tool-failure: a failed tool call is a FAILED sample, kept out of the
loss and recorded."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.types import Sample


def search(query: str) -> str:
    return "no results"


async def generate(args, sample, sampling_params):
    sample = await engine_generate(args, sample, sampling_params)
    try:
        search(sample.response[-64:])
    except TimeoutError as exc:
        sample.status = Sample.Status.FAILED
        sample.remove_sample = True
        sample.metadata["vime_error"] = {"hook": "search", "type": "TimeoutError",
                                         "message": str(exc), "seconds": 0.0}
    return sample
