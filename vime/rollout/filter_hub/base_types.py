"""The result type of a dynamic sampling filter.

Usage::

    DynamicFilterOutput(keep=True)
    DynamicFilterOutput(keep=False, reason="zero_std_1.0")        # counted as drop_zero_std_1.0
    DynamicFilterOutput(keep=False, reason="zero_std_0.0", keep_when_insufficient=True)

Field names follow upstream slime's ``slime/rollout/filter_hub/base_types.py``; see
``docs/contract.md`` §5.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DynamicFilterOutput"]


@dataclass
class DynamicFilterOutput:
    """A filter's decision on one finished group.

    ``keep``: keep the group for training. ``reason``: why it was dropped; the default rollout
    counts drops as ``rollout/dynamic_filter/drop_<reason>`` (None -> ``drop_unknown``).
    ``keep_when_insufficient``: keep a dropped group anyway when no spare groups remain (the
    groups still in flight plus the kept ones are no more than the target).
    """

    keep: bool
    reason: str | None = None
    keep_when_insufficient: bool = False
