"""vime.contract.checks.enforced on exact findings: require, the buffer's groups (VIM102,
VIM103), the rewards conversion reads (VIM110), conversion's own checks (VIM108, VIM112,
VIM113, VIM103, VIM115) with FAILED samples among them, and VIM165 on a sync hook's awaitable."""

from __future__ import annotations

import inspect

import pytest
from runtime_helpers import make_groups

from vime.contract.checks.enforced import (
    awaitable_result_problems,
    buffer_groups_problems,
    conversion_problems,
    require,
    reward_value_problems,
)
from vime.contract.errors import ContractError, Violation
from vime.rollout.failures import mark_failed

pytestmark = pytest.mark.unit

_BUFFER = ("the buffer takes list[list[Sample]] (one list per prompt group), which are "
           "generated again")


def _rows(found):
    return [(v.id, v.severity, v.where) for v in found]


def _flat(**overrides):
    samples = [s for group in make_groups() for s in group]
    for name, value in overrides.items():
        for s in samples:
            setattr(s, name, value)
    return samples


def _convert(samples, keys=None, n=4, **kwargs):
    keys = list(range(len(samples))) if keys is None else keys
    return conversion_problems(samples, keys, n_samples_per_prompt=n, reward_key=None, **kwargs)


# ---- require ---------------------------------------------------------------------------------

def test_require_raises_the_errors_only():
    warning = Violation("VIM117", "warning", "samples", "are all equal")
    error = Violation("VIM108", "error", "samples[0].loss_mask", "is wrong")
    require([warning])
    require([])
    with pytest.raises(ContractError) as info:
        require([warning, error])
    assert info.value.violations == [error]


# ---- buffer_groups_problems ------------------------------------------------------------------

def test_buffer_valid_groups():
    assert buffer_groups_problems(make_groups(), 4, root="add_samples: samples") == []


@pytest.mark.parametrize("group_index", [True, False])
def test_buffer_rejects_a_flat_list(group_index):
    samples = _flat() if group_index else _flat(group_index=None)
    found = buffer_groups_problems(samples, 4, root="add_samples: samples")
    assert _rows(found) == [("VIM102", "error", "add_samples: samples")]
    assert found[0].message == f"holds a flat list of Samples; {_BUFFER}"


def test_buffer_rejects_fan_out_lists():
    fan_out = [[[s] for s in group] for group in make_groups()]
    found = buffer_groups_problems(fan_out, 4, root="buf")
    assert _rows(found) == [("VIM102", "error", "buf")]
    assert found[0].message == f"holds fan-out lists (depth 3); {_BUFFER}"


def test_buffer_rejects_uneven_groups_and_bad_leaves():
    assert _rows(buffer_groups_problems(make_groups(n=3), 4, root="buf")) == [
        ("VIM103", "error", "buf[0]"), ("VIM103", "error", "buf[1]")]
    assert _rows(buffer_groups_problems(make_groups(n=3), 3, root="buf")) == []
    assert _rows(buffer_groups_problems([[1]], 4, root="buf")) == [
        ("VIM102", "error", "buf[0][0]")]


# ---- reward_value_problems -------------------------------------------------------------------

def test_reward_value_problems_first_bad_reward_only():
    samples = _flat()
    samples[2].reward = {"acc": 1.0}
    samples[5].reward = float("nan")
    (found,) = reward_value_problems(samples, None)
    assert (found.id, found.severity, found.where) == ("VIM110", "error",
                                                       "samples[2].reward (index=2)")
    assert found.message == "is a dict with keys ['acc'] but --reward-key is not set"
    assert found.fix == "pass --reward-key naming one of ['acc']"
    (keyed,) = reward_value_problems(samples, "acc")
    assert (keyed.where, keyed.message, keyed.fix) == (
        "samples[5].reward (index=5)", "is nan, expected a finite real",
        "store a finite float (check for division by zero, NaN or inf)")
    samples[0].reward = {"b": 1.0}
    (missing,) = reward_value_problems(samples, "acc")
    assert (missing.where, missing.fix) == (
        "samples[0].reward (index=0)",
        "store 'acc' in every reward dict, or pass --reward-key naming one of ['b']")


