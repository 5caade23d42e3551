"""Build a tiny, reproducible causal LM and its tokenizer locally (no downloads).

Usage::

    path = build_tiny_model("/tmp/tiny", seed=0)   # -> Path("/tmp/tiny"), about 0.7 M params
    # $ vime make-tiny-model /tmp/tiny --seed 0
    # $ python -m vllm.entrypoints.openai.api_server --model /tmp/tiny ...

The folder holds a ``Qwen2ForCausalLM`` (float32 safetensors, untied embeddings), a
``generation_config.json`` and a ``PreTrainedTokenizerFast``: byte-level BPE with no merges, so
every character (byte) is one token: ids 0..255 are the 256 bytes, then the specials
``<|endoftext|>`` (256), ``<|im_start|>`` (257), ``<|im_end|>`` (258, eos), ``<|pad|>`` (259).
The chat template is ChatML. The same ``seed`` gives identical tensors.

Why untied: a tied model saved with ``save_pretrained`` has no ``lm_head.weight`` in its
safetensors, and vLLM's CPU build then keeps the old output head after a weight reload
(docs/environment.md, "Weight reload pitfall"). Why ``head_dim == 32``: the smallest head size the CPU
attention kernel supports.

The sizes follow the measured recipe in ``docs/environment.md`` ("A CPU-sized RL task that learns").
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["SPECIAL_TOKENS", "CHATML_TEMPLATE", "build_tiny_model", "build_tokenizer", "main"]

#: The special tokens, in id order after the 256 byte tokens.
SPECIAL_TOKENS: tuple[str, ...] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>")

#: ChatML: ``<|im_start|>{role}\n{content}<|im_end|>\n`` per message, then the assistant header
#: with ``add_generation_prompt=True``. Rendering ``messages[:k]`` is a token prefix of
#: rendering ``messages[:k+1]`` (the SFT loss mask relies on it).
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def build_tokenizer() -> Any:
    """A ``PreTrainedTokenizerFast`` with one token per byte (260 ids), ChatML, eos ``<|im_end|>``.

    Returns:
        transformers ``PreTrainedTokenizerFast``; ``len(tok) == 260``; ``pad_token`` is
        ``<|pad|>``, ``eos_token`` is ``<|im_end|>``; no bos token is added.
    """
    import transformers
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    tf: Any = transformers

    # The byte-level alphabet maps each byte to one printable character; order the vocab by byte
    # value so that id == byte for ids 0..255. No merges: every byte stays its own token.
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    byte_chars = sorted(alphabet, key=_byte_of)
    vocab = {ch: i for i, ch in enumerate(byte_chars)}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], fuse_unk=False))
    # NFC as transformers' Qwen2Tokenizer (what AutoTokenizer returns for a qwen2 config) applies
    # it on load: building with it keeps this object and the reloaded tokenizer identical.
    core.normalizer = normalizers.NFC()
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(list(SPECIAL_TOKENS))
    tok = tf.PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        unk_token=None,
        bos_token=None,
        model_max_length=1024,
        padding_side="left",
    )
    tok.chat_template = CHATML_TEMPLATE
    return tok


def _byte_of(ch: str) -> int:
    """The byte that the GPT-2 byte-level alphabet maps to ``ch``.

    Printable bytes (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) map to themselves; the other 68
    bytes map to ``chr(256 + k)`` in byte order.
    """
    code = ord(ch)
    if code < 256:
        return code
    return _UNPRINTABLE[code - 256]


_PRINTABLE = frozenset([*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)])
_UNPRINTABLE = tuple(b for b in range(256) if b not in _PRINTABLE)


def build_tiny_model(
    out_dir: str | Path,
    *,
    seed: int = 0,
    hidden_size: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    num_kv_heads: int | None = None,
    intermediate_size: int = 256,
    max_position_embeddings: int = 1024,
) -> Path:
    """Write a random ``Qwen2ForCausalLM`` plus tokenizer to ``out_dir`` and return its path.

    Args:
        out_dir: target folder (created; existing files of the same names are overwritten).
        seed: torch seed for the weights; the same seed gives identical tensors.
        hidden_size: model width; ``hidden_size / num_heads`` (head_dim) must be a head size the
            CPU attention kernel supports: 32, 64, 80, 96, 112, 128, ...
        num_layers, num_heads, intermediate_size: the usual transformer sizes.
        num_kv_heads: key/value heads (None: ``num_heads``).
        max_position_embeddings: context length in tokens (vLLM's default max-model-len).

    Returns:
        ``Path(out_dir)``, holding ``config.json``, ``model.safetensors`` (float32, with
        ``lm_head.weight``), ``generation_config.json`` and the tokenizer files.

    Raises:
        ValueError: ``hidden_size`` is not divisible by ``num_heads``, or the head dim is not one
            the CPU attention kernel supports (names both numbers).
    """
    if hidden_size % num_heads:
        raise ValueError(f"build_tiny_model: hidden_size={hidden_size} is not divisible by "
                         f"num_heads={num_heads}")
    head_dim = hidden_size // num_heads
    if head_dim < 32 or head_dim % 16:
        raise ValueError(f"build_tiny_model: head_dim = hidden_size / num_heads = {head_dim}; "
                         "vLLM's CPU attention needs 32, 64, 80, 96, 112, 128, ...: raise "
                         "hidden_size or lower num_heads")
    import torch
    import transformers

    tf: Any = transformers

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer()
    eos_id = tok.convert_tokens_to_ids("<|im_end|>")
    pad_id = tok.convert_tokens_to_ids("<|pad|>")
    bos_id = tok.convert_tokens_to_ids("<|endoftext|>")
    config = tf.Qwen2Config(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads or num_heads,
        head_dim=head_dim,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=False,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        use_sliding_window=False,
    )
    config.dtype = "float32"
    torch.manual_seed(seed)
    model = tf.Qwen2ForCausalLM(config).to(torch.float32)
    model.generation_config = tf.GenerationConfig(
        bos_token_id=bos_id, eos_token_id=eos_id, pad_token_id=pad_id, do_sample=True,
    )
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    """``vime make-tiny-model OUT_DIR [--seed N] [--hidden-size H] ...``; prints the folder."""
    parser = argparse.ArgumentParser(prog="vime make-tiny-model",
                                     description="Build a tiny Qwen2 model + tokenizer locally.")
    parser.add_argument("out_dir", help="folder to write (created)")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument("--hidden-size", type=int, default=128)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--intermediate-size", type=int, default=256)
    ns = parser.parse_args(argv)
    path = build_tiny_model(ns.out_dir, seed=ns.seed, hidden_size=ns.hidden_size,
                            num_layers=ns.num_layers, num_heads=ns.num_heads,
                            intermediate_size=ns.intermediate_size)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
