"""Boundary checks B2-B4: generate (VIM140, VIM141 and VIM105-VIM111 after generation),
reward functions (VIM150, VIM110), dynamic filter (VIM160), buffer filter (VIM161), sample
hook / reward post-process / convert (VIM162) and awaitables from sync hooks (VIM165)."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import numpy as np
import pytest
from runtime_helpers import _quiet, make_args, make_groups, make_sample

from vime.contract.errors import ContractError
from vime.rollout.filter_hub.base_types import DynamicFilterOutput
from vime.utils.types import Sample
from vime_lint.runtime import (
    check_batch_reward_result,
    check_buffer_filter_result,
    check_convert_result,
    check_dynamic_filter_result,
    check_generate_result,
    check_group_rewards,
    check_reward_post_process_result,
    check_reward_result,
    check_sample_hook_result,
    check_sync_hook_result,
)

pytestmark = pytest.mark.unit

GEN = "my_pkg.gen.generate"
RUNTIME_HOOKS = Path(__file__).resolve().parents[3] / "fixtures" / "runtime_hooks"


def _raises(fn, *args, **kwargs) -> str:
    with _quiet(), pytest.raises(ContractError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def _warn(fn, *args, **kwargs) -> list:
    args[-1].contract_check = "warn"
    with _quiet():
        return fn(*args, **kwargs)


def _fresh() -> Sample:
    return Sample(index=3, group_index=0, prompt="What is 2+3?", label="5")


def _generated() -> Sample:
    s = _fresh()
    s.tokens = [11, 12, 13]
    s.append_response_tokens(None, tokens=[40, 41], log_probs=[-0.1, -0.2],
                             meta_info={"finish_reason": {"type": "stop"}}, text="5")
    return s


# ---- B2 generate ----------------------------------------------------------------------------

def test_vim140_accepts_grown_sample() -> None:
    assert check_generate_result(Sample.Status.PENDING, _generated(), make_args(),
                                 hook_path=GEN, rollout_id=2) == []


def test_vim140_rejects_completed_input() -> None:
    text = _raises(check_generate_result, Sample.Status.COMPLETED, _generated(), make_args(),
                   hook_path=GEN, rollout_id=2)
    assert "VIM140 error: generate input has status COMPLETED" in text
    assert "generate function `my_pkg.gen.generate` (--custom-generate-function-path) step 2" in text
    # the usual cause is a multi-turn generate calling generate again for the next turn
    assert ("fix: for the next turn of a multi-turn generate, set sample.status = "
            "Sample.Status.PENDING before calling generate again") in text


def test_vim140_rejects_stale_response_without_partial_rollout() -> None:
    text = _raises(check_generate_result, Sample.Status.ABORTED, _generated(), make_args(),
                   hook_path=GEN, in_response_length=2)
    assert "generate input already has response_length=2 without --partial-rollout" in text
    assert check_generate_result(Sample.Status.ABORTED, _generated(),
                                 make_args(partial_rollout=True), in_response_length=2) == []


def test_vim140_rejects_none_and_empty_list() -> None:
    assert "VIM140 error: generate result is None (NoneType)" in _raises(
        check_generate_result, Sample.Status.PENDING, None, make_args(), hook_path=GEN)
    assert "generate result is an empty list" in _raises(
        check_generate_result, Sample.Status.PENDING, [], make_args(), hook_path=GEN)


def test_vim140_rejects_unawaited_coroutine() -> None:
    async def inner() -> Sample:
        return _generated()

    coro = inner()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a never-awaited coroutine would warn
        text = _raises(check_generate_result, Sample.Status.PENDING, coro, make_args())
    assert "generate result is a coroutine (an inner call was not awaited)" in text


def test_b2_checks_fields_of_returned_sample() -> None:
    text = _raises(check_generate_result, Sample.Status.PENDING, _fresh(), make_args(),
                   hook_path=GEN)
    assert "VIM106 error: generate result.tokens (index=3) is empty" in text
    found = _warn(check_generate_result, Sample.Status.PENDING, _fresh(), make_args())
    assert {"VIM106", "VIM107", "VIM111"} <= {v.id for v in found}


def test_b2_allows_empty_aborted_result_and_missing_reward() -> None:
    s = _fresh()
    s.tokens, s.status = [11, 12], Sample.Status.ABORTED
    assert check_generate_result(Sample.Status.PENDING, s, make_args()) == []


def test_b2_checks_fan_out_list() -> None:
    a, b = _generated(), _generated()
    a.rollout_id, b.rollout_id = 1, 2
    text = _raises(check_generate_result, Sample.Status.PENDING, [a, b], make_args())
    assert "VIM115 error: generate result[1].rollout_id (index=3) is 2 but its sibling" in text
    b.rollout_id = 1
    assert check_generate_result(Sample.Status.PENDING, [a, b], make_args()) == []


def test_vim141_warns_reward_preset_with_rm_configured() -> None:
    s = _generated()
    s.reward = 1.0
    found = _warn(check_generate_result, Sample.Status.PENDING, s,
                  make_args(custom_rm_path="my_pkg.rm.reward"))
    assert [(v.id, v.severity, v.where) for v in found] == [
        ("VIM141", "warning", "generate result.reward (index=3)")]
    assert check_generate_result(Sample.Status.PENDING, s, make_args()) == []


# ---- B3 reward ------------------------------------------------------------------------------

def test_vim150_rejects_none_reward() -> None:
    text = _raises(check_reward_result, None, make_args(), hook_path="my_pkg.rm.f", index=4)
    assert "VIM150 error: reward function result (index=4) is None" in text
    assert "reward function `my_pkg.rm.f` (--custom-rm-path)" in text


def test_vim150_reward_values_follow_vim110() -> None:
    text = _raises(check_reward_result, "1.0", make_args())
    assert "VIM110 error: reward function result is '1.0' (str), expected a finite real" in text
    assert "fix: return a number, not a str: compare the parsed answer and return 1.0 / 0.0" in text
    assert "division by zero" not in text and "NaN" not in text
    text = _raises(check_reward_result, {"acc": "yes"}, make_args(reward_key="acc"))
    assert "fix: return a number, not a str" in text
    text = _raises(check_reward_result, float("nan"), make_args())
    assert "fix: store a finite float (check for division by zero, NaN or inf)" in text
    text = _raises(check_reward_result, {"acc": 1.0}, make_args())
    assert "VIM110 error: reward function result is a dict with keys ['acc']" in text
    assert check_reward_result({"acc": 1.0}, make_args(reward_key="acc")) == []
    assert check_reward_result(0.5, make_args()) == []


def test_vim150_uses_eval_reward_key_in_eval() -> None:
    args = make_args(reward_key="train", eval_reward_key="acc")
    assert check_reward_result({"acc": 1.0}, args, evaluation=True) == []


def test_vim150_rejects_wrong_batch_length() -> None:
    samples = make_groups()[0]
    text = _raises(check_batch_reward_result, [1.0, 0.0], samples, make_args())
    assert "VIM150 error: batch reward function result has 2 rewards for 4 samples" in text


def test_vim150_rejects_string_and_dict_batch() -> None:
    samples = make_groups()[0]
    assert "is '1010' (str)" in _raises(check_batch_reward_result, "1010", samples, make_args())
    assert "is a dict" in _raises(check_batch_reward_result, {0: 1.0}, samples, make_args())


def test_vim150_checks_each_batch_item() -> None:
    samples = make_groups()[0]
    text = _raises(check_batch_reward_result, [1.0, None, 0.0, 1.0], samples, make_args())
    assert "VIM110 error: batch reward function result[1] (index=1) is None" in text


def test_vim150_accepts_batch_of_rewards() -> None:
    samples = make_groups()[0]
    assert check_batch_reward_result((1.0, 0.0, 1.0, 0.0), samples, make_args()) == []
    assert check_batch_reward_result(np.array([1.0, 0.0, 1.0, 0.0]), samples, make_args()) == []


# ---- B4 dynamic filter ----------------------------------------------------------------------

def test_vim160_rejects_none() -> None:
    text = _raises(check_dynamic_filter_result, None, make_args(), hook_path="my_pkg.f.keep")
    assert "VIM160 error: my_pkg.f.keep result is None, which would drop every group" in text


def test_vim160_rejects_ambiguous_truth_value() -> None:
    text = _raises(check_dynamic_filter_result, np.array([1, 0]), make_args())
    assert "without a clear truth value" in text


def test_vim160_warns_bare_bool() -> None:
    found = _warn(check_dynamic_filter_result, True, make_args())
    assert [(v.id, v.severity) for v in found] == [("VIM160", "warning")]
    assert "wrapped as DynamicFilterOutput(keep=True)" in found[0].message


def test_vim160_accepts_filter_output() -> None:
    assert check_dynamic_filter_result(DynamicFilterOutput(keep=False, reason="x"),
                                       make_args()) == []


def test_vim110_checked_before_dynamic_filter() -> None:
    group = make_groups()[0]
    group[2].reward = None
    text = _raises(check_group_rewards, group, make_args(), hook_path="my_pkg.f.keep")
    assert "VIM110 error: group[2].reward (index=2) is None" in text
    assert check_group_rewards(make_groups()[0], make_args()) == []


def test_vim165_rejects_coroutine_from_sync_filter() -> None:
    async def keep() -> bool:
        return True

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = _raises(check_dynamic_filter_result, keep(), make_args(), hook_path="m.keep")
    assert ("VIM165 error: m.keep result --dynamic-sampling-filter-path `m.keep` returned a "
            "coroutine") in text


def test_vim165_generic_sync_hook() -> None:
    async def hook() -> None:
        return None

    text = _raises(check_sync_hook_result, hook(), make_args(),
                   hook="rollout_all_samples_process_path", hook_path="m.h")
    assert "--rollout-all-samples-process-path `m.h` returned a coroutine" in text
    assert check_sync_hook_result(None, make_args(), hook="rollout_all_samples_process_path") == []


# ---- B4 buffer filter -----------------------------------------------------------------------

def test_vim161_rejects_groups_left_in_buffer() -> None:
    buffer = make_groups(groups=3)
    result = buffer[:1]                                 # returned but not popped
    text = _raises(check_buffer_filter_result, result, buffer, 1, make_args(), hook_path="m.bf")
    assert "VIM161 error: m.bf result[0] is still in the buffer" in text


def test_vim161_rejects_too_many_groups() -> None:
    buffer = make_groups(groups=3)
    result = [buffer.pop(0), buffer.pop(0)]
    text = _raises(check_buffer_filter_result, result, buffer, 1, make_args())
    assert "has 2 groups, more than num_samples=1" in text


def test_vim161_accepts_popped_groups() -> None:
    buffer = make_groups(groups=3)
    result = [buffer.pop(0)]
    assert check_buffer_filter_result(result, buffer, 2, make_args()) == []


# ---- B4 sample hook, reward post-process, convert -------------------------------------------

def test_vim162_sample_hook() -> None:
    assert "VIM162 error: m.hook result is a dict" in _raises(
        check_sample_hook_result, {"reward": 1}, make_args(), hook_path="m.hook")
    assert check_sample_hook_result(None, make_args()) == []
    assert check_sample_hook_result(make_sample(), make_args()) == []


def test_vim162_reward_post_process() -> None:
    samples = make_groups()[0]
    text = _raises(check_reward_post_process_result, ([1.0] * 4, [0.5] * 3), samples,
                   make_args(), hook_path="m.pp")
    assert "VIM162 error: m.pp result[1] (rewards) has 3 values for 4 samples" in text
    assert "is a list of 4 item(s), expected a pair" in _raises(
        check_reward_post_process_result, [1.0] * 4, samples, make_args())
    assert check_reward_post_process_result(([1.0] * 4, [0.5] * 4), samples, make_args()) == []


def test_vim162_convert() -> None:
    samples = make_groups()[0]
    good = {k: [0] * 4 for k in ("tokens", "response_lengths", "rewards", "raw_reward",
                                 "truncated", "sample_indices", "loss_masks")}
    assert check_convert_result(good, samples, make_args()) == []
    bad = dict(good)
    del bad["loss_masks"]
    bad["rewards"] = [0.0]
    text = _raises(check_convert_result, bad, samples, make_args(), hook_path="m.conv")
    assert "VIM162 error: m.conv result is missing 'loss_masks'" in text
    assert "m.conv result['rewards'] has 1 values, expected one per sample: 4" in text


def test_boundaries_respect_off_and_interval() -> None:
    assert check_reward_result(None, make_args(contract_check="off")) == []
    args = make_args(contract_check_interval=3)
    assert check_reward_result(None, args, rollout_id=4) == []
    with pytest.raises(ContractError):
        check_reward_result(None, args, rollout_id=6)


def test_async_reward_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """B3 as the default rollout runs it: ``async_rm`` loads the ``--custom-rm-path`` async
    function (the reference fixtures), awaits it, and ``check_reward_result`` judges the result."""
    from vime.rollout.rm_hub import async_rm

    monkeypatch.syspath_prepend(str(RUNTIME_HOOKS))
    good = make_args(custom_rm_path="vime_ref_good.reward_func")
    value = asyncio.run(async_rm(good, _generated()))
    assert value == 1.0  # response "5" == label "5"
    assert check_reward_result(value, good, hook_path=good.custom_rm_path) == []
    wrong = _generated()
    wrong.label = "6"
    assert asyncio.run(async_rm(good, wrong)) == 0.0
    broken = make_args(custom_rm_path="vime_ref_broken.reward_none")
    value = asyncio.run(async_rm(broken, _generated()))
    assert value is None  # the coroutine fell off its end
    text = _raises(check_reward_result, value, broken, hook_path=broken.custom_rm_path,
                   rollout_id=3, index=3)
    assert "VIM150 error: reward function result (index=3) is None" in text
    assert "reward function `vime_ref_broken.reward_none` (--custom-rm-path) step 3" in text


def test_vim140_rule_text_names_the_next_turn_fix() -> None:
    # `vime-lint rule VIM140` (the invariant's own fix) says what the finding says
    from vime.contract.invariants import INVARIANTS

    assert ("before the next turn of a multi-turn generate, set sample.status = "
            "Sample.Status.PENDING") in INVARIANTS["VIM140"].fix
    doc = (Path(__file__).resolve().parents[4] / "docs" / "en" / "get_started" /
           "customization.md").read_text()
    assert "before the next turn set `sample.status =\n  Sample.Status.PENDING`" in doc
