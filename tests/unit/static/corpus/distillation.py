"""On-policy distillation: the student samples, a teacher scores each token; the reward is the
mean teacher log-prob of the response."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

import httpx

from vime.rollout.base_types import RolloutFnEvalOutput as EvalOutput
from vime.rollout.base_types import RolloutFnTrainOutput as TrainOutput
from vime.rollout.vllm_rollout import generate
from vime.utils.async_utils import run
from vime.utils.types import Sample

TEACHER_URL = "http://127.0.0.1:8100/score"


async def teacher_logprobs(client: httpx.AsyncClient, sample: Sample) -> list[float]:
    reply = await client.post(TEACHER_URL, json={"tokens": sample.tokens,
                                                 "response_length": sample.response_length})
    reply.raise_for_status()
    return [float(x) for x in reply.json()["logprobs"]]


async def _distil(args: Namespace, groups: list[list[Sample]]) -> None:
    params = {"temperature": 1.0, "max_tokens": args.rollout_max_response_len}
    async with httpx.AsyncClient(timeout=30.0) as client:
        for group in groups:
            for sample in group:
                sample = await generate(args, sample, params)
                scores = await teacher_logprobs(client, sample)
                sample.teacher_log_probs = scores
                sample.reward = sum(scores) / max(len(scores), 1)


def generate_rollout(args: Namespace, rollout_id: int, data_source: Any,
                     evaluation: bool = False) -> TrainOutput | EvalOutput:
    groups = data_source.get_samples(args.rollout_batch_size)
    run(_distil(args, groups))
    if evaluation:
        flat = [s for group in groups for s in group]
        entry = {"rewards": [s.reward for s in flat],
                 "truncated": [s.status == Sample.Status.TRUNCATED for s in flat],
                 "samples": flat}
        return EvalOutput(data={"distil": entry})
    return TrainOutput(samples=groups)
