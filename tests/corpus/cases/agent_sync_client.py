"""An agent that talks to vime's endpoint with the synchronous OpenAI client."""

from openai import OpenAI


async def run_agent(args, sample, base_url, api_key):
    client = OpenAI(base_url=base_url, api_key=api_key)
    reply = client.chat.completions.create(
        model="policy", messages=[{"role": "user", "content": str(sample.prompt)}])
    text = reply.choices[0].message.content or ""
    return 1.0 if str(sample.label) in text else 0.0
