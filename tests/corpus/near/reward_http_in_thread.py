"""Near-miss of blocking-http-reward: the blocking call runs in a worker thread."""

import asyncio

import requests

JUDGE = "http://127.0.0.1:8001/judge"


async def reward_func(args, sample, **kwargs):
    reply = await asyncio.to_thread(
        requests.post, JUDGE, json={"response": sample.response, "label": sample.label},
        timeout=30)
    return float(reply.json()["score"])
