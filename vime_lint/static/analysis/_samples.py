"""Which names hold a ``Sample`` by their spelling: the convention the sample rules and the
turn-loop analysis share (a hook parameter or local named ``sample`` or ``*_sample``, or one
the caller already knows holds a sample).
"""

from __future__ import annotations

__all__ = ["is_sample_name"]


def is_sample_name(name: str, known: set[str] | frozenset[str]) -> bool:
    """True when ``name`` is one of the ``known`` sample names or is spelled ``sample`` or
    ``*_sample``."""
    return name in known or name == "sample" or name.endswith("_sample")
