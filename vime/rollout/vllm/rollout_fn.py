"""The default ``--rollout-function-path``: one plain ``def`` that runs the train step or the
eval step on the process's background loop.

Usage::

    --rollout-function-path vime.rollout.vllm_rollout.generate_rollout   # the default

    out = generate_rollout(args, rollout_id, data_source)                  # train step
    ev = generate_rollout(args, rollout_id, data_source, evaluation=True)  # eval step

Typed with ``@overload``: ``evaluation=False`` (or left out) gives ``RolloutFnTrainOutput``,
``evaluation=True`` gives ``RolloutFnEvalOutput``, a ``bool`` variable the union, so a wrapper
that edits ``generate_rollout(..., evaluation=False).samples`` type-checks.
"""

from __future__ import annotations

from argparse import Namespace
from typing import Any, Literal, overload

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.rollout.vllm.evaluation import eval_rollout
from vime.rollout.vllm.train_loop import generate_rollout_async
from vime.utils.async_utils import run

__all__ = ["generate_rollout"]


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
    """The default ``--rollout-function-path``: eval -> :func:`eval_rollout`; train -> the
    over-sampling loop, then ``data_source.add_samples(recycled)`` for partial rollouts.

    Returns:
        ``RolloutFnTrainOutput`` (``rollout_batch_size`` groups of ``n_samples_per_prompt``) or
        ``RolloutFnEvalOutput``.
    """
    if evaluation:
        return run(eval_rollout(args, rollout_id))
    output, recycled = run(generate_rollout_async(args, rollout_id, data_source))
    if recycled:
        data_source.add_samples(recycled)
    return output
