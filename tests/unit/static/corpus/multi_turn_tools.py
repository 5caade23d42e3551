"""Multi-turn tool use: the model writes ``<search>QUERY</search>``, a local index answers."""

from __future__ import annotations

import asyncio
from argparse import Namespace
from typing import Any

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.rm_hub import async_rm
from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.async_utils import run
from vime.utils.data import load_tokenizer
from vime.utils.types import Sample

MAX_TURNS = 3
INDEX = {"capital of france": "Paris", "boiling point of water": "100 C"}


def lookup(query: str) -> str:
    return INDEX.get(query.strip().lower(), "no result")


def pending_query(response: str) -> str | None:
    if not response.endswith("</search>"):
        return None
    return response.rsplit("<search>", 1)[-1].removesuffix("</search>")


async def episode(args: Namespace, sample: Sample, sampling_params: dict[str, Any]) -> Sample:
    tokenizer = load_tokenizer(args.hf_checkpoint)
    params = {**sampling_params, "stop": ["</search>"]}
    for _ in range(MAX_TURNS):
        sample = await engine_generate(args, sample, params)
        query = pending_query(sample.response)
        if sample.status != Sample.Status.COMPLETED or query is None:
            break
        observation = f"<result>{lookup(query)}</result>"
        ids = tokenizer.encode(observation, add_special_tokens=False)
        sample.append_response_tokens(args, tokens=ids, trainable=False, text=observation)
        sample.status = Sample.Status.PENDING
    sample.reward = await async_rm(args, sample)
    return sample


async def _all(args: Namespace, groups: list[list[Sample]], params: dict[str, Any]) -> None:
    await asyncio.gather(*[episode(args, s, params) for group in groups for s in group])


def generate_rollout(args: Namespace, rollout_id: int, data_source: Any,
                     evaluation: bool = False) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    params = {"temperature": 1.0, "max_tokens": args.rollout_max_response_len}
    groups = data_source.get_samples(args.rollout_batch_size)
    run(_all(args, groups, params))
    if evaluation:
        flat = [s for group in groups for s in group]
        return RolloutFnEvalOutput(data={"search": {
            "rewards": [s.reward for s in flat],
            "truncated": [s.status == Sample.Status.TRUNCATED for s in flat],
            "samples": flat}})
    return RolloutFnTrainOutput(samples=groups)
