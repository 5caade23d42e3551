"""A multi-turn generate that re-renders the whole chat and re-encodes it every turn."""

from vime.rollout.vllm_rollout import get_model_url
from vime.utils.data import load_tokenizer
from vime.utils.http_utils import post
from vime.utils.types import Sample

MAX_TURNS = 3


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    messages = [{"role": "user", "content": str(sample.prompt)}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    for _ in range(MAX_TURNS):
        out = await post(get_model_url(args),
                         {"token_ids": ids, "sampling_params": sampling_params})
        text = tokenizer.decode(out["choices"][0]["token_ids"])
        messages.append({"role": "assistant", "content": text})
        messages.append({"role": "tool", "content": "ok"})
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    sample.tokens = ids
    sample.response_length = len(ids) - len(tokenizer.apply_chat_template(messages[:1]))
    sample.status = Sample.Status.COMPLETED
    return sample
