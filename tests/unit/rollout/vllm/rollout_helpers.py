"""Helpers shared by the rollout unit tests (imported as ``rollout_helpers``)."""

from __future__ import annotations

from vime.utils.types import Sample


class Source:
    """A data source handing out ``k`` new groups of ``n`` prompts per ``get_samples(k)``
    (``group_index`` g, ``index`` g * n + j, prompt ``p<g>``, ``tokens`` when given); records
    the groups that come back through ``add_samples`` in ``added``."""

    def __init__(self, n: int, tokens: list[int] | None = None) -> None:
        self.n, self.next, self.tokens = n, 0, tokens
        self.added: list[list[Sample]] = []

    def get_samples(self, k: int) -> list[list[Sample]]:
        out = []
        for _ in range(k):
            g = self.next
            self.next += 1
            out.append([Sample(group_index=g, index=g * self.n + j, prompt=f"p{g}",
                               tokens=list(self.tokens or [])) for j in range(self.n)])
        return out

    def add_samples(self, groups: list[list[Sample]]) -> None:
        self.added += groups
