"""A fully asynchronous rollout: workers pull prompts from a queue and push finished groups."""

from __future__ import annotations

import asyncio
from argparse import Namespace
from typing import Any

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.vllm_rollout import generate_and_rm
from vime.utils.async_utils import run
from vime.utils.types import Sample


async def _worker(args: Namespace, todo: asyncio.Queue[list[Sample]],
                  done: list[list[Sample]], params: dict[str, Any]) -> None:
    while True:
        try:
            group = todo.get_nowait()
        except asyncio.QueueEmpty:
            return
        await asyncio.gather(*(generate_and_rm(args, s, params) for s in group))
        done.append(group)


async def _drain(args: Namespace, groups: list[list[Sample]], workers: int) -> list[list[Sample]]:
    todo: asyncio.Queue[list[Sample]] = asyncio.Queue()
    for group in groups:
        todo.put_nowait(group)
    done: list[list[Sample]] = []
    params = {"temperature": 1.0, "max_tokens": args.rollout_max_response_len}
    tasks = [asyncio.create_task(_worker(args, todo, done, params)) for _ in range(workers)]
    await asyncio.gather(*tasks)
    return done


def generate_rollout(args: Namespace, rollout_id: int, data_source: Any,
                     evaluation: bool = False) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    groups = data_source.get_samples(args.rollout_batch_size)
    done = run(_drain(args, groups, workers=4))
    if not evaluation:
        return RolloutFnTrainOutput(samples=done, metrics={"rollout/async/groups": len(done)})
    flat = [s for group in done for s in group]
    return RolloutFnEvalOutput(data={"async": {"rewards": [s.reward for s in flat],
                                               "truncated": [False for _ in flat],
                                               "samples": flat}})
