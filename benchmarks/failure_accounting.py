"""Overhead of the hook-failure accounting, next to a rollout step.

Measures, on 2 groups x ... samples with 10 % FAILED: ``failure_metrics`` and
``too_many_failed`` per step, and the per-call cost of running a hook through ``call_hook``
(a registered task, optional timeout) versus awaiting it directly.

Usage::

    python benchmarks/failure_accounting.py [--samples 4096] [--calls 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from vime.rollout.failures import failure_metrics, mark_failed, too_many_failed
from vime.rollout.vllm.hook_calls import call_hook
from vime.utils.types import Sample


class _State:
    def __init__(self) -> None:
        self.pending: dict[int, object] = {}
        self.aborted = False


async def _hook() -> float:
    return 1.0


async def _calls(n: int, wrapped: bool, timeout: float | None) -> float:
    state, sample = _State(), Sample(index=0)
    start = time.perf_counter()
    for _ in range(n):
        if wrapped:
            await call_hook(state, sample, hook="reward", phase="reward", path="bench",
                            timeout=timeout, make=_hook)
        else:
            await _hook()
    return (time.perf_counter() - start) / n


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--calls", type=int, default=20000)
    a = p.parse_args()
    samples = [Sample(index=i, tokens=[1, 2, 3, 4], response_length=2, reward=1.0)
               for i in range(a.samples)]
    for s in samples[::10]:
        mark_failed(s, "reward", ValueError("judge down"), 0.1)
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        failure_metrics(samples)
        too_many_failed(samples, 0.5)
    per_step = (time.perf_counter() - t0) / reps
    direct = asyncio.run(_calls(a.calls, False, None))
    wrapped = asyncio.run(_calls(a.calls, True, None))
    timed = asyncio.run(_calls(a.calls, True, 30.0))
    print(f"samples per step: {a.samples} (10 % FAILED)")
    print(f"failure_metrics + too_many_failed per step: {per_step * 1e3:.2f} ms")
    print(f"hook call, awaited directly: {direct * 1e6:.1f} us")
    print(f"hook call through call_hook: {wrapped * 1e6:.1f} us "
          f"(+{(wrapped - direct) * 1e6:.1f} us)")
    print(f"hook call through call_hook with a timeout: {timed * 1e6:.1f} us "
          f"(+{(timed - direct) * 1e6:.1f} us)")


if __name__ == "__main__":
    main()
