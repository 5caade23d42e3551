"""The staleness bound of an overlapped rollout (``--async-rollout --max-staleness S``).

With ``--async-rollout`` rollout ``k + 1`` is generated while step ``k`` trains, so its samples
come from weights one version behind the weights that train on them. A sample's **lag** is
``trainer_version - oldest(sample)``: the weight versions between the weights that produced its
oldest token (the lowest numeric entry of ``Sample.weight_versions``, which the engines report
after each sync) and the weights the trainer holds when it trains on it. The train loop numbers
versions by rollout steps trained, so rollout ``k`` trains at version ``k``.

A group any of whose samples lags more than ``S`` versions (a ``--partial-rollout`` sample
recycled across several steps, say) is dropped before conversion and counted; the others train.
Upstream slime's ``train_async.py`` overlaps the same way with a lag of one version.

Usage::

    kept, metrics = bound_staleness(groups, trainer_version=7, max_staleness=1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vime.rollout.base_types import iter_samples
from vime.rollout.rollout_metrics import numeric_versions
from vime.utils.types import Sample

__all__ = ["bound_staleness", "sample_lag"]


def sample_lag(sample: Sample, trainer_version: int) -> int | None:
    """``trainer_version - min(numeric weight_versions)`` (weight versions); None when the
    sample has no numeric version (an engine that was never tagged reports ``"default"``)."""
    versions = numeric_versions(sample)
    return trainer_version - min(versions) if versions else None


def bound_staleness(groups: Sequence[Any], *, trainer_version: int,
                    max_staleness: int) -> tuple[list[Any], dict[str, float]]:
    """Drop the groups that lag more than ``max_staleness`` versions behind ``trainer_version``.

    Args:
        groups: ``RolloutFnTrainOutput.samples`` (``list[list[Sample]]``, fan-out lists
            included); a group's lag is the largest lag of its samples.
        trainer_version: the weight version that trains on these samples.
        max_staleness: the bound S (versions, >= 0).

    Returns:
        ``(kept groups, metrics)``: ``rollout/staleness/lag_max`` and ``/lag_mean`` over the
        samples with a numeric version (absent when none has one) and
        ``rollout/staleness/dropped_groups``.

    Raises:
        ValueError: every group is over the bound (nothing would train; names the lags).
    """
    kept: list[Any] = []
    lags: list[int] = []
    dropped_lags: list[int] = []
    for group in groups:
        group_lags = [lag for s in iter_samples(group)
                      if (lag := sample_lag(s, trainer_version)) is not None]
        lags += group_lags
        if group_lags and max(group_lags) > max_staleness:
            dropped_lags.append(max(group_lags))
        else:
            kept.append(group)
    if groups and not kept:
        raise ValueError(f"every group of this step lags more than --max-staleness="
                         f"{max_staleness} weight versions behind the trainer (lags "
                         f"{sorted(set(dropped_lags))}); raise --max-staleness or check that "
                         "weight sync tags the engines' versions")
    metrics: dict[str, float] = {"rollout/staleness/dropped_groups": float(len(dropped_lags))}
    if lags:
        metrics["rollout/staleness/lag_max"] = float(max(lags))
        metrics["rollout/staleness/lag_mean"] = float(sum(lags) / len(lags))
    return kept, metrics
