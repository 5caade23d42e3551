"""A search agent as a class: one instance, its async ``__call__`` is the generate hook."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

import vime.rollout.vllm_rollout as engine
from vime.utils.types import Sample


class SearchAgent:
    def __init__(self, max_hops: int = 2) -> None:
        self.max_hops = max_hops
        self.history: list[str] = []

    async def hop(self, args: Namespace, sample: Sample, params: dict[str, Any]) -> Sample:
        sample = await engine.generate(args, sample, params)
        self.history.append(sample.response[-40:])
        return sample

    async def __call__(self, args: Namespace, sample: Sample,
                       sampling_params: dict[str, Any]) -> Sample:
        for _ in range(self.max_hops):
            sample = await self.hop(args, sample, sampling_params)
            if sample.status != Sample.Status.COMPLETED or "<search>" not in sample.response:
                break
            sample.status = Sample.Status.PENDING
        return sample


generate = SearchAgent()
