"""The real-model recipe's reward functions (``--custom-rm-path``): the answer after ``####``.

    reward(args, sample)    # training: 1.0 right, 0.1 for "#### <wrong number>", else 0.0
    correct(args, sample)   # held-out evaluation: 1.0 right, else 0.0 (accuracy)

The task and the grading live in :mod:`vime.tasks.word_problems`; these are the hooks that
``examples/real_model/grpo.yaml`` and ``eval.yaml`` name. Both are
``async def (args, sample, **kwargs) -> float`` (the contract's ``async_rm`` signature).

Check them (from the repository root, after ``python -m vime.demo --model
smollm2-135m-instruct`` prepared ``runs/demo_real``)::

    vime-lint rollout examples/real_model
    PYTHONPATH=$PWD vime-lint check --config examples/real_model/grpo.yaml \
        --rollout-function-path vime.rollout.vllm_rollout.generate_rollout
"""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from vime.tasks.word_problems import score
from vime.utils.types import Sample

__all__ = ["correct", "reward"]


async def reward(args: Namespace, sample: Sample, **kwargs: Any) -> float:
    """Training reward of one sample: :func:`vime.tasks.word_problems.score` of its response."""
    return score(sample.response, sample.label)


async def correct(args: Namespace, sample: Sample, **kwargs: Any) -> float:
    """Evaluation reward: 1.0 when the number after ``####`` is the label, else 0.0."""
    return score(sample.response, sample.label, format_reward=0.0)
