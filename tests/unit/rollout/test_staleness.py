"""The --max-staleness bound of an overlapped rollout (vime.rollout.staleness)."""

from __future__ import annotations

import pytest

from vime.rollout.staleness import bound_staleness, sample_lag
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def _group(*versions: list[str]) -> list[Sample]:
    return [Sample(index=i, weight_versions=list(v)) for i, v in enumerate(versions)]


def test_lag_is_measured_from_the_oldest_numeric_version():
    assert sample_lag(Sample(weight_versions=["3", "5"]), trainer_version=5) == 2
    assert sample_lag(Sample(weight_versions=["default", "4"]), trainer_version=5) == 1
    assert sample_lag(Sample(weight_versions=["default"]), trainer_version=5) is None
    assert sample_lag(Sample(), trainer_version=5) is None


def test_groups_within_the_bound_all_train():
    groups = [_group(["6"], ["6"]), _group(["7"], ["6", "7"])]
    kept, metrics = bound_staleness(groups, trainer_version=7, max_staleness=1)
    assert kept == groups
    assert metrics == {"rollout/staleness/dropped_groups": 0.0, "rollout/staleness/lag_max": 1.0,
                       "rollout/staleness/lag_mean": 0.75}


def test_a_group_with_one_sample_over_the_bound_is_dropped_whole():
    fresh, recycled = _group(["6"], ["6"]), _group(["6"], ["4", "6"])   # partial rollout
    kept, metrics = bound_staleness([fresh, recycled], trainer_version=7, max_staleness=2)
    assert kept == [fresh]
    assert metrics["rollout/staleness/dropped_groups"] == 1.0
    assert metrics["rollout/staleness/lag_max"] == 3.0


def test_fan_out_groups_and_untagged_samples():
    fan_out = [[Sample(index=0, weight_versions=["2"]), Sample(index=0, weight_versions=["2"])]]
    untagged = _group(["default"])
    kept, metrics = bound_staleness([fan_out, untagged], trainer_version=5, max_staleness=2)
    assert kept == [untagged]
    assert metrics["rollout/staleness/lag_max"] == 3.0
    _, none_tagged = bound_staleness([untagged], trainer_version=5, max_staleness=1)
    assert none_tagged == {"rollout/staleness/dropped_groups": 0.0}


def test_nothing_left_to_train_is_an_error_naming_the_lags():
    with pytest.raises(ValueError, match=r"--max-staleness=1 .*lags \[2, 3\]\); raise "
                       r"--max-staleness or check that weight sync tags the engines' versions$"):
        bound_staleness([_group(["5"]), _group(["4"])], trainer_version=7, max_staleness=1)
