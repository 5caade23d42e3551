"""A reward that asks a judge server with a blocking HTTP call inside the event loop."""

import requests

JUDGE = "http://127.0.0.1:8001/judge"


async def reward_func(args, sample, **kwargs):
    reply = requests.post(JUDGE, json={"response": sample.response, "label": sample.label},
                          timeout=30)
    return float(reply.json()["score"])
