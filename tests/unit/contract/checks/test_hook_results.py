"""vime.contract.checks.hook_results on exact findings (id, severity, where, text) at B2-B4:
generate's entry and result (VIM140, VIM141), reward results one by one and in batches (VIM150,
VIM110), a finished group's rewards, the dynamic and buffer filters (VIM160, VIM161), sample
hooks, reward post-process and convert (VIM162), and awaitables returned by sync hooks
(VIM165, closed)."""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest
from runtime_helpers import make_args, make_groups, make_sample

import vime.contract.checks.hook_results as h
from vime.contract.checks.settings import CheckSettings
from vime.contract.hooks import CONVERT_REQUIRED_KEYS
from vime.rollout.filter_hub.base_types import DynamicFilterOutput
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

_GEN = "expected a Sample or a non-empty list of Samples"
_STATUS = ("generate takes PENDING or ABORTED samples (finished samples must not be generated "
           "again)")


def _s(**values) -> CheckSettings:
    return CheckSettings.from_args(make_args(**values))


def _rows(found):
    return [(v.id, v.severity, v.where, v.message) for v in found]


async def _coro() -> None:
    return None


class _Awaitable:
    def __await__(self):
        yield


# ---- generate (B2) -------------------------------------------------------------------------

def test_generate_entry_status():
    for status in (Sample.Status.PENDING, Sample.Status.ABORTED):
        assert h.generate_entry_problems(status, 0, _s()) == []
    assert _rows(h.generate_entry_problems(Sample.Status.COMPLETED, 0, _s())) == [
        ("VIM140", "error", "generate input", f"has status COMPLETED; {_STATUS}")]
    found = h.generate_entry_problems("done", 0, _s(), where="my input")
    assert _rows(found) == [("VIM140", "error", "my input", f"has status 'done'; {_STATUS}")]
    assert found[0].fix == ("for the next turn of a multi-turn generate, set sample.status = "
                            "Sample.Status.PENDING before calling generate again; otherwise "
                            "skip finished samples")


def test_generate_entry_response_needs_partial_rollout():
    found = h.generate_entry_problems(Sample.Status.ABORTED, 3, _s())
    assert _rows(found) == [("VIM140", "error", "generate input", "already has "
                             "response_length=3 without --partial-rollout: generate would "
                             "continue stale tokens")]
    assert found[0].fix == "discard aborted groups, or pass --partial-rollout to resume them"
    assert h.generate_entry_problems(Sample.Status.ABORTED, 3, _s(partial_rollout=True)) == []
    assert h.generate_entry_problems(Sample.Status.PENDING, 1, _s(partial_rollout=True)) == []
    assert h.generate_entry_problems(Sample.Status.PENDING, "3", _s()) == []
    # a bad status is reported alone
    assert [v.message for v in h.generate_entry_problems(Sample.Status.FAILED, 3, _s())] == [
        f"has status FAILED; {_STATUS}"]


def test_generate_result_valid():
    assert h.generate_result_problems(Sample.Status.PENDING, make_sample(), _s()) == []
    fan_out = [make_sample(k=0, rollout_id=7), make_sample(k=1, rollout_id=7, reward=0.0)]
    assert h.generate_result_problems(Sample.Status.PENDING, fan_out, _s()) == []


@pytest.mark.parametrize("result, what", [
    (None, "None (NoneType)"), ([], "an empty list"), (3, "3 (int)"),
    ((make_sample(),), "a tuple of 1 item(s)"),
])
def test_generate_result_form(result, what):
    assert _rows(h.generate_result_problems(Sample.Status.PENDING, result, _s())) == [
        ("VIM140", "error", "generate result", f"is {what}, {_GEN}")]


def test_generate_result_list_with_a_bad_item():
    found = h.generate_result_problems(Sample.Status.PENDING, [make_sample(), 3, "x"], _s())
    assert _rows(found) == [("VIM140", "error", "generate result",
                             f"is a list whose item 1 is 3 (int), {_GEN}")]


def test_generate_result_awaitables_are_closed():
    coro = _coro()
    found = h.generate_result_problems(Sample.Status.PENDING, coro, _s(), where="gen result")
    assert _rows(found) == [("VIM140", "error", "gen result",
                             f"is a coroutine (an inner call was not awaited), {_GEN}")]
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
    assert [v.message for v in h.generate_result_problems(
        Sample.Status.PENDING, _Awaitable(), _s())] == [
        f"is an awaitable _Awaitable (an inner call was not awaited), {_GEN}"]


