"""A reward that concatenates the prompt and the response; with --apply-chat-template the
prompt is a list of messages."""


async def reward_func(args, sample, **kwargs):
    transcript = sample.prompt + sample.response
    return 1.0 if str(sample.label) in transcript[-200:] else 0.0
