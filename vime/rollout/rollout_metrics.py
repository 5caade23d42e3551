"""The metrics of one train rollout step, in one place: the built-ins every rollout function
gets, and the default rollout's own figures. Pure functions plus one small clock; no I/O.

Usage::

    # the RolloutManager, after every train rollout (any --rollout-function-path):
    metrics.update(rollout_metrics(args, flat_samples, rollout_time=12.3))
    metrics["rollout/raw_reward"]                               # 0.42

    # the default rollout (vime.rollout.vllm_rollout), inside its train step:
    gen_clock, rm_clock = BusyClock(), BusyClock()
    with gen_clock.busy():                       # around every generate call (concurrent is fine)
        ...
    metrics = rollout_step_metrics(wall_s=12.3, generated_tokens=5632,
                                   generation_busy_s=gen_clock.total(),
                                   reward_busy_s=rm_clock.total(), recycled_groups=0)
    metrics["rollout/vllm_rollout/generated_tokens_per_s"]     # 457.9

Metric names are fully qualified (docs/contract.md §3); ``rollout/<name>`` and ``perf/`` are the
manager's, a rollout function's own metrics are ``rollout/<module>/<name>`` (VIM119).

Built-ins (:func:`rollout_metrics`; the manager sets them on every train step from the flat
samples the rollout function returned, unless a ``--custom-rollout-log-function-path`` returns
True; :data:`BUILTIN_ROLLOUT_METRICS` lists them for the VIM119 clash check):

- ``rollout/raw_reward``, ``rollout/raw_reward_std``: mean and population standard deviation
  (``ddof=0``) of the scalar rewards (``Sample.get_reward_value``); both absent when a reward
  cannot be read as a number (the conversion reports it; logging does not repeat it).
- ``rollout/response_len/mean``, ``/max``, ``/min``: response tokens per sample (tokens).
- ``rollout/truncated_ratio``: fraction of samples with status TRUNCATED.
- ``rollout/num_samples``: samples (fan-out segments count one each).
- ``rollout/response_tokens``: response tokens of all samples (tokens).
- ``perf/tokens_per_s``: ``response_tokens`` per second of the rollout function's time.
- ``rollout/failed/count``, ``rollout/failed/ratio`` (over ``rollout/num_samples``) and
  ``rollout/failed/<hook>/<ExceptionType>`` (counts): FAILED samples of the step
  (``--hook-failure fail-sample``; ``vime.rollout.failures.failure_metrics``), whenever that
  policy is on or any sample failed. ``rollout/raw_reward`` and its std leave FAILED samples out.
- ``rollout/staleness/min``, ``/max``, ``/mean``: how many weight versions behind the step's
  newest weights each sample's oldest tokens are: ``newest - oldest(sample)``, where
  ``oldest(sample)`` is the lowest numeric entry of its ``weight_versions`` and ``newest`` the
  highest over the step (weight versions). 0 when every sample was generated with the same
  weights; larger with ``--partial-rollout`` (recycled samples keep their old versions) or
  off-policy engines. Over the samples with numeric versions only; all three absent when none
  has one (vLLM reports ``"default"`` unless told a version). VIM126 warns when only some
  samples carry versions.
- set by the manager and the train loop themselves: ``perf/rollout_time``,
  ``perf/contract_check_time``, ``perf/step_time``, ``perf/weight_sync_time`` (seconds).

The default rollout's own (:func:`rollout_step_metrics`, prefix :data:`PREFIX`), what only the
rollout can see:

- ``rollout/vllm_rollout/generated_tokens``: tokens the engines generated this step, counted
  per engine response, including groups later dropped by the dynamic filter and drained by the
  abort (tokens).
- ``rollout/vllm_rollout/generated_tokens_per_s``: ``generated_tokens / wall_time_s``.
- ``rollout/vllm_rollout/wall_time_s``: wall-clock seconds of the step.
- ``rollout/vllm_rollout/generation_time_s`` / ``reward_time_s``: wall-clock seconds during
  which at least one generate call / one reward call was running (the union of their
  intervals, so concurrent calls are not double-counted; the two overlap when generation and
  scoring run side by side).
- ``rollout/vllm_rollout/failed_groups_dropped``: groups whose samples all FAILED, dropped and
  replaced by the train loop (present only when there were some).
- ``rollout/vllm_rollout/engine_retries``: generate requests retried through the router
  because no engine answered (``--rollout-engine-retry-secs``).
- ``rollout/vllm_rollout/watchdog_reports``: 1 when the step ran past
  ``--rollout-watchdog-secs`` and the watchdog logged its pending calls, else 0 (present only
  with the watchdog on).
- ``rollout/vllm_rollout/recycled_groups``: groups handed back to the data source for the next
  step (``--partial-rollout``).
- ``rollout/dynamic_filter/drop_<reason>``: groups the ``--dynamic-sampling-filter-path``
  dropped, per reason (set by the train loop).
- eval steps: ``eval/vllm_rollout/generate_time_s`` (seconds).
"""

from __future__ import annotations

import contextlib
import math
import time
from argparse import Namespace
from collections.abc import Callable, Iterator, Sequence

from vime.contract.errors import ContractError
from vime.rollout.failures import fail_sample, failure_metrics
from vime.utils.types import Sample

