"""A dynamic sampling filter (``--dynamic-sampling-filter-path``): keep groups that teach.

The default rollout calls the filter once per finished group (``n_samples_per_prompt`` samples
of one prompt) and keeps generating until ``--rollout-batch-size`` groups are kept. A GRPO group
whose rewards are all equal has zero advantage everywhere; a group that mostly hit the length
budget says more about ``--rollout-max-response-len`` than about the answer. Both are dropped:

    dynamic_sampling_filter(args, group)  # rewards [1, 0, 1, 1]   -> keep
                                          # rewards [0, 0, 0, 0]   -> drop, reason "zero_std_0.0"
                                          # 3 of 4 TRUNCATED       -> drop, reason "mostly_truncated"

Drops are logged per step as ``rollout/dynamic_filter/drop_<reason>``. Give the rollout room to
replace dropped groups with ``--over-sampling-batch-size`` (more groups requested at a time).

Run it on the demo's task (from the repository root, after ``make demo`` built ``runs/demo``)::

    PYTHONPATH=$PWD vime train --config examples/demo/grpo.yaml \
        --dynamic-sampling-filter-path examples.informative_groups_filter.dynamic_sampling_filter \
        --over-sampling-batch-size 64 --num-rollout 20 --run-dir runs/filtered
    vime-lint rollout examples/informative_groups_filter.py

The zero-std rule is the one of ``vime.rollout.filter_hub`` (``docs/contract.md`` §5).
"""

from __future__ import annotations

import statistics
from argparse import Namespace
from typing import Any

from vime.rollout.base_types import iter_samples
from vime.rollout.filter_hub.base_types import DynamicFilterOutput
from vime.utils.types import Sample

__all__ = ["MAX_TRUNCATED_FRACTION", "dynamic_sampling_filter"]

#: Groups with more than this fraction of TRUNCATED samples are dropped.
MAX_TRUNCATED_FRACTION = 0.5


def dynamic_sampling_filter(args: Namespace, samples: list[Any], **kwargs: Any
                            ) -> DynamicFilterOutput:
    """Keep the group unless its rewards are all equal or most of it was truncated.

    Args:
        args: the run's arguments (``reward_key`` is read through ``get_reward_value``).
        samples: one group: ``n_samples_per_prompt`` elements, each a ``Sample`` or (fan-out)
            a ``list[Sample]``; every leaf is counted.

    Returns:
        ``DynamicFilterOutput(keep=True)``, or ``keep=False`` with reason
        ``"mostly_truncated"`` or ``"zero_std_<reward>"``.

    Raises:
        ContractError: VIM110 from ``Sample.get_reward_value`` for a None reward or a dict
            reward without ``--reward-key``.
    """
    leaves = list(iter_samples(samples))
    truncated = sum(s.status == Sample.Status.TRUNCATED for s in leaves)
    if leaves and truncated / len(leaves) > MAX_TRUNCATED_FRACTION:
        return DynamicFilterOutput(keep=False, reason="mostly_truncated")
    rewards = [float(s.get_reward_value(args)) for s in leaves]
    if len(rewards) > 1 and statistics.pstdev(rewards) > 1e-6:
        return DynamicFilterOutput(keep=True)
    return DynamicFilterOutput(keep=False, reason=f"zero_std_{rewards[0] if rewards else 0.0:.1f}")
