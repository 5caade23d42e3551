"""The SFT rollout: conversations -> tokenised samples with chat-template loss masks.

Usage (``--rollout-function-path vime.rollout.sft_rollout.generate_rollout --loss-type
sft_loss``; prompts are message lists under ``--input-key``)::

    out = generate_rollout(args, rollout_id, data_source)              # RolloutFnTrainOutput
    out.samples          # rollout_batch_size groups of 1 sample: tokens = whole conversation,
                         # response_length = tokens from the first trainable one, loss_mask 0/1
    out = generate_rollout(args, rollout_id, data_source, evaluation=True)
    out.data             # {name: {"rewards": [0.0]*n, "truncated": [False]*n, "samples": [...]}}

Typed with ``@overload`` on ``evaluation`` (``Literal[False]`` -> ``RolloutFnTrainOutput``,
``Literal[True]`` -> ``RolloutFnEvalOutput``), as ``vime.rollout.vllm_rollout.generate_rollout``.

No engine is involved. The tokenizer is ``AutoTokenizer.from_pretrained(args.hf_checkpoint)``
(cached per path); the mask comes from ``MultiTurnLossMaskGenerator(tokenizer,
args.loss_mask_type)``; tools come from ``sample.metadata["tools"]``.

The train branch follows upstream slime's ``slime/rollout/sft_rollout.py``; see ``docs/contract.md``
§9.
"""

from __future__ import annotations

import functools
from argparse import Namespace
from typing import Any, Literal, overload

from vime.config import arg
from vime.contract.errors import ContractError
from vime.contract.hooks import SFT_ROLLOUT_PATH
from vime.rollout.base_types import (
    RolloutFnEvalOutput,
    RolloutFnTrainOutput,
    finalize_rollout_groups,
)
from vime.utils.types import Sample

__all__ = ["generate_rollout"]

_ROLLOUT = SFT_ROLLOUT_PATH


def _check_args(args: Namespace) -> None:
    if arg(args, "n_samples_per_prompt") != 1:
        raise ContractError(f"{_ROLLOUT} needs --n-samples-per-prompt 1, got "
                            f"{args.n_samples_per_prompt}: a conversation is one sample")
    if arg(args, "apply_chat_template"):
        raise ContractError(f"{_ROLLOUT} needs message-list prompts; remove "
                            "--apply-chat-template (the loss mask renders the template itself)")


def _mask_generator(args: Namespace) -> Any:
    from vime.utils.data import load_tokenizer
    from vime.utils.mask_utils import MultiTurnLossMaskGenerator

    return MultiTurnLossMaskGenerator(load_tokenizer(args.hf_checkpoint),
                                      tokenizer_type=arg(args, "loss_mask_type"))


def _tokenize(sample: Sample, generator: Any, where: str) -> None:
    """Fill ``tokens``, ``response_length``, ``loss_mask``, ``response``, reward and status."""
    messages = sample.prompt
    if not isinstance(messages, list):
        raise ContractError(f"{where}: prompt is a {type(messages).__name__}; {_ROLLOUT} needs a "
                            "list of messages (store message lists under --input-key and do not "
                            "pass --apply-chat-template)")
    try:
        token_ids, mask = generator.get_loss_mask(messages, sample.metadata.get("tools"))
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from exc
    first = next((i for i, bit in enumerate(mask) if bit == 1), None)
    if first is None:
        raise ContractError(f"{where}: the conversation has no trainable token (no assistant "
                            "message, or every one has step_loss_mask 0)")
    sample.tokens = list(token_ids)
    sample.response_length = len(token_ids) - first
    sample.loss_mask = list(mask[first:])
    sample.response = generator.tokenizer.decode(token_ids[first:])
    sample.reward = 0.0
    sample.status = Sample.Status.COMPLETED


@functools.lru_cache(maxsize=16)
def _eval_prompts(path: str, input_key: str, label_key: str | None, metadata_key: str | None,
                  tool_key: str | None) -> tuple[Sample, ...]:
    from vime.utils.data import Dataset

    return tuple(Dataset(path, input_key=input_key, label_key=label_key,
                         metadata_key=metadata_key, tool_key=tool_key).samples)


def _eval(args: Namespace, generator: Any) -> RolloutFnEvalOutput:
    import copy

    data: dict[str, dict[str, Any]] = {}
    for config in getattr(args, "eval_datasets", None) or []:
        prompts = _eval_prompts(config.path, config.input_key or "input", config.label_key,
                                config.metadata_key, config.tool_key)
        samples = []
        for index, prompt in enumerate(prompts):
            sample = copy.deepcopy(prompt)
            sample.index = sample.group_index = index
            sample.metadata.update(copy.deepcopy(config.metadata_overrides))
            _tokenize(sample, generator, f"eval dataset {config.name!r} sample index={index}")
            samples.append(sample)
        data[config.name] = {"rewards": [0.0] * len(samples),
                             "truncated": [False] * len(samples), "samples": samples}
    return RolloutFnEvalOutput(data=data)


@overload
def generate_rollout(args: Namespace, rollout_id: int, data_source: Any,
                     evaluation: Literal[False] = False) -> RolloutFnTrainOutput: ...
@overload
def generate_rollout(args: Namespace, rollout_id: int, data_source: Any,
                     evaluation: Literal[True]) -> RolloutFnEvalOutput: ...
@overload
def generate_rollout(args: Namespace, rollout_id: int, data_source: Any,
                     evaluation: bool = False) -> RolloutFnTrainOutput | RolloutFnEvalOutput: ...
def generate_rollout(args: Namespace, rollout_id: int, data_source: Any,
                     evaluation: bool = False) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    """One SFT step: ``rollout_batch_size`` conversations from ``data_source``, tokenised.

    Train: ``RolloutFnTrainOutput(samples=list[list[Sample]], metrics={
    "rollout/sft/trainable_tokens_mean": float})``, groups of one sample each with ``tokens`` the
    whole conversation, ``response_length = len(tokens) - first`` (``first`` = the first
    trainable token), ``loss_mask = mask[first:]``, ``reward = 0.0``, status COMPLETED, no log
    probs. Eval: one entry per ``args.eval_datasets`` (``{}`` without eval datasets), one sample
    per prompt with sequential ``index``; ``data_source`` is not touched.

    Raises:
        ContractError: ``--n-samples-per-prompt`` is not 1; ``--apply-chat-template`` is set; a
            prompt is not a message list; a conversation has no trainable token (its ``index``
            named).
        ValueError: the chat template is not prefix-stable (``k`` and the sample named); no
            ``--hf-checkpoint``.
    """
    _check_args(args)
    generator = _mask_generator(args)
    if evaluation:
        return _eval(args, generator)
    groups = data_source.get_samples(args.rollout_batch_size)
    trainable = []
    for g, group in enumerate(groups):
        for e, sample in enumerate(group):
            _tokenize(sample, generator, f"samples[{g}][{e}] (index={sample.index})")
            trainable.append(sum(sample.loss_mask or ()))
    mean = sum(trainable) / len(trainable) if trainable else 0.0
    return finalize_rollout_groups(args, rollout_id, groups,
                                   {"rollout/sft/trainable_tokens_mean": float(mean)})
