"""Samples -> training data: reward normalisation, loss masks, columns, optimiser steps.

Usage::

    flat = flatten_samples(output.samples)           # list[Sample], depth 2 or 3 in
    data = BatchBuilder.convert(args, flat)           # dict of columns, one entry per sample
    steps = split_into_steps(args, data)              # list[dict]: one per optimiser step

``convert`` honours ``--custom-convert-samples-to-train-data-path`` (replaces everything) and
``--custom-reward-post-process-path`` (replaces the reward computation). Otherwise rewards are
normalised per prompt group for ``--advantage-estimator`` grpo / gspo / cispo /
reinforce_plus_plus_baseline: ``r - mean`` and, for grpo / gspo / cispo with
``--grpo-std-normalization`` (forced off when ``n_samples_per_prompt == 1``),
``(r - mean) / (std + 1e-6)`` with the unbiased (n - 1) standard deviation, in float32.

The formulas are those of the GRPO paper (Shao et al. 2024, "DeepSeekMath", outcome supervision) and
of REINFORCE++ (Hu 2025); see ``docs/contract.md`` §10.
"""

from __future__ import annotations

import itertools
import warnings
from argparse import Namespace
from collections.abc import Hashable, Sequence
from typing import Any, cast

import numpy as np

from vime.config import arg
from vime.contract.checks.enforced import conversion_problems, require, reward_value_problems
from vime.contract.checks.failures import is_failed
from vime.contract.checks.hook_results import (
    convert_result_problems,
    reward_post_process_result_problems,
)
from vime.contract.errors import ContractError
from vime.contract.estimators import GROUP_BASELINE_ESTIMATORS, STD_ESTIMATORS
from vime.contract.hooks import CONVERT_REQUIRED_KEYS
from vime.rollout.base_types import dotted_name, iter_samples
from vime.utils.types import Sample

__all__ = [
    "BatchBuilder",
    "EPS_STD",
    "REQUIRED_COLUMNS",
    "flatten_samples",
    "global_batch_size",
    "normalize_group_rewards",
    "normalised_rewards",
    "raw_rewards",
    "rollout_keys",
    "split_into_steps",
]

#: Added to the group standard deviation before dividing (docs/contract.md §10).
EPS_STD = 1e-6
#: Columns a custom convert hook must return (the contract's ``CONVERT_REQUIRED_KEYS``).
REQUIRED_COLUMNS = CONVERT_REQUIRED_KEYS
#: Columns sliced per sample by :func:`split_into_steps` (others are copied as they are).
_PER_SAMPLE = REQUIRED_COLUMNS + ("rollout_ids", "rollout_mask_sums", "failed",
                                  "rollout_log_probs",
                                  "teacher_log_probs", "metadata", "round_number",
                                  "multimodal_train_inputs",
                                  # added by the trainer before splitting (one row per sample)
                                  "old_log_probs", "ref_log_probs", "train_log_probs",
                                  "advantages", "returns")


def flatten_samples(samples: Sequence[Any]) -> list[Sample]:
    """The ``Sample`` leaves of a depth-2 (``list[list[Sample]]``) or depth-3 (fan-out) batch,
    in order. A flat ``list[Sample]`` (legacy) is returned as a list."""
    return list(iter_samples(samples))


def rollout_keys(samples: Sequence[Sample]) -> list[Hashable]:
    """One key per sample identifying its rollout: ``rollout_id``, else ``index``, else a fresh
    key unique to that sample (fan-out segments share a key; everything else is its own)."""
    fresh = itertools.count()
    keys: list[Hashable] = []
    for s in samples:
        if s.rollout_id is not None:
            keys.append(("rid", s.rollout_id))
        elif s.index is not None:
            keys.append(("idx", s.index))
        else:
            keys.append(("fresh", next(fresh)))
    return keys


def _numeric_ids(keys: Sequence[Hashable]) -> list[int]:
    """``rollout_ids`` column: the rollout_id / index; a fresh int above all of them otherwise."""
    used = [k[1] for k in keys if isinstance(k, tuple) and k[0] != "fresh"]
    nxt = itertools.count(max(used, default=-1) + 1)
    fresh: dict[Hashable, int] = {}
    out = []
    for k in keys:
        assert isinstance(k, tuple)
        if k[0] == "fresh":
            out.append(fresh.setdefault(k, next(nxt)))
        else:
            out.append(int(k[1]))
    return out


