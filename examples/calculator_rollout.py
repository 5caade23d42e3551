"""A custom rollout function (``--rollout-function-path``): multi-turn episodes with a calculator.

The model may call a calculator by ending a turn with ``<calc>EXPR</calc>`` (a stop string, so
the engine returns right there). The rollout evaluates ``EXPR``, appends ``<result>VALUE</result>``
to the response as environment tokens, and lets the model continue, up to
:data:`MAX_TOOL_CALLS` calls per episode::

    <|im_start|>user\\nWhat is 37+48?<|im_end|>\\n<|im_start|>assistant\\n   prompt
    <calc>37+48</calc>                                                      model   (loss_mask 1)
    <result>85</result>                                                     tool    (loss_mask 0)
    The answer is 85.<|im_end|>                                             model   (loss_mask 1)

Tool tokens go in with ``Sample.append_response_tokens(trainable=False)``: they are part of
``tokens`` and ``response`` but carry loss-mask 0 and log-prob 0.0, so the policy is trained
only on what it sampled. Each model turn is one call of the built-in
``vime.rollout.vllm_rollout.generate`` (token in/token out: the next turn continues from
``sample.tokens``, nothing is re-tokenised). The reward is the run's ``--rm-type`` /
``--custom-rm-path`` on the whole response (``vime.rollout.rm_hub.async_rm``).

Train steps return ``rollout_batch_size`` groups of ``n_samples_per_prompt`` samples through
``finalize_rollout_groups``, with ``rollout/calculator_rollout/tool_calls_mean`` as a metric.
Eval steps run the same episodes on every ``--eval-config`` / ``--eval-prompt-data`` dataset.

Run it (from the repository root, after ``make demo`` built ``runs/demo``; the demo's model
never learnt the tool, so it rarely calls it: this shows the plumbing, not a trick)::

    PYTHONPATH=$PWD vime train --config examples/demo/grpo.yaml \
        --rollout-function-path examples.calculator_rollout.generate_rollout \
        --rollout-max-response-len 48 --num-rollout 10 --run-dir runs/calculator
    vime-lint rollout examples/calculator_rollout.py
"""

from __future__ import annotations

import ast
import asyncio
import operator
import re
from argparse import Namespace
from collections.abc import Awaitable, Callable
from typing import Any

from vime.rollout.base_types import (
    RolloutFnEvalOutput,
    RolloutFnTrainOutput,
    finalize_rollout_groups,
)
from vime.rollout.rm_hub import async_rm
from vime.rollout.vllm_protocol import make_sampling_params
from vime.rollout.vllm_rollout import generate as vllm_generate
from vime.rollout.vllm_rollout import sampling_params_from_args
from vime.utils.async_utils import run
from vime.utils.data import load_tokenizer
from vime.utils.types import Sample

__all__ = ["CALL_END", "MAX_TOOL_CALLS", "ModelTurn", "calculate", "find_tool_call",
           "generate", "generate_rollout", "run_episode"]

#: The stop string that ends a tool call.
CALL_END = "</calc>"
#: Tool calls allowed per episode; a later call is left unanswered and ends the episode.
MAX_TOOL_CALLS = 2
#: Longest expression the calculator accepts (characters).
MAX_EXPRESSION_CHARS = 64

_CALL = re.compile(r"<calc>(?P<expr>[^<>]{1," + str(MAX_EXPRESSION_CHARS) + r"})</calc>\s*$")
_OPS: dict[type[ast.AST], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}

#: One model turn: ``await turn(args, sample, sampling_params) -> Sample`` (the built-in
#: ``generate`` in training; tests pass a scripted one).
ModelTurn = Callable[[Namespace, Sample, dict[str, Any]], Awaitable[Sample]]


def calculate(expression: str) -> str:
    """Evaluate integer arithmetic (``+ - * // %``, unary minus, parentheses) without ``eval``.

    Returns:
        The value as text (``"85"``), or ``"error: <reason>"`` for anything else (names, floats,
        division by zero, powers, results beyond 10**12): the model sees the error as the tool
        output, the episode goes on.
    """
    try:
        tree = ast.parse(expression.strip(), mode="eval")
        value = _eval_node(tree.body)
    except (SyntaxError, ValueError, ZeroDivisionError) as exc:
        return f"error: {exc}"
    return str(value)


