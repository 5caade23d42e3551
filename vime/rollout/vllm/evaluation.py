"""The eval step of the default rollout: generate and score every ``--eval-*`` dataset
concurrently, with the dataset's own sampling settings, reward and generate paths.

Usage::

    ev = await eval_rollout(args, rollout_id)
    ev.data            # {name: {"rewards": [...], "truncated": [...], "samples": [...]}}
    ev.metrics         # {"eval/vllm_rollout/generate_time_s": 3.2}
"""

from __future__ import annotations

import asyncio
import logging
import time
from argparse import Namespace
from collections.abc import Sequence
from typing import Any

from vime.config import arg
from vime.rollout.base_types import RolloutFnEvalOutput, iter_samples
from vime.rollout.eval_data import eval_copies, load_eval_prompts, samples_per_prompt
from vime.rollout.failures import failure_counts, is_failed
from vime.rollout.vllm.sampling import generate_and_rm, score_groups
from vime.rollout.vllm.state import RolloutState, get_state
from vime.rollout.vllm_protocol import make_sampling_params
from vime.utils.types import Sample

logger = logging.getLogger(__name__)

__all__ = ["eval_rollout"]


def _eval_prompts(state: RolloutState, args: Namespace, cfg: Any) -> list[Sample]:
    key = (cfg.path, cfg.input_key, cfg.label_key, cfg.metadata_key, cfg.tool_key,
           cfg.max_prompt_len)
    if key not in state.eval_cache:
        # a tokenizer only for the chat template or the length filter, as for --prompt-data
        need = bool(arg(args, "apply_chat_template")) or cfg.max_prompt_len
        state.eval_cache[key] = load_eval_prompts(args, cfg, state.tokenizer if need else None)
    return state.eval_cache[key]


def _eval_sampling_params(args: Namespace, cfg: Any) -> dict[str, Any]:
    def pick(value: Any, default: Any) -> Any:
        return default if value is None else value

    return make_sampling_params(
        temperature=float(pick(cfg.temperature, arg(args, "rollout_temperature"))),
        top_p=float(pick(cfg.top_p, arg(args, "rollout_top_p"))),
        top_k=int(pick(cfg.top_k, arg(args, "rollout_top_k"))),
        max_response_len=pick(cfg.max_response_len,
                              arg(args, "rollout_max_response_len")),
        min_new_tokens=cfg.min_new_tokens,
        repetition_penalty=cfg.repetition_penalty,
        stop=cfg.stop, stop_token_ids=cfg.stop_token_ids,
        no_stop_trim=True if cfg.no_stop_trim is None else bool(cfg.no_stop_trim),
        skip_special_tokens=bool(arg(args, "rollout_skip_special_tokens")),
    )


async def _eval_dataset(state: RolloutState, args: Namespace, cfg: Any) -> dict[str, Any]:
    n_per = samples_per_prompt(args, cfg)
    samples = eval_copies(_eval_prompts(state, args, cfg), cfg, n_per)   # the eval view's
    params = _eval_sampling_params(args, cfg)
    deterministic = arg(args, "vllm_enable_deterministic_inference")
    seed = int(arg(args, "rollout_seed"))
    calls = []
    for k, s in enumerate(samples):
        p = {**params, "seed": seed + k % n_per} if deterministic else params
        calls.append(generate_and_rm(args, s, p, evaluation=True))
    results = await asyncio.gather(*calls)
    leaves = sorted(iter_samples(list(results)), key=lambda s: s.index or 0)
    if arg(args, "group_rm"):   # each prompt's samples scored as one group, as in training
        await score_groups(state, args, leaves, evaluation=True)
    failed = [s for s in leaves if is_failed(s)]
    if failed:   # --hook-failure fail-sample: no reward to average; said, not hidden
        counts = ", ".join(f"{h}/{t}: {n}" for (h, t), n in failure_counts(failed).items())
        logger.warning("eval %s: %d of %d samples FAILED and are left out of its metrics (%s)",
                       cfg.name, len(failed), len(leaves), counts)
        leaves = [s for s in leaves if not is_failed(s)]
    key = arg(args, "eval_reward_key") or arg(args, "reward_key")
    reward_args = Namespace(reward_key=key)
    return {"rewards": [float(s.get_reward_value(reward_args)) for s in leaves],
            "truncated": [s.status == Sample.Status.TRUNCATED for s in leaves],
            "samples": leaves}


async def eval_rollout(args: Namespace, rollout_id: int) -> RolloutFnEvalOutput:
    """Generate and score every ``args.eval_datasets`` entry concurrently.

    Each prompt is copied ``n_samples_per_eval_prompt`` times with sequential ``index``; the
    dataset's ``rm_type``, ``metadata_overrides``, reward and generate paths apply to its
    samples; sampling uses the dataset's settings, falling back to the rollout's.

    Returns:
        ``RolloutFnEvalOutput(data={name: {"rewards", "truncated", "samples"}})``, lists of
        equal length sorted by ``index``; ``data={}`` without eval datasets.

    With ``--group-rm`` each prompt's ``n_samples_per_eval_prompt`` samples are scored by one
    call of the batch reward, as training scores a group (a dataset's own ``rm_type`` or
    ``custom_rm_path`` scores its samples one by one).
    """
    state = await get_state(args)
    state.start_step(rollout_id)
    configs: Sequence[Any] = getattr(args, "eval_datasets", None) or []
    start = time.monotonic()
    results = await asyncio.gather(*(_eval_dataset(state, args, cfg) for cfg in configs))
    data = {cfg.name: res for cfg, res in zip(configs, results, strict=True)}
    metrics = {"eval/vllm_rollout/generate_time_s": time.monotonic() - start}
    return RolloutFnEvalOutput(data=data, metrics=metrics)
