"""The real-model recipe's reward function (``--custom-rm-path``): the answer after ``####``.

    reward(args, sample)    # 1.0 when the integer after the last "####" is the label, else 0.0

Training (``examples/real_model/grpo.yaml``) and the held-out evaluation (``eval.yaml``) both
use it, so the train reward and the evaluation accuracy are the same measure. It is
``async def (args, sample, **kwargs) -> float`` (the contract's ``async_rm`` signature); the
grading lives in :func:`vime.tasks.word_problems.score`, whose docstring says why a bonus for
the ``#### N`` form alone made the model worse.

Check it (from the repository root, after ``python -m vime.demo --model
smollm2-135m-instruct`` prepared ``runs/demo_real``)::

    vime-lint rollout examples/real_model
    PYTHONPATH=$PWD vime-lint check --config examples/real_model/grpo.yaml \
        --rollout-function-path vime.rollout.vllm_rollout.generate_rollout --dry-run-engine vllm
"""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from vime.tasks.word_problems import score
from vime.utils.types import Sample

__all__ = ["reward"]


async def reward(args: Namespace, sample: Sample, **kwargs: Any) -> float:
    """1.0 for the right number after ``####`` in the sample's response, else 0.0."""
    return score(sample.response, sample.label)
