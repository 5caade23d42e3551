"""A reward whose helper spins up its own event loop for an async judge client."""

import asyncio


async def _judge(text: str) -> float:
    await asyncio.sleep(0)
    return float(len(text) > 0)


def judge_sync(text: str) -> float:
    return asyncio.run(_judge(text))


async def reward_func(args, sample, **kwargs):
    return judge_sync(sample.response)