def normalize_group_rewards(values: Sequence[float], *, divide_by_std: bool,
                            scored: Sequence[bool] | None = None) -> list[float]:
    """``r - mean(r)``, and with ``divide_by_std`` ``/ (std(r, ddof=1) + 1e-6)``, in float32.

    Args:
        values: one reward per unique rollout of one prompt group.
        divide_by_std: divide by the unbiased (n - 1) standard deviation plus :data:`EPS_STD`.
            A group of one rollout has ``r - mean = 0`` and stays 0.
        scored: one flag per value; the mean and std are over the flagged values only and the
            others (FAILED rollouts, whose ``values`` entry is ignored) come back 0.0. None:
            all are scored.

    Returns:
        ``len(values)`` float32 values as Python floats.
    """
    if scored is not None and not all(scored):
        keep = [i for i, ok in enumerate(scored) if ok]
        out = [0.0] * len(values)
        for i, v in zip(keep, normalize_group_rewards([values[i] for i in keep],
                                                      divide_by_std=divide_by_std), strict=True):
            out[i] = v
        return out
    arr = np.asarray(values, dtype=np.float32)
    if arr.size == 0:
        return []
    out_arr = arr - arr.mean(dtype=np.float32)
    if divide_by_std and arr.size > 1:
        out_arr = out_arr / (arr.std(ddof=1, dtype=np.float32) + np.float32(EPS_STD))
    return [float(x) for x in out_arr.astype(np.float32)]


def _label(key: Hashable) -> str:
    return repr(key[1]) if isinstance(key, tuple) else repr(key)


def _where(s: Sample, i: int) -> str:
    return f"samples[{i}] (index={s.index}, group_index={s.group_index})"


def _group_size(args: Namespace) -> int:
    return int(arg(args, "n_samples_per_prompt"))


def raw_rewards(args: Namespace, samples: Sequence[Sample]) -> list[float]:
    """One reward per flat sample (``Sample.get_reward_value``: ``--reward-key`` of a dict;
    0.0 for a FAILED sample, which has none).

    Raises:
        ContractError: VIM110, a reward that is not a finite real (names the sample index).
    """
    require(reward_value_problems(samples, arg(args, "reward_key")))
    return [0.0 if is_failed(s) else float(s.get_reward_value(args)) for s in samples]


def normalised_rewards(args: Namespace, samples: Sequence[Sample], raw: Sequence[float],
                       keys: Sequence[Hashable] | None = None) -> list[float]:
    """Group-normalise ``raw`` (one reward per flat sample) per docs/contract.md §10: per prompt
    group, ``r - mean`` and, for :data:`STD_ESTIMATORS`, ``/ (std + EPS_STD)``, one value per
    unique rollout (``keys``: :func:`rollout_keys`, computed when None).

    Returns:
        One float per sample, in ``samples`` order.

    Raises:
        ContractError: VIM115 (segments of one rollout disagree), VIM113 (mixed or undividable
            groups).
    """
    if keys is None:
        keys = rollout_keys(samples)
    require(conversion_problems(samples, keys, n_samples_per_prompt=_group_size(args),
                                reward_key=arg(args, "reward_key"), rewards=False,
                                grouped=_normalised(args)))
    return _normalise(args, samples, raw, keys)


def _normalised(args: Namespace) -> bool:
    """The estimator normalises rewards per prompt group (and needs groups)."""
    return (arg(args, "advantage_estimator") in GROUP_BASELINE_ESTIMATORS
            and bool(arg(args, "rewards_normalization")))


