"""Near-miss of agent-sync-client: the agent uses AsyncOpenAI on the base_url it is given."""

from openai import AsyncOpenAI


async def run_agent(args, sample, base_url, api_key):
    client = AsyncOpenAI(base_url=base_url, api_key=api_key)
    reply = await client.chat.completions.create(
        model="policy", messages=[{"role": "user", "content": str(sample.prompt)}])
    text = reply.choices[0].message.content or ""
    return 1.0 if str(sample.label) in text else 0.0