def test_generate_result_entry_where_follows_the_result_where():
    found = h.generate_result_problems(Sample.Status.COMPLETED, None, _s(),
                                       where="my generate result")
    assert [v.where for v in found] == ["my generate input", "my generate result"]
    found = h.generate_result_problems(Sample.Status.PENDING, make_sample(), _s(),
                                       in_response_length=2)
    assert _rows(found)[0][:3] == ("VIM140", "error", "generate input")


def test_generate_result_checks_each_sample_as_generated():
    sample = make_sample(loss_mask=[1])
    found = h.generate_result_problems(Sample.Status.PENDING, sample, _s())
    assert [(v.id, v.where) for v in found] == [("VIM108", "generate result.loss_mask (index=0)")]
    fan_out = [make_sample(k=0, rollout_id=7),
               make_sample(k=1, rollout_id=7, reward=0.0, loss_mask=[1])]
    found = h.generate_result_problems(Sample.Status.PENDING, fan_out, _s())
    assert [(v.id, v.where) for v in found] == [
        ("VIM108", "generate result[1].loss_mask (index=1)")]
    # stage "generate": an ABORTED sample with no response yet is no VIM107 finding
    aborted = make_sample(response_length=0, status=Sample.Status.ABORTED, response="",
                          rollout_log_probs=[])
    aborted.tokens = aborted.tokens[:3]
    assert h.generate_result_problems(Sample.Status.PENDING, aborted, _s()) == []


def test_generate_result_fan_out_siblings():
    fan_out = [make_sample(k=0), make_sample(k=1)]
    found = h.generate_result_problems(Sample.Status.PENDING, fan_out, _s())
    assert _rows(found) == [("VIM115", "error", "generate result[0].rollout_id (index=0)",
                             "is None but generate result is a fan-out of 2 samples: siblings "
                             "must share a non-None rollout_id")]


def test_generate_result_preset_reward_with_a_reward_model():
    rm = ("is already set by generate (0.0) while --rm-type math is configured: the reward "
          "model skips rewarded samples")
    assert _rows(h.generate_result_problems(Sample.Status.PENDING, make_sample(),
                                            _s(rm_type="math"))) == [
        ("VIM141", "warning", "generate result.reward (index=0)", rm)]
    fan_out = [make_sample(k=0, rollout_id=7, reward=1.0),
               make_sample(k=1, rollout_id=7, reward=1.0)]
    found = h.generate_result_problems(Sample.Status.PENDING, fan_out, _s(custom_rm_path="a.b"))
    assert _rows(found) == [("VIM141", "warning", "generate result[0].reward (index=0)",
                             "is already set by generate (1.0) while --custom-rm-path is "
                             "configured: the reward model skips rewarded samples")]
    assert h.generate_result_problems(Sample.Status.PENDING, make_sample(reward=None),
                                      _s(rm_type="math")) == []
    assert h.generate_result_problems(Sample.Status.PENDING, make_sample(), _s()) == []


# ---- reward functions (B3) -----------------------------------------------------------------

def test_reward_result_none_and_awaitables():
    assert _rows(h.reward_result_problems(None, _s())) == [
        ("VIM150", "error", "reward function result",
         "is None; a reward function must return a reward on every path")]
    coro = _coro()
    assert _rows(h.reward_result_problems(coro, _s(), where="rm result")) == [
        ("VIM150", "error", "rm result",
         "is a coroutine; a reward function must return a reward on every path")]
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


def test_reward_result_values():
    assert h.reward_result_problems(0.5, _s()) == []
    found = h.reward_result_problems({"acc": True}, _s(reward_key="acc"), where="rm result")
    assert _rows(found) == [("VIM110", "warning", "rm result",
                             "['acc'] is a bool (True); store a float (1.0 / 0.0)")]
    assert found[0].fix == "store a float (1.0 / 0.0), not a bool"


def test_reward_result_eval_reward_key():
    s = _s(eval_reward_key="acc", reward_key="score")
    assert h.reward_result_problems({"acc": 1.0}, s, evaluation=True) == []
    found = h.reward_result_problems({"acc": 1.0}, s)
    assert found[0].message == "is a dict without the key 'score' (--reward-key); it has ['acc']"
    found = h.reward_result_problems({"x": 1.0}, s, evaluation=True)
    assert found[0].message == ("is a dict without the key 'acc' (--eval-reward-key); it has "
                                "['x']")
    assert found[0].fix == ("store 'acc' in every reward dict, or pass --eval-reward-key naming "
                            "one of ['x']")
    # without --eval-reward-key an eval reward is read with --reward-key
    found = h.reward_result_problems({"x": 1.0}, _s(reward_key="score"), evaluation=True)
    assert found[0].message.endswith("(--reward-key); it has ['x']")


