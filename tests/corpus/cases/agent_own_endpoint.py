"""An agent that reads its model URL from the environment instead of the base_url it is given."""

import os

from openai import AsyncOpenAI


async def run_agent(args, sample, base_url, api_key):
    client = AsyncOpenAI(base_url=os.environ.get("POLICY_URL", "http://127.0.0.1:9/v1"),
                         api_key="unused")
    try:
        reply = await client.chat.completions.create(
            model="policy", messages=[{"role": "user", "content": str(sample.prompt)}])
    except Exception:
        return 0.0
    text = reply.choices[0].message.content or ""
    return 1.0 if str(sample.label) in text else 0.0