def test_reward_value_problems_warnings_pass():
    samples = _flat()
    samples[0].reward = True
    assert reward_value_problems(samples, None) == []


def test_reward_value_problems_skip_failed_samples():
    samples = _flat()
    mark_failed(samples[1], "reward", ValueError("judge down"), 1.0)
    assert samples[1].reward is None
    assert reward_value_problems(samples, None) == []
    samples[6].reward = None
    assert _rows(reward_value_problems(samples, None)) == [
        ("VIM110", "error", "samples[6].reward (index=6)")]


# ---- conversion_problems ---------------------------------------------------------------------

def test_conversion_valid_batch():
    assert _convert(_flat()) == []


def test_conversion_loss_masks_of_failed_samples_are_not_checked():
    samples = _flat()
    samples[1].loss_mask = [1]
    mark_failed(samples[3], "reward", ValueError("judge down"), 1.0)
    samples[3].loss_mask = [1]     # conversion zeroes a FAILED sample's mask itself
    assert _rows(_convert(samples)) == [("VIM108", "error", "samples[1].loss_mask (index=1)")]


def test_conversion_rewards_flag():
    samples = _flat()
    samples[4].reward = None
    assert _rows(_convert(samples)) == [("VIM110", "error", "samples[4].reward (index=4)")]
    assert _convert(samples, rewards=False) == []


def test_conversion_optional_columns_leave_failed_samples_out():
    samples = _flat()
    samples[2].rollout_log_probs = None
    assert _rows(_convert(samples)) == [
        ("VIM112", "error", "samples[2].rollout_log_probs (index=2)")]
    mark_failed(samples[2], "generate", ValueError("engine down"), 1.0)
    assert _convert(samples) == []


def test_conversion_mixed_group_index_is_vim113_alone():
    samples = _flat()
    samples[3].group_index = None
    found = _convert(samples, n=3)
    assert _rows(found) == [("VIM113", "error", "samples[3].group_index (index=3)")]
    assert found[0].message == "is None but 7 of 8 samples have a group_index (all or none)"
    assert _convert(samples, n=3, grouped=False) == []


def test_conversion_group_sizes_only_without_group_index():
    # with a group_index on every sample the groups are the prompts', whatever their size
    assert _convert(_flat(), n=3) == []
    samples = _flat(group_index=None)
    found = _convert(samples, n=3)
    assert _rows(found) == [("VIM103", "error",
                             "rollouts[6:8] (no group_index: positional groups)")]
    assert found[0].message.startswith("has 2 samples, expected n_samples_per_prompt=3")
    assert _convert(samples, n=4) == []
    assert _convert(samples, n=3, grouped=False) == []


def test_conversion_segments_of_one_rollout_agree():
    samples = _flat()
    keys = [0, 0, 1, 1, 2, 2, 3, 3]    # two segments per rollout
    for a, b in zip(samples[::2], samples[1::2], strict=True):
        b.reward = a.reward
    assert _convert(samples, keys, n=2) == []
    samples[5].reward = 9.0
    found = _convert(samples, keys, n=2)
    assert _rows(found) == [("VIM115", "error", "samples[5].reward (index=5)")]
    assert found[0].message.startswith("is 9.0 but its sibling samples[4] has 0.0")


def test_conversion_needs_one_key_per_sample():
    with pytest.raises(ValueError):
        _convert(_flat(), keys=[0, 1, 2])


# ---- awaitable_result_problems ---------------------------------------------------------------

def test_awaitable_result_problems():
    async def hook_result() -> bool:
        return True

    coro = hook_result()
    found = awaitable_result_problems(coro, "--dynamic-sampling-filter-path", "my_pkg.f")
    assert _rows(found) == [("VIM165", "error", "my_pkg.f result")]
    assert found[0].message == "--dynamic-sampling-filter-path `my_pkg.f` returned a coroutine"
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
    assert awaitable_result_problems(True, "--dynamic-sampling-filter-path", "my_pkg.f") == []
