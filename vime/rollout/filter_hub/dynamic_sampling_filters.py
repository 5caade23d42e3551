"""Built-in dynamic sampling filters: drop groups whose rewards carry no learning signal.

Usage::

    check_reward_nonzero_std(args, group)       # DynamicFilterOutput(keep=False,
                                                #   reason="zero_std_1.0") if all rewards are 1.0

A GRPO group with identical rewards has zero advantages everywhere: it costs a training step and
teaches nothing. Rewards are read with ``Sample.get_reward_value(args)`` (dict rewards through
``--reward-key``); fan-out groups count each leaf sample.

See ``docs/contract.md`` §5.
"""

from __future__ import annotations

import statistics
from argparse import Namespace
from typing import Any

from vime.rollout.base_types import iter_samples
from vime.rollout.filter_hub.base_types import DynamicFilterOutput
from vime.utils.types import Sample

__all__ = ["STD_EPS", "check_reward_nonzero_std", "check_reward_nonzero_std_with_fallback"]

#: Groups with a (population) reward standard deviation at or below this are dropped.
STD_EPS = 1e-6


def check_reward_nonzero_std(args: Namespace, samples: list[Sample], **kwargs: Any
                             ) -> DynamicFilterOutput:
    """Keep the group iff the standard deviation of its rewards is above :data:`STD_EPS`.

    Args:
        samples: one group (``n_samples_per_prompt`` samples, or fan-out lists of them);
            FAILED samples (``--hook-failure fail-sample``) are left out.

    Raises:
        ContractError: VIM110 for a None reward or a dict reward without ``--reward-key``.
    """
    rewards = [float(s.get_reward_value(args)) for s in iter_samples(samples)
               if s.status is not Sample.Status.FAILED]  # failed samples have no reward
    if len(rewards) > 1 and statistics.pstdev(rewards) > STD_EPS:
        return DynamicFilterOutput(keep=True)
    value = rewards[0] if rewards else 0.0
    return DynamicFilterOutput(keep=False, reason=f"zero_std_{round(value, 1)}")


def check_reward_nonzero_std_with_fallback(args: Namespace, samples: list[Sample],
                                           **kwargs: Any) -> DynamicFilterOutput:
    """As :func:`check_reward_nonzero_std`, but a dropped group is kept while the rollout has no
    spare groups left (``keep_when_insufficient=True``)."""
    out = check_reward_nonzero_std(args, samples, **kwargs)
    if not out.keep:
        out.keep_when_insufficient = True
    return out
