"""Near-miss of asyncio-run-in-reward: the async judge is awaited on the running loop."""

import asyncio


async def _judge(text: str, label: str) -> float:
    await asyncio.sleep(0)
    words = text.replace(".", " ").split()
    return 1.0 if words and words[-1] == label else 0.0


async def reward_func(args, sample, **kwargs):
    return await _judge(sample.response, str(sample.label))
