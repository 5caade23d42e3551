"""Near-miss of reward-list-prompt: the prompt is read as text only when it is text."""


async def reward_func(args, sample, **kwargs):
    prompt = sample.prompt if isinstance(sample.prompt, str) else ""
    transcript = prompt + sample.response
    return 1.0 if str(sample.label) in transcript[-200:] else 0.0
