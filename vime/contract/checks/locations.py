"""Where a finding is: ``samples[3][1].loss_mask (index=13)``, ``[k]`` for a fan-out leaf.

Usage::

    loc = Loc("samples[3][1]", index=13)
    loc.at("loss_mask")          # "samples[3][1].loss_mask (index=13)"
    loc.at("tokens", 5)          # "samples[3][1].tokens[5] (index=13)"
    loc.at()                     # "samples[3][1] (index=13)"

See ``docs/contract.md`` §0.3 (messages and locations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Loc", "leaf_prefix"]


@dataclass(frozen=True, slots=True)
class Loc:
    """A sample's location: a path prefix (``samples[g][e]`` or ``samples[g][e][k]``, a hook
    result) and its ``index`` (None when unset)."""

    prefix: str
    index: Any = None

    def at(self, field: str | None = None, item: int | str | None = None) -> str:
        """The location of ``field`` (and its ``item``) of this sample, with ``index=``."""
        text = self.prefix
        if field:
            text += f".{field}"
        if item is not None:
            text += f"[{item!r}]" if isinstance(item, str) else f"[{item}]"
        if self.index is not None:
            text += f" (index={self.index})"
        return text


def leaf_prefix(g: int, e: int, k: int | None = None, root: str = "samples") -> str:
    """``samples[g][e]``, or ``samples[g][e][k]`` for leaf ``k`` of a fan-out element."""
    return f"{root}[{g}][{e}]" if k is None else f"{root}[{g}][{e}][{k}]"
