"""Near-miss of asyncio-run-in-reward: the async judge is awaited on the running loop."""

import asyncio


async def _judge(text: str) -> float:
    await asyncio.sleep(0)
    return float(len(text) > 0)


async def reward_func(args, sample, **kwargs):
    return await _judge(sample.response)
