"""A rollout buffer: finished groups are kept and served again to later steps, newest first;
the dynamic sampling filter keeps groups whose rewards differ."""

from __future__ import annotations

from argparse import Namespace
from collections import deque
from typing import Any

from vime.rollout.filter_hub.base_types import DynamicFilterOutput
from vime.utils.types import Sample


class ReplayBuffer:
    def __init__(self, data_buffer: deque[list[Sample]] | None = None, capacity: int = 64) -> None:
        self.data_buffer = data_buffer if data_buffer is not None else deque(maxlen=capacity)

    def add(self, group: list[Sample]) -> None:
        self.data_buffer.appendleft(group)

    def take(self, n: int) -> list[list[Sample]]:
        out = []
        while self.data_buffer and len(out) < n:
            out.append(self.data_buffer.popleft())
        return out


BUFFER = ReplayBuffer()


def buffer_filter(args: Namespace, rollout_id: int, buffer: list[list[Sample]],
                  num_samples: int) -> list[list[Sample]]:
    for group in buffer:
        BUFFER.add(group)
    return BUFFER.take(num_samples)


def dynamic_sampling_filter(args: Namespace, samples: list[Sample],
                            **kwargs: Any) -> DynamicFilterOutput:
    rewards = {s.get_reward_value(args) for s in samples}
    if len(rewards) > 1:
        return DynamicFilterOutput(keep=True)
    return DynamicFilterOutput(keep=False, reason="zero_std")
