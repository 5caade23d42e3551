"""A custom generate function (``--custom-generate-function-path``): a forced answer prefix.

The response starts with a fixed text that the environment writes, not the model; the model
continues from there with the built-in token-in/token-out ``generate``. The prefix is appended
with ``Sample.append_response_tokens(trainable=False)``: it is part of ``tokens`` and
``response``, but gets ``loss_mask`` 0 and log-prob 0.0, so the policy loss only sees the
tokens the model sampled::

    sample = await generate(args, sample, sampling_params)
    sample.response          # "The answer is 85.<|im_end|>"
    sample.loss_mask         # [0] * 14 + [1] * 4   (prefix, then the model's tokens)

On the demo's arithmetic task the model then only has to learn the number. The prefix also
counts against ``--rollout-max-response-len`` (the built-in ``generate`` subtracts the response
tokens a sample already has from ``max_tokens``).

Run it (from the repository root, after ``make demo`` built ``runs/demo``)::

    PYTHONPATH=$PWD vime train --config examples/demo/grpo.yaml \
        --custom-generate-function-path examples.answer_prefix_generate.generate \
        --num-rollout 20 --run-dir runs/answer_prefix
    vime-lint rollout examples/answer_prefix_generate.py
"""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from vime.rollout.vllm_rollout import generate as vllm_generate
from vime.utils.data import load_tokenizer
from vime.utils.types import Sample

__all__ = ["PREFIX", "add_prefix", "generate"]

#: The text every response starts with.
PREFIX = "The answer is "


def add_prefix(args: Namespace, sample: Sample, tokenizer: Any, prefix: str = PREFIX) -> Sample:
    """Give a fresh sample its prompt tokens and the non-trainable ``prefix``.

    Args:
        args: the run's arguments (passed on to ``append_response_tokens``).
        sample: a PENDING sample without a response; ``prompt`` must be a string (use
            ``--apply-chat-template`` for message-list data).
        tokenizer: the engine model's tokenizer (``encode(text, add_special_tokens=False)``).

    Returns:
        The same sample: ``tokens`` = prompt ids + prefix ids, ``response_length`` = prefix
        tokens, ``loss_mask`` all 0, ``rollout_log_probs`` all 0.0, status still PENDING.

    Raises:
        ValueError: the prompt is not a string, or the sample already has a response (names
            the sample index).
    """
    if not isinstance(sample.prompt, str):
        raise ValueError(f"answer_prefix_generate: sample index={sample.index} has a "
                         "message-list prompt; pass --apply-chat-template so prompts are text")
    if sample.response_length or sample.tokens:
        raise ValueError(f"answer_prefix_generate: sample index={sample.index} already has "
                         f"{len(sample.tokens)} tokens; add_prefix expects a fresh sample")
    sample.tokens = list(tokenizer.encode(sample.prompt, add_special_tokens=False))
    sample.append_response_tokens(args, tokens=tokenizer.encode(prefix, add_special_tokens=False),
                                  trainable=False, text=prefix)
    return sample


async def generate(args: Namespace, sample: Sample, sampling_params: dict[str, Any]) -> Sample:
    """``--custom-generate-function-path examples.answer_prefix_generate.generate``.

    Adds :data:`PREFIX` to a fresh sample (a resumed, partially generated one keeps what it
    has), then calls the built-in ``vime.rollout.vllm_rollout.generate``, which appends the
    model's tokens with their log-probs and sets ``status`` from the engine's finish reason.

    Returns:
        The sample, COMPLETED, TRUNCATED or ABORTED.
    """
    if sample.response_length == 0 and not sample.tokens:
        add_prefix(args, sample, load_tokenizer(args.hf_checkpoint))
    return await vllm_generate(args, sample, sampling_params)
