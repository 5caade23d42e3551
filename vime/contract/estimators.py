"""The advantage estimators as facts: which exist, which subtract the group mean, which also
divide by the group standard deviation, which broadcast one value over the response. One light
table (no torch) read by the argument parser, the batch builder, the trainer's advantages and
the runtime checks.

GRPO: Shao et al. 2024 (arXiv:2402.03300); GSPO: Zheng et al. 2025 (arXiv:2507.18071); CISPO:
MiniMax-M1 (arXiv:2506.13585); REINFORCE++: Hu 2025 (arXiv:2501.03262).
"""

from __future__ import annotations

__all__ = ["BROADCAST_ESTIMATORS", "ESTIMATORS", "GROUP_BASELINE_ESTIMATORS",
           "NOT_IN_V1_ESTIMATORS", "STD_ESTIMATORS"]

#: Estimators whose advantage is the sample's (normalised) reward on every response token.
BROADCAST_ESTIMATORS: tuple[str, ...] = ("grpo", "gspo", "cispo")
#: Every estimator the trainer implements, in ``--advantage-estimator``'s order.
ESTIMATORS: tuple[str, ...] = (*BROADCAST_ESTIMATORS, "reinforce_plus_plus",
                               "reinforce_plus_plus_baseline")
#: Accepted by the parser for upstream launches, refused with a message (``ppo`` needs a critic).
NOT_IN_V1_ESTIMATORS: tuple[str, ...] = ("ppo",)
#: Estimators whose rewards get the group mean subtracted (a group without reward spread then
#: has zero advantages: VIM171).
GROUP_BASELINE_ESTIMATORS: frozenset[str] = frozenset(
    {*BROADCAST_ESTIMATORS, "reinforce_plus_plus_baseline"})
#: Estimators whose rewards are also divided by the group standard deviation.
STD_ESTIMATORS: frozenset[str] = frozenset(BROADCAST_ESTIMATORS)