@pytest.mark.parametrize("result, what", [
    (None, "None (NoneType)"), ("ab", "'ab' (str)"), (b"ab", "b'ab' (bytes)"),
    ({"a": 1}, "a dict of 1 item(s)"), (5, "5 (int)"),
])
def test_batch_reward_shape(result, what):
    assert _rows(h.batch_reward_shape_problems(result, 4, where="brm")) == [
        ("VIM150", "error", "brm", f"is {what}, expected a list of len(samples)=4 rewards")]


def test_batch_reward_shape_iterables_and_awaitables():
    found = h.batch_reward_shape_problems(iter([1.0]), 1, where="b")
    assert found[0].message.endswith("(list_iterator), expected a list of len(samples)=1 rewards")

    class SizedOnly:
        def __len__(self):
            return 1
    assert len(h.batch_reward_shape_problems(SizedOnly(), 1, where="b")) == 1
    coro = _coro()
    assert [v.message for v in h.batch_reward_shape_problems(coro, 2, where="b")] == [
        "is a coroutine, expected a list of len(samples)=2 rewards"]
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
    assert h.batch_reward_shape_problems((1.0, 2.0), 2, where="b") == []
    assert h.batch_reward_shape_problems(np.zeros(2), 2, where="b") == []
    assert _rows(h.batch_reward_shape_problems([1.0] * 3, 4, where="b")) == [
        ("VIM150", "error", "b", "has 3 rewards for 4 samples; rewards are matched to samples "
         "by position")]


def test_batch_reward_result_each_value():
    samples = make_groups()[0]
    found = h.batch_reward_result_problems([1.0, True, {"acc": 1}, float("nan")], samples, _s())
    assert _rows(found) == [
        ("VIM110", "warning", "batch reward function result[1] (index=1)",
         "is a bool (True); store a float (1.0 / 0.0)"),
        ("VIM110", "error", "batch reward function result[2] (index=2)",
         "is a dict with keys ['acc'] but --reward-key is not set"),
        ("VIM110", "error", "batch reward function result[3] (index=3)",
         "is nan, expected a finite real")]
    assert [v.fix for v in found] == ["store a float (1.0 / 0.0), not a bool",
                                      "pass --reward-key naming one of ['acc']",
                                      "store a finite float (check for division by zero, NaN "
                                      "or inf)"]
    assert _rows(h.batch_reward_result_problems([1.0], samples, _s(), where="b")) == [
        ("VIM150", "error", "b", "has 1 rewards for 4 samples; rewards are matched to samples "
         "by position")]


def test_batch_reward_result_keys_and_indexless_samples():
    s = _s(eval_reward_key="acc")
    found = h.batch_reward_result_problems([{"acc": 1.0}, {"x": 1.0}], [object(), object()], s,
                                           evaluation=True, where="b")
    assert _rows(found) == [("VIM110", "error", "b[1]", "is a dict without the key 'acc' "
                             "(--eval-reward-key); it has ['x']")]
    assert found[0].fix == ("store 'acc' in every reward dict, or pass --eval-reward-key "
                            "naming one of ['x']")
    assert h.batch_reward_result_problems((r for r in [1.0]), [object()], _s()) != []


# ---- a finished group (B4) -----------------------------------------------------------------

def test_group_reward_problems():
    group = make_groups()[0]
    group[0].reward = None
    group[2].reward = {"b": 1}
    group[3].reward = True
    found = h.group_reward_problems([group[0], [group[1], group[2]], 3, group[3]],
                                    _s(reward_key="acc"), where="grp")
    assert _rows(found) == [
        ("VIM110", "error", "grp[0].reward (index=0)",
         "is None; every sample needs a reward before training"),
        ("VIM110", "error", "grp[1][1].reward (index=2)",
         "is a dict without the key 'acc' (--reward-key); it has ['b']"),
        ("VIM110", "warning", "grp[3].reward (index=3)",
         "is a bool (True); store a float (1.0 / 0.0)")]
    assert found[1].fix == "store 'acc' in every reward dict, or pass --reward-key naming one " \
                           "of ['b']"
    assert [v.where for v in h.group_reward_problems([group[0]], _s())] == [
        "group[0].reward (index=0)"]
    assert h.group_reward_problems(make_groups()[0], _s()) == []


# ---- filters -------------------------------------------------------------------------------

