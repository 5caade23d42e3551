"""Per-step metrics of the default rollout: throughput, response lengths, truncation, rewards,
and where the time went. Pure functions plus one small clock; no I/O.

Usage::

    gen_clock, rm_clock = BusyClock(), BusyClock()
    with gen_clock.busy():                       # around every generate call (concurrent is fine)
        ...
    metrics = rollout_step_metrics(kept_groups, args, wall_s=12.3, generated_tokens=5632,
                                   generation_busy_s=gen_clock.total(),
                                   reward_busy_s=rm_clock.total())
    metrics["rollout/vllm_rollout/generated_tokens_per_s"]     # 457.9

Keys (all ``rollout/vllm_rollout/<name>``, CONTRACT.md §3: fully qualified; ``perf/`` is the
manager's reserved prefix, VIM119):

- ``generated_tokens``: tokens the engines generated this step, counted per engine response,
  including groups later dropped by the dynamic filter and drained by the abort (tokens).
- ``generated_tokens_per_s``: ``generated_tokens / wall_time_s`` (tokens per second).
- ``wall_time_s``: wall-clock seconds of the step (seconds).
- ``generation_time_s`` / ``reward_time_s``: wall-clock seconds during which at least one
  generate call / one reward call was running (the union of their intervals, so concurrent calls
  are not double-counted; the two overlap when generation and scoring run side by side).
- ``response_length/mean``, ``/max``, ``/min``: response tokens of the kept samples.
- ``truncated_ratio``: fraction of kept samples with status TRUNCATED.
- ``reward_mean``, ``reward_std``: scalar rewards of the kept samples (``get_reward_value``;
  population standard deviation, ``ddof=0``); samples whose reward cannot be read as a finite
  number (None, a dict without ``--reward-key``) are left out and counted as
  ``unscored_samples`` (the runtime checker reports them; these are log values only).
- ``samples``: kept samples (leaves, fan-out included).

Source: ours (CONTRACT.md §3 for the key rule; §8 for what the default rollout does).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from vime.contract.errors import ContractError
from vime.rollout.base_types import iter_samples
from vime.utils.types import Sample

__all__ = ["PREFIX", "BusyClock", "reward_stats", "rollout_step_metrics"]

#: The qualified prefix of the default rollout's metrics.
PREFIX = "rollout/vllm_rollout/"


class BusyClock:
    """Wall-clock seconds during which at least one of possibly concurrent activities ran.

    O(1) memory: counts active activities and adds the elapsed time whenever the count drops to
    zero (the length of the union of the activities' intervals).

    Usage::

        clock = BusyClock()                 # or BusyClock(now=fake_clock) in tests
        with clock.busy():
            await call()
        clock.total()                       # seconds

    Args:
        now: a monotonic clock in seconds (default ``time.monotonic``).
    """

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._active = 0
        self._since = 0.0
        self._total = 0.0

    def enter(self) -> None:
        """One activity starts."""
        if self._active == 0:
            self._since = self._now()
        self._active += 1

    def exit(self) -> None:
        """One activity ends.

        Raises:
            RuntimeError: more ``exit`` than ``enter`` calls.
        """
        if self._active <= 0:
            raise RuntimeError("BusyClock.exit() without a matching enter()")
        self._active -= 1
        if self._active == 0:
            self._total += self._now() - self._since

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Context manager: ``enter`` on entry, ``exit`` on exit (also on errors)."""
        self.enter()
        try:
            yield
        finally:
            self.exit()

    def total(self) -> float:
        """Busy seconds so far (an activity still running counts up to now)."""
        if self._active:
            return self._total + self._now() - self._since
        return self._total


def reward_stats(samples: Iterable[Sample], args: Any) -> tuple[list[float], int]:
    """``(rewards, unscored)``: the finite scalar rewards of ``samples`` (via
    ``Sample.get_reward_value(args)``) and how many samples had none (None, an unreadable dict,
    a non-finite or non-numeric value)."""
    values: list[float] = []
    unscored = 0
    for s in samples:
        try:
            value = s.get_reward_value(args)
        except ContractError:
            unscored += 1
            continue
        if isinstance(value, (int, float)) and math.isfinite(value):
            values.append(float(value))
        else:
            unscored += 1
    return values, unscored


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def rollout_step_metrics(groups: Iterable[Any], args: Any, *, wall_s: float,
                         generated_tokens: int, generation_busy_s: float,
                         reward_busy_s: float) -> dict[str, float]:
    """The default rollout's metrics of one train step (see the module docstring for keys).

    Args:
        groups: the kept groups, ``list[list[Sample]]`` (or fan-out ``list[list[list[Sample]]]``).
        args: the run's namespace (``reward_key`` is read).
        wall_s: the step's wall-clock seconds (>= 0).
        generated_tokens: tokens the engines generated during the step (>= 0).
        generation_busy_s, reward_busy_s: busy seconds from :class:`BusyClock`.

    Returns:
        ``{key: float}``, every value finite (empty lists give 0.0).

    Raises:
        ValueError: a negative or non-finite duration or token count (names the argument).
    """
    for name, value in (("wall_s", wall_s), ("generated_tokens", generated_tokens),
                        ("generation_busy_s", generation_busy_s),
                        ("reward_busy_s", reward_busy_s)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"rollout_step_metrics: {name}={value!r}; expected a finite "
                             "number >= 0")
    leaves = list(iter_samples(list(groups)))
    lengths = [float(s.response_length) for s in leaves]
    rewards, unscored = reward_stats(leaves, args)
    mean_r = _mean(rewards)
    std_r = math.sqrt(_mean([(r - mean_r) ** 2 for r in rewards])) if rewards else 0.0
    out = {
        "samples": float(len(leaves)),
        "generated_tokens": float(generated_tokens),
        "generated_tokens_per_s": generated_tokens / wall_s if wall_s > 0 else 0.0,
        "wall_time_s": float(wall_s),
        "generation_time_s": float(generation_busy_s),
        "reward_time_s": float(reward_busy_s),
        "response_length/mean": _mean(lengths),
        "response_length/max": max(lengths, default=0.0),
        "response_length/min": min(lengths, default=0.0),
        "truncated_ratio": _mean([float(s.status == Sample.Status.TRUNCATED) for s in leaves]),
        "reward_mean": mean_r,
        "reward_std": std_r,
        "unscored_samples": float(unscored),
    }
    return {PREFIX + k: v for k, v in out.items()}
