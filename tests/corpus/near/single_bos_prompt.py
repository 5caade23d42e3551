"""Near-miss of double-bos-prompt: the rendered template is encoded without special tokens."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.data import load_tokenizer


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    if not sample.tokens:
        messages = [{"role": "user", "content": str(sample.prompt)}]
        text = tokenizer.apply_chat_template(messages, tokenize=False,
                                             add_generation_prompt=True)
        sample.tokens = tokenizer.encode(text, add_special_tokens=False)
    return await engine_generate(args, sample, sampling_params)