__all__ = ["BUILTIN_ROLLOUT_METRICS", "PREFIX", "BusyClock", "numeric_versions", "rollout_metrics",
           "rollout_step_metrics", "staleness_metrics"]

#: The qualified prefix of the default rollout's own metrics.
PREFIX = "rollout/vllm_rollout/"
#: Keys the manager sets on every train step (a user metric with one of these names clashes).
BUILTIN_ROLLOUT_METRICS = ("rollout/raw_reward", "rollout/raw_reward_std",
                           "rollout/response_len/mean", "rollout/response_len/max",
                           "rollout/response_len/min", "rollout/truncated_ratio",
                           "rollout/num_samples", "rollout/response_tokens",
                           "rollout/staleness/min", "rollout/staleness/max",
                           "rollout/staleness/mean", "perf/tokens_per_s",
                           "perf/rollout_time", "perf/contract_check_time", "perf/step_time",
                           "perf/weight_sync_time", "rollout/failed/count",
                           "rollout/failed/ratio")


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


def _mean(xs: Sequence[float]) -> float:
    return float(sum(xs) / len(xs)) if xs else 0.0


def numeric_versions(sample: Sample) -> list[int]:
    """The entries of ``weight_versions`` that read as ints (``"default"`` does not)."""
    out: list[int] = []
    for version in sample.weight_versions or ():
        try:
            out.append(int(version))
        except (TypeError, ValueError):
            continue
    return out


def staleness_metrics(samples: Sequence[Sample]) -> dict[str, float]:
    """``rollout/staleness/{min,max,mean}`` of one step (see the module docstring); ``{}`` when
    no sample has a numeric weight version."""
    spans = [versions for versions in map(numeric_versions, samples) if versions]
    if not spans:
        return {}
    newest = max(max(versions) for versions in spans)
    ages = [float(newest - min(versions)) for versions in spans]
    return {"rollout/staleness/min": min(ages), "rollout/staleness/max": max(ages),
            "rollout/staleness/mean": _mean(ages)}


def rollout_metrics(args: Namespace, samples: Sequence[Sample], rollout_time: float
                    ) -> dict[str, float]:
    """The built-in metrics of a train rollout (see the module docstring for the keys).

    Args:
        args: the run's namespace (``reward_key`` is read).
        samples: the flat samples of the step (``flatten_samples`` of the output).
        rollout_time: seconds the rollout function took (``perf/tokens_per_s``).

    Returns:
        ``{key: float}``; empty lists give 0.0.
    """
    lengths = [float(s.response_length) for s in samples]
    out: dict[str, float] = {
        "rollout/response_len/mean": _mean(lengths),
        "rollout/response_len/max": max(lengths, default=0.0),
        "rollout/response_len/min": min(lengths, default=0.0),
        "rollout/truncated_ratio": _mean([float(s.status == Sample.Status.TRUNCATED)
                                          for s in samples]),
        "rollout/num_samples": float(len(samples)),
        "rollout/response_tokens": sum(lengths),
        "perf/tokens_per_s": sum(lengths) / rollout_time if rollout_time > 0 else 0.0,
    }
    out.update(staleness_metrics(samples))
    failed = any(s.status is Sample.Status.FAILED for s in samples)
    if failed or fail_sample(args):
        out.update(failure_metrics(samples))
    try:
        rewards = [float(s.get_reward_value(args)) for s in samples
                   if s.status is not Sample.Status.FAILED]
    except (ContractError, TypeError, ValueError):
        return out  # conversion raises with the full message; logging does not duplicate it
    mean = _mean(rewards)
    out["rollout/raw_reward"] = mean
    out["rollout/raw_reward_std"] = math.sqrt(_mean([(r - mean) ** 2 for r in rewards]))
    return out


def rollout_step_metrics(*, wall_s: float, generated_tokens: int, generation_busy_s: float,
                         reward_busy_s: float, recycled_groups: int = 0) -> dict[str, float]:
    """The default rollout's own metrics of one train step (see the module docstring for keys).

    Args:
        wall_s: the step's wall-clock seconds (>= 0).
        generated_tokens: tokens the engines generated during the step (>= 0).
        generation_busy_s, reward_busy_s: busy seconds from :class:`BusyClock`.
        recycled_groups: groups handed back to the data source (>= 0).

    Returns:
        ``{PREFIX + name: float}``, every value finite.

    Raises:
        ValueError: a negative or non-finite duration or count (names the argument).
    """
    for name, value in (("wall_s", wall_s), ("generated_tokens", generated_tokens),
                        ("generation_busy_s", generation_busy_s),
                        ("reward_busy_s", reward_busy_s), ("recycled_groups", recycled_groups)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"rollout_step_metrics: {name}={value!r}; expected a finite "
                             "number >= 0")
    out = {
        "generated_tokens": float(generated_tokens),
        "generated_tokens_per_s": generated_tokens / wall_s if wall_s > 0 else 0.0,
        "wall_time_s": float(wall_s),
        "generation_time_s": float(generation_busy_s),
        "reward_time_s": float(reward_busy_s),
        "recycled_groups": float(recycled_groups),
    }
    return {PREFIX + k: v for k, v in out.items()}