def _eval_node(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _eval_node(node.operand)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        value = int(_OPS[type(node.op)](_eval_node(node.left), _eval_node(node.right)))
        if abs(value) > 10**12:
            raise ValueError("result too large")
        return value
    raise ValueError(f"unsupported expression {ast.dump(node)[:40]}")


def find_tool_call(response: str) -> str | None:
    """The expression of a ``<calc>EXPR</calc>`` call that ends ``response`` (None if there is
    none, e.g. the turn ended with ``<|im_end|>`` or the budget)."""
    match = _CALL.search(response)
    return match.group("expr") if match else None


def _room_for(args: Namespace, params: dict[str, Any], sample: Sample, n: int) -> bool:
    """True when ``n`` environment tokens and at least one model token still fit in the
    response budget (``max_tokens``) and the context budget (``--rollout-max-context-len``)."""
    budget = params.get("max_tokens")
    if budget is not None and sample.response_length + n >= int(budget):
        return False
    context = getattr(args, "rollout_max_context_len", None)
    return not (context and len(sample.tokens) + n >= int(context))


async def run_episode(args: Namespace, sample: Sample, sampling_params: dict[str, Any],
                      model_turn: ModelTurn, tokenizer: Any) -> Sample:
    """Alternate model turns and calculator results until the model stops calling the tool.

    Args:
        sample: PENDING (fresh) or ABORTED (resumed) sample with a string prompt or tokens.
        sampling_params: vLLM sampling params; :data:`CALL_END` is added to ``stop``.
        model_turn: generates one turn and sets ``status`` from the finish reason.
        tokenizer: encodes tool results (``encode(text, add_special_tokens=False)``).

    Returns:
        The sample: COMPLETED (no further call), TRUNCATED (budget: also when a tool result
        and one more model token would not fit, so the response never ends in an unanswered
        result) or ABORTED; tool results have loss-mask 0; ``metadata["tool_calls"]`` counts
        the answered calls.
    """
    params = dict(sampling_params)
    params["stop"] = [*(params.get("stop") or []), CALL_END]
    calls = 0
    while True:
        sample = await model_turn(args, sample, params)
        expression = find_tool_call(sample.response)
        if sample.status != Sample.Status.COMPLETED or expression is None:
            break
        if calls >= MAX_TOOL_CALLS:
            break
        result = f"<result>{calculate(expression)}</result>"
        result_ids = tokenizer.encode(result, add_special_tokens=False)
        if not _room_for(args, params, sample, len(result_ids)):
            # the result and a model turn after it do not fit: stop on the model's turn rather
            # than overrun the budget with an unanswered observation (VIM124)
            sample.status = Sample.Status.TRUNCATED
            break
        calls += 1
        sample.append_response_tokens(args, tokens=result_ids, trainable=False, text=result)
        # the response goes on: the next model turn continues from sample.tokens
        sample.status = Sample.Status.PENDING
    sample.metadata["tool_calls"] = calls
    return sample


async def generate(args: Namespace, sample: Sample, sampling_params: dict[str, Any]) -> Sample:
    """One calculator episode on the run's engines (also usable on its own as
    ``--custom-generate-function-path examples.calculator_rollout.generate`` with the default
    rollout)."""
    return await run_episode(args, sample, sampling_params, vllm_generate,
                             load_tokenizer(args.hf_checkpoint))


async def _episode_and_reward(args: Namespace, sample: Sample,
                              sampling_params: dict[str, Any]) -> Sample:
    sample = await generate(args, sample, sampling_params)
    if sample.status != Sample.Status.ABORTED:
        sample.reward = await async_rm(args, sample)
    return sample


async def _train_groups(args: Namespace, groups: list[list[Sample]]) -> list[list[Sample]]:
    params = sampling_params_from_args(args)
    done = await asyncio.gather(*(asyncio.gather(*(_episode_and_reward(args, s, params)
                                                   for s in group)) for group in groups))
    return [list(group) for group in done]


async def _eval_dataset(args: Namespace, cfg: Any, samples: list[Sample]) -> dict[str, Any]:
    params = make_sampling_params(temperature=cfg.temperature, top_p=cfg.top_p, top_k=cfg.top_k,
                                  max_response_len=cfg.max_response_len)
    samples = list(await asyncio.gather(*(_episode_and_reward(args, s, params) for s in samples)))
    return {"rewards": [float(s.get_reward_value(args)) for s in samples],
            "truncated": [s.status == Sample.Status.TRUNCATED for s in samples],
            "samples": samples}


async def _evaluate(args: Namespace, data_source: Any) -> dict[str, dict[str, Any]]:
    # the held-out sets of --eval-prompt-data, copied n_samples_per_eval_prompt times as the
    # default rollout does (data_source.get_samples would serve training prompts: VIM131)
    sets = data_source.eval_datasets()
    configs = [cfg for cfg in args.eval_datasets or [] if cfg.name in sets]
    results = await asyncio.gather(*(_eval_dataset(args, cfg, sets[cfg.name])
                                     for cfg in configs))
    return {cfg.name: result for cfg, result in zip(configs, results, strict=True)}


def generate_rollout(args: Namespace, rollout_id: int, data_source: Any,
                     evaluation: bool = False) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    """``--rollout-function-path examples.calculator_rollout.generate_rollout``.

    Args:
        args: the run's arguments (configuration only; never assigned to).
        rollout_id: the rollout step.
        data_source: gives ``rollout_batch_size`` groups of ``n_samples_per_prompt`` copies.
        evaluation: False -> ``RolloutFnTrainOutput`` (``list[list[Sample]]``); True ->
            ``RolloutFnEvalOutput`` over ``data_source.eval_datasets()`` (one entry per
            ``--eval-prompt-data`` dataset).

    Raises:
        ValueError: from the reward model (no ``--rm-type`` and no ``--custom-rm-path``) or
            from a dataset (missing file or key).
    """
    if evaluation:
        return RolloutFnEvalOutput(data=run(_evaluate(args, data_source)))
    groups = run(_train_groups(args, data_source.get_samples(args.rollout_batch_size)))
    calls = [s.metadata.get("tool_calls", 0) for group in groups for s in group]
    metrics = {"rollout/calculator_rollout/tool_calls_mean": sum(calls) / max(len(calls), 1)}
    return finalize_rollout_groups(args, rollout_id, groups, metrics)