def test_dynamic_filter_results():
    assert h.dynamic_filter_result_problems(DynamicFilterOutput(keep=False)) == []
    assert _rows(h.dynamic_filter_result_problems(None)) == [
        ("VIM160", "error", "dynamic sampling filter result",
         "is None, which would drop every group")]
    assert _rows(h.dynamic_filter_result_problems(0, "my.f")) == [
        ("VIM160", "warning", "my.f result", "is 0 (int), wrapped as "
         "DynamicFilterOutput(keep=False)")]
    assert _rows(h.dynamic_filter_result_problems("yes", "my.f")) == [
        ("VIM160", "warning", "my.f result", "is 'yes' (str), wrapped as "
         "DynamicFilterOutput(keep=True)")]
    found = h.dynamic_filter_result_problems(np.array([1, 2]), "my.f")
    assert _rows(found) == [("VIM160", "error", "my.f result", "is array([1, 2]) (ndarray) "
                             "without a clear truth value (ValueError: The truth value of an "
                             "array with more than one element is ambiguous. Use a.any() or "
                             "a.all())")]
    coro = _coro()
    assert _rows(h.dynamic_filter_result_problems(coro, "my.f")) == [
        ("VIM165", "error", "my.f result",
         "--dynamic-sampling-filter-path `my.f` returned a coroutine")]
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


def test_filter_output_recognised_without_the_filter_hub(monkeypatch):
    monkeypatch.setitem(sys.modules, "vime.rollout.filter_hub.base_types", None)

    def named(name, **attrs):
        return type(name, (), attrs)()

    assert h._is_filter_output(named("DynamicFilterOutput", keep=True)) is True
    assert h._is_filter_output(named("DynamicFilterOutput")) is False
    assert h._is_filter_output(named("FilterOutput", keep=True)) is False
    assert h.dynamic_filter_result_problems(named("DynamicFilterOutput", keep=True)) == []


def test_buffer_filter_results():
    groups = make_groups(3)
    buffer = groups[1:]
    assert h.buffer_filter_result_problems([groups[0]], buffer, 1, _s()) == []
    found = h.buffer_filter_result_problems([groups[0], groups[1][:3], 7, groups[2]], buffer, 3,
                                            _s(), "bf")
    assert _rows(found) == [
        ("VIM161", "error", "bf result", "has 4 groups, more than num_samples=3"),
        ("VIM161", "error", "bf result[1]", "has 3 samples, expected n_samples_per_prompt=4"),
        ("VIM161", "error", "bf result[2]", "is 7 (int), expected a group (list of samples)"),
        ("VIM161", "error", "bf result[3]", "is still in the buffer: it will be served again "
         "(duplicated prompts)")]
    assert found[0].fix == "pop the groups you return out of the buffer list"
    assert h.buffer_filter_result_problems([groups[0], groups[1]], [], 2, _s()) == []
    assert [v.message for v in h.buffer_filter_result_problems(
        [groups[0][:3]], [], 1, _s(n_samples_per_prompt=3))] == []
    assert _rows(h.buffer_filter_result_problems(5, buffer, 2, _s())) == [
        ("VIM161", "error", "buffer filter result", "is 5 (int), expected list[list[Sample]]")]
    coro = _coro()
    assert _rows(h.buffer_filter_result_problems(coro, buffer, 2, _s(), "bf")) == [
        ("VIM165", "error", "bf result", "--buffer-filter-path `bf` returned a coroutine")]
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


# ---- sample hook, reward post-process, convert (VIM162) ------------------------------------

def test_sample_hook_results():
    assert h.sample_hook_result_problems(None) == []
    assert h.sample_hook_result_problems(make_sample()) == []
    assert _rows(h.sample_hook_result_problems(3)) == [
        ("VIM162", "error", "sample hook result", "is 3 (int), expected a Sample or None")]
    coro = _coro()
    assert _rows(h.sample_hook_result_problems(coro, "sh")) == [
        ("VIM162", "error", "sh result", "is a coroutine (an inner call was not awaited), "
         "expected a Sample or None")]
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