def _normalise(args: Namespace, samples: Sequence[Sample], raw: Sequence[float],
               keys: Sequence[Hashable]) -> list[float]:
    """:func:`normalised_rewards` on samples that ``conversion_problems`` passed."""
    if not _normalised(args):
        return [float(np.float32(r)) for r in raw]
    n = _group_size(args)
    divide = (arg(args, "advantage_estimator") in STD_ESTIMATORS
              and bool(arg(args, "grpo_std_normalization")) and n > 1)
    first: dict[Hashable, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    order = list(first)
    groups: dict[Hashable, list[Hashable]] = {}
    if all(samples[first[k]].group_index is not None for k in order):
        for k in order:
            groups.setdefault(samples[first[k]].group_index, []).append(k)
    else:
        for g in range(len(order) // n):
            groups[g] = order[g * n:(g + 1) * n]
    value: dict[Hashable, float] = {}
    for members in groups.values():
        normed = normalize_group_rewards([raw[first[k]] for k in members], divide_by_std=divide,
                                         scored=[not is_failed(samples[first[k]])
                                                 for k in members])
        value.update(zip(members, normed, strict=True))
    return [value[k] for k in keys]


def _check_reward_post_process(fn: Any, result: Any,
                               samples: Sequence[Sample]) -> tuple[list[float], list[float]]:
    require(reward_post_process_result_problems(
        result, samples, f"{dotted_name(fn)} (--custom-reward-post-process-path)"))
    raw, rewards = result
    return [float(v) for v in raw], [float(v) for v in rewards]


def _loss_mask(s: Sample) -> list[int]:
    """The 0/1 mask of ``response_length`` entries (checked by ``conversion_problems``); all
    zero for ``remove_sample`` and FAILED samples."""
    if is_failed(s):
        return [0] * _failed_row(s)[1]
    mask = [1] * s.response_length if s.loss_mask is None else [int(m) for m in s.loss_mask]
    return [0] * len(mask) if s.remove_sample else mask


def _failed_row(s: Sample) -> tuple[list[int], int]:
    """``(tokens, response_length)`` of a FAILED sample's row: its own when it has a response
    (``1 <= response_length < len(tokens)``), else its prompt tokens plus one placeholder token
    (the last prompt token again) so the row has the trainer's shape; the row's mask is zero.

    Raises:
        ContractError: the sample has no tokens at all (its prompt was never tokenized).
    """
    tokens = list(s.tokens) if isinstance(s.tokens, list) else []
    rl = s.response_length if isinstance(s.response_length, int) else 0
    if 1 <= rl < len(tokens):
        return tokens, rl
    prompt = tokens[:len(tokens) - rl] if 0 < rl <= len(tokens) else tokens
    if not prompt:
        raise ContractError(f"BatchBuilder.convert: FAILED sample index={s.index} has no tokens; "
                            "a failed sample keeps at least its prompt token ids (the default "
                            "rollout does; a custom rollout should set sample.tokens before "
                            "marking it failed)")
    return prompt + [prompt[-1]], 1


def _optional_column(samples: Sequence[Sample], get: Any) -> list[Any] | None:
    """The column if the first sample that is not FAILED has it (all or none: checked by
    VIM112); FAILED samples without it (or of another length) get zeros of their row's
    response length in per-token columns, None in the others."""
    first = next((s for s in samples if not is_failed(s)), samples[0])
    if get(first) is None:
        return None
    per_token = isinstance(get(first), list)
    out = []
    for s in samples:
        value = get(s)
        if is_failed(s) and per_token:
            rl = _failed_row(s)[1]
            value = value if isinstance(value, list) and len(value) == rl else [0.0] * rl
        out.append(value)
    return out


def _check_custom_convert(fn: Any, data: Any, samples: Sequence[Sample]) -> dict[str, Any]:
    require(convert_result_problems(
        data, samples, f"{dotted_name(fn)} (--custom-convert-samples-to-train-data-path)"))
    return cast("dict[str, Any]", data)


class BatchBuilder:
    """The default conversion of samples to training data (docs/contract.md §10)."""

    @staticmethod
    def convert(args: Namespace, samples: Sequence[Sample]) -> dict[str, Any]:
        """Turn flat samples into training columns, one entry per sample.

        Args:
            args: reads ``advantage_estimator``, ``rewards_normalization``,
                ``grpo_std_normalization``, ``n_samples_per_prompt``, ``reward_key`` and the
                two conversion hook paths.
            samples: ``list[Sample]`` (flatten groups first with :func:`flatten_samples`).

        Returns:
            ``tokens`` (list[list[int]]), ``response_lengths`` (tokens), ``rewards``
            (normalised, float32 values), ``raw_reward``, ``truncated`` (0/1),
            ``sample_indices``, ``rollout_ids``, ``loss_masks`` (``response_length`` 0/1 each;
            zeros for ``remove_sample`` and FAILED samples), ``rollout_mask_sums`` (mask tokens
            summed over the rollout's segments: the loss denominator), ``failed`` (1 for a
            FAILED sample: reward 0.0, left out of its group's mean and std, a zero mask, and a
            prompt-plus-placeholder row when it has no response); when the first sample has them
            ``rollout_log_probs``, ``teacher_log_probs``, ``metadata`` (``train_metadata``),
            ``round_number``; ``multimodal_train_inputs`` when any sample has them.

        Raises:
            ContractError: empty ``samples``; VIM108 (mask length), VIM110 (reward), VIM112
                (optional column on some samples only), VIM113 (mixed or undividable groups),
                VIM115 (segments disagree), VIM162 (hook result shape).
        """
        samples = list(samples)
        if not samples:
            raise ContractError("BatchBuilder.convert: no samples to convert (the rollout "
                                "returned an empty batch)")
        from vime.utils.misc import load_function

        convert_path = arg(args, "custom_convert_samples_to_train_data_path")
        keys = rollout_keys(samples)
        ids = _numeric_ids(keys)
        if convert_path:
            fn = load_function(convert_path, hook="custom_convert_samples_to_train_data_path")
            custom = _check_custom_convert(fn, fn(args, samples), samples)
            custom.setdefault("rollout_ids", ids)
            if "rollout_mask_sums" not in custom:
                custom["rollout_mask_sums"] = _mask_sums(keys, custom["loss_masks"])
            return custom

        post_path = arg(args, "custom_reward_post_process_path")
        # One pass of the always-enforced checks for everything conversion reads.
        require(conversion_problems(samples, keys, n_samples_per_prompt=_group_size(args),
                                    reward_key=arg(args, "reward_key"), rewards=not post_path,
                                    grouped=not post_path and _normalised(args)))
        if post_path:
            fn = load_function(post_path, hook="custom_reward_post_process_path")
            raw, rewards = _check_reward_post_process(fn, fn(args, samples), samples)
        else:
            raw = [0.0 if is_failed(s) else float(s.get_reward_value(args)) for s in samples]
            rewards = _normalise(args, samples, raw, keys)
        masks = [_loss_mask(s) for s in samples]
        rows = [_failed_row(s) if is_failed(s) else (list(s.tokens), int(s.response_length))
                for s in samples]
        data: dict[str, Any] = {
            "tokens": [row[0] for row in rows],
            "response_lengths": [row[1] for row in rows],
            "rewards": rewards,
            "raw_reward": [s.metadata.get("raw_reward", r) if isinstance(s.metadata, dict) else r
                           for s, r in zip(samples, raw, strict=True)],
            "truncated": [1 if s.status == Sample.Status.TRUNCATED else 0 for s in samples],
            "sample_indices": [s.index for s in samples],
            "rollout_ids": ids,
            "loss_masks": masks,
            "rollout_mask_sums": _mask_sums(keys, masks),
            "failed": [1 if is_failed(s) else 0 for s in samples],
        }
        optional = {
            "rollout_log_probs": lambda s: s.rollout_log_probs,
            "teacher_log_probs": lambda s: s.teacher_log_probs,
            "metadata": lambda s: s.train_metadata,
            "round_number": lambda s: (s.metadata or {}).get("round_number"),
        }
        for name, get in optional.items():
            column = _optional_column(samples, get)
            if column is not None:
                data[name] = [list(v) if isinstance(v, list) else v for v in column]
        if any(s.multimodal_train_inputs is not None for s in samples):
            data["multimodal_train_inputs"] = [s.multimodal_train_inputs for s in samples]
        return data


def _mask_sums(keys: Sequence[Hashable], masks: Sequence[Sequence[int]]) -> list[int]:
    total: dict[Hashable, int] = {}
    for k, m in zip(keys, masks, strict=True):
        total[k] = total.get(k, 0) + int(sum(m))
    return [total[k] for k in keys]


def global_batch_size(args: Namespace) -> int:
    """Rollouts per optimiser step: ``--global-batch-size``, else ``rollout_batch_size *
    n_samples_per_prompt // num_steps_per_rollout`` (docs/contract.md §11).

    Raises:
        ValueError: the result is < 1 (names the arguments).
    """
    gbs = arg(args, "global_batch_size")
    if gbs is None:
        steps = arg(args, "num_steps_per_rollout") or 1
        gbs = args.rollout_batch_size * arg(args, "n_samples_per_prompt") // steps
    if gbs < 1:
        raise ValueError(f"--global-batch-size resolves to {gbs}; it must be >= 1 rollouts per "
                         "optimiser step (set --global-batch-size or lower --num-steps-per-rollout)")
    return int(gbs)


def split_into_steps(args: Namespace, data: dict[str, Any]) -> list[dict[str, Any]]:
    """Cut converted data into optimiser steps of ``global_batch_size`` rollouts each.

    A rollout's segments (equal ``rollout_ids``) always land in the same step. ``num_steps =
    num_rollouts // global_batch_size``; the remainder is dropped with a ``UserWarning``.
    Each step's dict has the per-sample columns sliced and ``total_lengths`` (tokens per
    sample) added.

    Raises:
        ValueError: fewer rollouts than one global batch (names both numbers and the fix).
    """
    gbs = global_batch_size(args)
    ids = data["rollout_ids"]
    order: dict[Any, list[int]] = {}
    for i, rid in enumerate(ids):
        order.setdefault(rid, []).append(i)
    rollouts = list(order.values())
    num_steps = len(rollouts) // gbs
    if num_steps < 1:
        raise ValueError(f"the step has {len(rollouts)} rollouts, fewer than --global-batch-size="
                         f"{gbs}; lower --global-batch-size or raise --rollout-batch-size")
    dropped = len(rollouts) - num_steps * gbs
    if dropped:
        warnings.warn(f"{dropped} of {len(rollouts)} rollouts do not fill a global batch of {gbs} "
                      "and are dropped this step", UserWarning, stacklevel=2)
    steps = []
    for k in range(num_steps):
        rows = [i for r in rollouts[k * gbs:(k + 1) * gbs] for i in r]
        step = {key: ([value[i] for i in rows] if key in _PER_SAMPLE else value)
                for key, value in data.items()}
        step["total_lengths"] = [len(t) for t in step["tokens"]]
        steps.append(step)
    return steps
