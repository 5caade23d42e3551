"""The default rollout's per-step metrics (``vime.rollout.rollout_metrics``): pure computation."""

from __future__ import annotations

import math
from argparse import Namespace

import pytest

from vime.contract.checks.batch import check_metrics
from vime.rollout.rollout_metrics import PREFIX, BusyClock, reward_stats, rollout_step_metrics
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


def test_step_metrics_values():
    done, trunc = Sample.Status.COMPLETED, Sample.Status.TRUNCATED
    groups = [[_sample(0, 4, 1.0, done), _sample(1, 10, 0.0, trunc)],
              [_sample(2, 6, 1.0, done), _sample(3, 8, 0.0, trunc)]]
    m = rollout_step_metrics(groups, Namespace(reward_key=None), wall_s=2.0,
                             generated_tokens=50, generation_busy_s=1.5, reward_busy_s=0.25)
    assert all(k.startswith(PREFIX) for k in m)
    get = {k[len(PREFIX):]: v for k, v in m.items()}
    assert get == {
        "samples": 4.0, "generated_tokens": 50.0, "generated_tokens_per_s": 25.0,
        "wall_time_s": 2.0, "generation_time_s": 1.5, "reward_time_s": 0.25,
        "response_length/mean": 7.0, "response_length/max": 10.0, "response_length/min": 4.0,
        "truncated_ratio": 0.5, "reward_mean": 0.5, "reward_std": 0.5, "unscored_samples": 0.0,
    }
    # the manager's runtime check accepts them (VIM119: qualified keys, finite numbers)
    assert check_metrics(m) == []


def test_step_metrics_fan_out_dict_rewards_and_unscored():
    done = Sample.Status.COMPLETED
    a, b = _sample(0, 2, {"acc": 1.0, "fmt": 0.5}, done), _sample(1, 4, {"acc": 0.0}, done)
    c = _sample(2, 6, None, Sample.Status.ABORTED)
    groups = [[[a, b], [c]]]   # depth 3: a fan-out element, then a single leaf
    m = rollout_step_metrics(groups, Namespace(reward_key="acc"), wall_s=1.0,
                             generated_tokens=12, generation_busy_s=0.0, reward_busy_s=0.0)
    assert m[PREFIX + "samples"] == 3.0
    assert m[PREFIX + "reward_mean"] == 0.5 and m[PREFIX + "unscored_samples"] == 1.0
    assert m[PREFIX + "response_length/mean"] == 4.0
    # without --reward-key a dict reward cannot be read: counted, not averaged
    values, unscored = reward_stats([a, b, c], Namespace(reward_key=None))
    assert values == [] and unscored == 3


def test_step_metrics_empty_step_is_all_finite():
    m = rollout_step_metrics([], Namespace(), wall_s=0.0, generated_tokens=0,
                             generation_busy_s=0.0, reward_busy_s=0.0)
    assert all(math.isfinite(v) for v in m.values())
    assert m[PREFIX + "generated_tokens_per_s"] == 0.0 and m[PREFIX + "reward_std"] == 0.0
    assert check_metrics(m) == []


def test_step_metrics_non_finite_reward_is_unscored():
    s = _sample(0, 3, math.nan, Sample.Status.COMPLETED)
    values, unscored = reward_stats([s], Namespace(reward_key=None))
    assert values == [] and unscored == 1


@pytest.mark.parametrize("name, value", [("wall_s", -1.0), ("generated_tokens", math.nan),
                                         ("reward_busy_s", math.inf)])
def test_step_metrics_rejects_bad_durations(name, value):
    kwargs = dict(wall_s=1.0, generated_tokens=1, generation_busy_s=0.0, reward_busy_s=0.0)
    kwargs[name] = value
    with pytest.raises(ValueError, match=f"rollout_step_metrics: {name}=.*expected a finite"):
        rollout_step_metrics([], Namespace(), **kwargs)
