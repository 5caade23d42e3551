"""Near-miss of agent-blocking-tool: the code tool runs in a worker thread."""

import asyncio
import subprocess

from openai import AsyncOpenAI


async def run_agent(args, sample, base_url, api_key):
    client = AsyncOpenAI(base_url=base_url, api_key=api_key)
    reply = await client.chat.completions.create(
        model="policy", messages=[{"role": "user", "content": str(sample.prompt)}])
    code = reply.choices[0].message.content or ""
    result = await asyncio.to_thread(subprocess.run, ["python3", "-c", code],
                                     capture_output=True, text=True, timeout=10)
    return 1.0 if str(sample.label) in result.stdout else 0.0
