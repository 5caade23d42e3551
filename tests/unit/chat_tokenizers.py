"""Local tokenizers for the unit tests (the fixtures of tests/unit/conftest.py, utils/,
rollout/): a byte-level BPE trained here, two chat templates.

Nothing is downloaded: the BPE is trained on a few sentences, wrapped in
``PreTrainedTokenizerFast`` and given a ChatML (Qwen-style) or a Llama-3-style template written
below.
"""

from __future__ import annotations

from typing import Any

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>",
            "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]

CORPUS = [
    "Hello there, how are you today?", "I am fine, thank you very much.",
    "What is the weather like in Paris?", "The answer is 42.", "Compute 37 + 48.",
    "Use the calculator tool to add numbers.", "system user assistant tool",
    "You are a helpful assistant.", "The weather in Paris is sunny and warm.",
]

CHATML_TEMPLATE = (
    r"{% if tools %}{{ '<|im_start|>system' + '\n' + 'Tools: ' + (tools | tojson) + '<|im_end|>'"
    r" + '\n' }}{% endif %}"
    r"{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>'"
    r" + '\n' }}{% endfor %}"
    r"{% if add_generation_prompt %}{{ '<|im_start|>assistant' + '\n' }}{% endif %}"
)

LLAMA3_TEMPLATE = (
    r"{{ bos_token }}"
    r"{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>'"
    r" + '\n\n' + (m['content'] | trim) + '<|eot_id|>' }}{% endfor %}"
    r"{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>'"
    r" + '\n\n' }}{% endif %}"
)


def build_tokenizer(chat_template: str, *, corpus: list[str] | None = None) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` with ``chat_template`` (about 0.1 s)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(corpus or CORPUS, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|endoftext|>",
        pad_token="<|endoftext|>", chat_template=chat_template)