def test_reward_post_process_results():
    samples = make_groups()[0]
    assert h.reward_post_process_result_problems(([0.0] * 4, [1.0] * 4), samples) == []
    assert h.reward_post_process_result_problems([np.zeros(4), (1.0,) * 4], samples) == []
    where = "reward post-process result"
    assert _rows(h.reward_post_process_result_problems((1,), samples, "pp")) == [
        ("VIM162", "error", "pp result", "is a tuple of 1 item(s), expected a pair "
         "(raw_rewards, rewards)")]
    assert _rows(h.reward_post_process_result_problems(5, samples)) == [
        ("VIM162", "error", where, "is 5 (int), expected a pair (raw_rewards, rewards)")]
    assert _rows(h.reward_post_process_result_problems((5, [0.0] * 3), samples)) == [
        ("VIM162", "error", f"{where}[0] (raw_rewards)", "is 5 (int), expected a list of floats"),
        ("VIM162", "error", f"{where}[1] (rewards)", "has 3 values for 4 samples")]
    assert _rows(h.reward_post_process_result_problems(([0.0] * 4, b"abcd"), samples)) == [
        ("VIM162", "error", f"{where}[1] (rewards)", "is b'abcd' (bytes), expected a list of "
         "floats")]
    # the first bad value of each column only; a bool warns
    found = h.reward_post_process_result_problems(
        ([0.0, float("inf"), "x", 0.0], [0.0, True, float("nan"), 0.0]), samples)
    assert _rows(found) == [
        ("VIM162", "error", f"{where}[0] (raw_rewards)[1]", "is inf, expected a finite real"),
        ("VIM162", "warning", f"{where}[1] (rewards)[1]",
         "is a bool (True); store a float (1.0 / 0.0)")]
    coro = _coro()
    assert _rows(h.reward_post_process_result_problems(coro, samples, "pp")) == [
        ("VIM165", "error", "pp result",
         "--custom-reward-post-process-path `pp` returned a coroutine")]


def test_reward_post_process_array_like_without_len():
    class NoLen:
        def tolist(self):
            return [0.0]

    found = h.reward_post_process_result_problems(([0.0], NoLen()), [make_sample()])
    assert [v.where for v in found] == ["reward post-process result[1] (rewards)"]
    assert found[0].message.endswith(", expected a list of floats")


def test_convert_results():
    samples = make_groups()[0]
    full = {key: [0] * 4 for key in CONVERT_REQUIRED_KEYS}
    assert h.convert_result_problems(full, samples) == []
    assert _rows(h.convert_result_problems([1], samples, "cv")) == [
        ("VIM162", "error", "cv result", "is a list of 1 item(s), expected a dict of training "
         "columns")]
    found = h.convert_result_problems({"tokens": [1] * 4, "loss_masks": 5,
                                       "rewards": [0.0] * 3}, samples)
    assert _rows(found) == [
        ("VIM162", "error", "convert function result", "is missing 'response_lengths', "
         "'raw_reward', 'truncated', 'sample_indices'"),
        ("VIM162", "error", "convert function result['rewards']",
         "has 3 values, expected one per sample: 4"),
        ("VIM162", "error", "convert function result['loss_masks']",
         "has 5 (int), expected one per sample: 4")]
    coro = _coro()
    assert _rows(h.convert_result_problems(coro, samples, "cv")) == [
        ("VIM165", "error", "cv result",
         "--custom-convert-samples-to-train-data-path `cv` returned a coroutine")]
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


def test_edges_of_the_checks_above():
    # the default where of the status check, and response_length 1 needs --partial-rollout
    assert [v.where for v in h.generate_status_problems(Sample.Status.COMPLETED)] == [
        "generate input"]
    assert [v.message for v in h.generate_entry_problems(Sample.Status.PENDING, 1, _s())] == [
        "already has response_length=1 without --partial-rollout: generate would continue "
        "stale tokens"]
    # a batch reward call reads --reward-key unless told it is an eval call
    s = _s(eval_reward_key="acc", reward_key="score")
    assert [v.message for v in h.batch_reward_result_problems([{"acc": 1.0}], [object()], s,
                                                              where="b")] == [
        "is a dict without the key 'score' (--reward-key); it has ['acc']"]
    # an awaitable that is no coroutine, sized and iterable or not, is named as one
    assert [v.message for v in h.batch_reward_shape_problems(_Awaitable(), 1, where="b")] == [
        "is an awaitable _Awaitable, expected a list of len(samples)=1 rewards"]

    class AwaitableList(list):
        def __await__(self):
            yield

    assert [v.message for v in h.batch_reward_shape_problems(AwaitableList([1.0]), 1,
                                                             where="b")] == [
        "is an awaitable AwaitableList, expected a list of len(samples)=1 rewards"]
    # a non-Sample inside a fan-out element does not hide the leaves after it
    bad = make_sample(reward=None)
    assert [v.where for v in h.group_reward_problems([[3, bad]], _s())] == [
        "group[0][1].reward (index=0)"]
    # a column of the wrong length does not hide the other column's problem
    assert [v.where for v in h.reward_post_process_result_problems(([0.0] * 3, 5),
                                                                   make_groups()[0])] == [
        "reward post-process result[0] (raw_rewards)", "reward post-process result[1] (rewards)"]
