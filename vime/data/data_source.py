"""Upstream's newest import path for the data sources; re-exports ``vime.rollout.data_source``.

See ``docs/contract.md`` §1.
"""

from vime.rollout.data_source import (
    DataSource,
    RolloutDataSource,
    RolloutDataSourceWithBuffer,
    pop_first,
    pop_oldest,
)

__all__ = ["DataSource", "RolloutDataSource", "RolloutDataSourceWithBuffer", "pop_first",
           "pop_oldest"]
