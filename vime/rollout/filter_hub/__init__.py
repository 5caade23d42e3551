"""Dynamic sampling filters for the default rollout (``--dynamic-sampling-filter-path``).

Usage::

    --dynamic-sampling-filter-path \
        vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std

See ``docs/contract.md`` §1 and §5.
"""

from vime.rollout.filter_hub.base_types import DynamicFilterOutput

__all__ = ["DynamicFilterOutput"]
