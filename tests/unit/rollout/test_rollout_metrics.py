"""The metrics of a train rollout step (``vime.rollout.rollout_metrics``): the built-ins every
rollout gets and the default rollout's own figures, one set of names; pure computation."""

from __future__ import annotations

import math
from argparse import Namespace

import pytest

from vime.contract.checks.batch import check_metrics
from vime.rollout.rollout_metrics import (
    BUILTIN_ROLLOUT_METRICS,
    PREFIX,
    BusyClock,
    rollout_metrics,
    rollout_step_metrics,
)
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _sample(index: int, length: int, reward: object, status: Sample.Status) -> Sample:
    s = Sample(index=index, group_index=index // 2, tokens=[1, 2] + [3] * length,
               response_length=length, reward=reward, status=status)  # type: ignore[arg-type]
    return s


def test_busy_clock_counts_the_union_of_overlapping_intervals():
    now = FakeClock()
    clock = BusyClock(now=now)
    clock.enter()              # [100, 104] and [101, 103] overlap: 4 s, not 6 s
    now.t = 101.0
    clock.enter()
    now.t = 103.0
    clock.exit()
    now.t = 104.0
    clock.exit()
    assert clock.total() == 4.0
    now.t = 110.0              # idle time does not count
    with clock.busy():
        now.t = 111.5
        assert clock.total() == 5.5    # a running activity counts up to now
    now.t = 120.0
    assert clock.total() == 5.5


def test_busy_clock_exit_on_error_and_unmatched_exit():
    now = FakeClock()
    clock = BusyClock(now=now)
    with pytest.raises(KeyError), clock.busy():
        now.t = 102.0
        raise KeyError("boom")
    assert clock.total() == 2.0
    with pytest.raises(RuntimeError, match="exit\\(\\) without a matching enter"):
        clock.exit()


def test_builtin_metrics_values():
    done, trunc = Sample.Status.COMPLETED, Sample.Status.TRUNCATED
    samples = [_sample(0, 4, 1.0, done), _sample(1, 10, 0.0, trunc),
               _sample(2, 6, 1.0, done), _sample(3, 8, 0.0, trunc)]
    m = rollout_metrics(Namespace(reward_key=None), samples, rollout_time=2.0)
    assert m == {
        "rollout/raw_reward": 0.5, "rollout/raw_reward_std": 0.5,
        "rollout/response_len/mean": 7.0, "rollout/response_len/max": 10.0,
        "rollout/response_len/min": 4.0, "rollout/truncated_ratio": 0.5,
        "rollout/num_samples": 4.0, "rollout/response_tokens": 28.0, "perf/tokens_per_s": 14.0,
    }
    assert set(m) <= set(BUILTIN_ROLLOUT_METRICS)


def test_builtin_metrics_dict_rewards_and_unreadable_rewards():
    done = Sample.Status.COMPLETED
    a, b = _sample(0, 2, {"acc": 1.0, "fmt": 0.5}, done), _sample(1, 4, {"acc": 0.0}, done)
    m = rollout_metrics(Namespace(reward_key="acc"), [a, b], rollout_time=1.0)
    assert m["rollout/raw_reward"] == 0.5 and m["rollout/raw_reward_std"] == 0.5
    # a reward that cannot be read: the reward figures are left out, the rest is reported
    c = _sample(2, 6, None, Sample.Status.ABORTED)
    m = rollout_metrics(Namespace(reward_key="acc"), [a, b, c], rollout_time=1.0)
    assert "rollout/raw_reward" not in m and "rollout/raw_reward_std" not in m
    assert m["rollout/num_samples"] == 3.0 and m["rollout/response_len/mean"] == 4.0
    m = rollout_metrics(Namespace(reward_key=None), [a], rollout_time=1.0)
    assert "rollout/raw_reward" not in m


def test_builtin_metrics_empty_step_is_all_finite():
    m = rollout_metrics(Namespace(reward_key=None), [], rollout_time=0.0)
    assert all(math.isfinite(v) for v in m.values())
    assert m["rollout/raw_reward"] == 0.0 and m["perf/tokens_per_s"] == 0.0


def test_step_metrics_values():
    m = rollout_step_metrics(wall_s=2.0, generated_tokens=50, generation_busy_s=1.5,
                             reward_busy_s=0.25, recycled_groups=3)
    assert all(k.startswith(PREFIX) for k in m)
    get = {k[len(PREFIX):]: v for k, v in m.items()}
    assert get == {
        "generated_tokens": 50.0, "generated_tokens_per_s": 25.0, "wall_time_s": 2.0,
        "generation_time_s": 1.5, "reward_time_s": 0.25, "recycled_groups": 3.0,
    }
    # the manager's runtime check accepts them (VIM119: qualified keys, finite numbers, and no
    # clash with a built-in)
    assert check_metrics(m, builtin_keys=BUILTIN_ROLLOUT_METRICS) == []


def test_default_rollout_metrics_do_not_repeat_the_builtins():
    """One name per figure: the default rollout reports none of the built-in figures again."""
    own = {k[len(PREFIX):] for k in rollout_step_metrics(
        wall_s=1.0, generated_tokens=1, generation_busy_s=0.0, reward_busy_s=0.0)}
    builtin = {k.split("/", 1)[1] for k in BUILTIN_ROLLOUT_METRICS}
    for name in own:
        assert name not in builtin and name.split("/")[0] not in {
            "samples", "num_samples", "response_length", "response_len", "truncated_ratio",
            "reward_mean", "raw_reward", "response_tokens"}


def test_step_metrics_empty_step_is_all_finite():
    m = rollout_step_metrics(wall_s=0.0, generated_tokens=0, generation_busy_s=0.0,
                             reward_busy_s=0.0)
    assert all(math.isfinite(v) for v in m.values())
    assert m[PREFIX + "generated_tokens_per_s"] == 0.0 and m[PREFIX + "recycled_groups"] == 0.0
    assert check_metrics(m) == []


@pytest.mark.parametrize("name, value", [("wall_s", -1.0), ("generated_tokens", math.nan),
                                         ("reward_busy_s", math.inf), ("recycled_groups", -1)])
def test_step_metrics_rejects_bad_durations(name, value):
    kwargs = dict(wall_s=1.0, generated_tokens=1, generation_busy_s=0.0, reward_busy_s=0.0)
    kwargs[name] = value
    with pytest.raises(ValueError, match=f"rollout_step_metrics: {name}=.*expected a finite"):
        rollout_step_metrics(**kwargs)


def test_logging_utils_reexports_the_builtins():
    from vime.utils import logging_utils

    assert logging_utils.rollout_metrics is rollout_metrics
    assert logging_utils.BUILTIN_ROLLOUT_METRICS is BUILTIN_ROLLOUT_METRICS
