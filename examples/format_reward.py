"""A custom reward function (``--custom-rm-path``): the right number in the right format.

The built-in ``--rm-type math`` grades only the last number of the response. This reward also
asks for the answer sentence the task teaches, so a model cannot collect reward with
``"85 85 85"``:

    reward_func(args, sample)   # "The answer is 85."  label "85" -> 1.0
                                # "85, I think"        label "85" -> 0.5 (number right, form wrong)
                                # "The answer is 84."  label "85" -> 0.0

Run it on the demo's task (from the repository root, after ``make demo`` built ``runs/demo``)::

    PYTHONPATH=$PWD vime train --config examples/demo/grpo.yaml \
        --custom-rm-path examples.format_reward.reward_func --num-rollout 20 \
        --run-dir runs/format_reward
    vime-lint rollout examples/format_reward.py
"""

from __future__ import annotations

import re
from argparse import Namespace
from typing import Any

from vime.rollout.rm_hub.math_rm import extract_last_number, numbers_equal
from vime.utils.types import Sample

__all__ = ["ANSWER_FORM", "format_reward", "reward_func"]

#: The well-formed answer: the sentence the arithmetic task's SFT data uses, then the end of
#: the response (special tokens such as ``<|im_end|>`` and whitespace may follow).
ANSWER_FORM = re.compile(r"^\s*The answer is (?P<n>-?\d+)\.\s*(?:<\|im_end\|>\s*)?$")


def format_reward(response: str, label: str | None) -> float:
    """1.0 for ``"The answer is <label>."``; 0.5 when only the last number is right; else 0.0.

    Args:
        response: the decoded response text (all turns).
        label: the expected integer as text (the dataset's ``--label-key`` column).

    Raises:
        ValueError: ``label`` is None (the run has no ``--label-key``), naming the fix.
    """
    if label is None:
        raise ValueError("format_reward needs a label: pass --label-key (the demo's data uses "
                         "`label`)")
    match = ANSWER_FORM.match(response)
    if match is not None and numbers_equal(match.group("n"), str(label)):
        return 1.0
    last = extract_last_number(response)
    if last is not None and numbers_equal(last, str(label)):
        return 0.5
    return 0.0


async def reward_func(args: Namespace, sample: Sample, **kwargs: Any) -> float:
    """``--custom-rm-path examples.format_reward.reward_func``: :func:`format_reward` of one
    sample (``async def (args, sample, **kwargs) -> float``, as the contract's ``async_rm``
    calls it)."""
    return format_reward(sample.response, sample.label)
