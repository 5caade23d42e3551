"""A hook that fails or hangs costs one sample, not the run: the failure record and metrics, the
stop rule, per-hook timeouts, --hook-failure in the default rollout (no engine: the generate
functions here never call one), abort cancelling slow rewards, the watchdog, and conversion of
FAILED samples (no gradient, left out of the group's mean and std)."""

from __future__ import annotations

import asyncio
import logging
import time
from argparse import Namespace

import pytest
import rollout_helpers

from vime.data.batch_builder import BatchBuilder, normalize_group_rewards
from vime.rollout import vllm_rollout as vr
from vime.rollout.base_types import iter_samples
from vime.rollout.failures import (
    HookFailureError,
    error_record,
    failure_metrics,
    mark_failed,
    too_many_failed,
)
from vime.rollout.vllm.hook_calls import CallAborted, HookCallError, call_hook
from vime.rollout.watchdog import PendingCall, Watchdog, format_pending
from vime.utils.async_utils import run
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

HERE = __name__
CALLS: list[int] = []


@pytest.fixture(autouse=True)
def _clear():
    CALLS.clear()
    yield
    CALLS.clear()


# ---- hooks used by the rollout tests -------------------------------------------------------


async def gen_ok(args, sample, sampling_params):
    sample.append_response_tokens(tokens=[5, 6], log_probs=[-0.5, -0.25])
    sample.status = Sample.Status.COMPLETED
    return sample


async def gen_hangs_on_index_3(args, sample, sampling_params):
    sample.append_response_tokens(tokens=[5], log_probs=[-0.5])   # grown, then it hangs
    if sample.index == 3:
        await asyncio.sleep(3600)
    sample.append_response_tokens(tokens=[6], log_probs=[-0.25])
    sample.status = Sample.Status.COMPLETED
    return sample


async def reward_fails_every_fifth(args, sample, **kwargs):
    CALLS.append(sample.index)
    if sample.index % 5 == 0:
        raise ValueError(f"judge could not parse sample {sample.index}")
    return float(sample.index % 2)


async def reward_sleeps_on_index_1(args, sample, **kwargs):
    if sample.index == 1:
        await asyncio.sleep(3600)
    return float(sample.index % 2)


async def reward_none_on_index_2(args, sample, **kwargs):
    return None if sample.index == 2 else float(sample.index % 2)


async def reward_all_fail_in_group_0(args, sample, **kwargs):
    if sample.group_index == 0:
        raise RuntimeError("judge down")
    return float(sample.index % 2)


async def reward_always_fails(args, sample, **kwargs):
    raise ConnectionError("judge unreachable")


async def reward_slow_for_group_1(args, sample, **kwargs):
    if sample.group_index == 1:
        await asyncio.sleep(3600)
    return float(sample.index % 2)


class Source(rollout_helpers.Source):
    """``k`` new groups of ``n`` tokenized prompts per call."""

    def __init__(self, n: int) -> None:
        super().__init__(n, tokens=[1, 2, 3])


def _args(**kw) -> Namespace:
    base = dict(rollout_batch_size=2, n_samples_per_prompt=5, over_sampling_batch_size=2,
                rollout_temperature=1.0, custom_generate_function_path=f"{HERE}.gen_ok",
                custom_rm_path=f"{HERE}.reward_fails_every_fifth", rm_type=None,
                group_rm=False, reward_key=None, partial_rollout=False, contract_check="raise",
                hook_failure="fail-sample", max_failed_ratio=0.5, rm_timeout=None,
                custom_generate_timeout=None, rollout_watchdog_secs=None)
    return Namespace(**{**base, **kw})


# ---- pure parts ------------------------------------------------------------------------------


def test_error_record_shape_and_timeout_message():
    rec = error_record("reward", ValueError("bad"), 1.23456789)
    assert rec == {"hook": "reward", "type": "ValueError", "message": "bad", "seconds": 1.234568}
    assert error_record("generate", TimeoutError(), 2.0)["message"] == "timed out"
    assert len(error_record("reward", ValueError("x" * 5000), 0)["message"]) == 500


def test_mark_failed_zeroes_the_mask_and_removes_the_sample():
    s = Sample(index=4, tokens=[1, 2, 3, 4], response_length=2, reward=1.0, loss_mask=[1, 1])
    mark_failed(s, "reward", KeyError("k"), 0.5)
    assert s.status is Sample.Status.FAILED and s.reward is None
    assert s.loss_mask == [0, 0] and s.remove_sample
    assert s.metadata["vime_error"]["type"] == "KeyError"


def _failed(index, hook="reward", exc=None):
    s = Sample(index=index, tokens=[1, 2, 3], response_length=1)
    return mark_failed(s, hook, exc or ValueError(f"boom {index}"), 0.1)


def test_failure_metrics_count_per_hook_and_type():
    samples = [_failed(0), _failed(1, "generate", TimeoutError("t")),
               Sample(index=2, reward=1.0), Sample(index=3, reward=0.0)]
    assert failure_metrics(samples) == {
        "rollout/failed/count": 2.0, "rollout/failed/ratio": 0.5,
        "rollout/failed/generate/TimeoutError": 1.0, "rollout/failed/reward/ValueError": 1.0}
    assert failure_metrics([])["rollout/failed/ratio"] == 0.0


def test_too_many_failed_names_top_types_with_one_example_each():
    samples = [_failed(0), _failed(1), _failed(2, "generate", TimeoutError("slow")),
               Sample(index=3, reward=1.0)]
    assert too_many_failed(samples, 0.75) is None
    message = too_many_failed(samples, 0.5, where="rollout 3")
    assert message is not None
    assert "3 of 4 samples failed in rollout 3 (ratio 0.75 > --max-failed-ratio 0.5)" in message
    assert "reward/ValueError: 2 sample(s), e.g. sample index=0: boom 0" in message
    assert "generate/TimeoutError: 1 sample(s), e.g. sample index=2: slow" in message
    assert too_many_failed([], 0.0) is None


def test_group_normalisation_leaves_failed_rollouts_out():
    # the scored members normalise as a group of three; the failed one gets 0.0
    assert normalize_group_rewards([1.0, 0.0, 99.0, 0.5], divide_by_std=True,
                                   scored=[True, True, False, True]) == \
        normalize_group_rewards([1.0, 0.0, 0.5], divide_by_std=True)[:2] + [0.0] + \
        normalize_group_rewards([1.0, 0.0, 0.5], divide_by_std=True)[2:]
    assert normalize_group_rewards([3.0, 7.0], divide_by_std=False, scored=[False, False]) == \
        [0.0, 0.0]


def _conv_args(**kw):
    base = dict(advantage_estimator="grpo", rewards_normalization=True,
                grpo_std_normalization=True, n_samples_per_prompt=3, reward_key=None,
                custom_convert_samples_to_train_data_path=None,
                custom_reward_post_process_path=None)
    return Namespace(**{**base, **kw})


def test_conversion_gives_failed_samples_no_gradient_and_a_trainer_row():
    ok = [Sample(group_index=0, index=i, tokens=[1, 2, 3, 4], response_length=2,
                 reward=float(i), rollout_log_probs=[-0.1, -0.2],
                 status=Sample.Status.COMPLETED) for i in range(2)]
    never = Sample(group_index=0, index=2, tokens=[1, 2], response_length=0)
    mark_failed(never, "generate", TimeoutError("t"), 9.0)
    data = BatchBuilder.convert(_conv_args(), [*ok, never])
    assert data["failed"] == [0, 0, 1]
    assert data["loss_masks"][2] == [0] and data["rollout_mask_sums"][2] == 0
    assert data["tokens"][2] == [1, 2, 2] and data["response_lengths"][2] == 1
    assert data["rollout_log_probs"][2] == [0.0]
    assert data["rewards"][2] == 0.0
    # the other two normalise between themselves, as a group that never had the failed one
    assert data["rewards"][:2] == normalize_group_rewards([0.0, 1.0], divide_by_std=True)


# ---- call_hook: timeouts, errors, abort ---------------------------------------------------------


class _State:
    def __init__(self):
        self.pending = {}
        self.aborted = False


def test_call_hook_times_out_and_cleans_up():
    state, sample = _State(), Sample(index=7)

    async def main():
        with pytest.raises(HookCallError) as info:
            await call_hook(state, sample, hook="reward", phase="reward", path="m.rm",
                            timeout=0.05, timeout_flag="--rm-timeout",
                            make=lambda: asyncio.sleep(10))
        return info.value

    err = run(main())
    assert isinstance(err.original, TimeoutError)
    assert "m.rm for sample index=7 was cancelled after" in str(err.original)
    assert "--rm-timeout 0.05 s" in str(err.original)
    assert state.pending == {}


def test_call_hook_wraps_errors_and_reports_aborts():
    state, sample = _State(), Sample(index=1)

    async def boom():
        raise ZeroDivisionError("x")

    async def main():
        with pytest.raises(HookCallError) as info:
            await call_hook(state, sample, hook="generate", phase="generate", path="p",
                            timeout=None, make=boom)
        assert isinstance(info.value.original, ZeroDivisionError)
        task = asyncio.ensure_future(call_hook(state, sample, hook="reward", phase="reward",
                                               path="p", timeout=None,
                                               make=lambda: asyncio.sleep(10)))
        await asyncio.sleep(0.01)
        state.aborted = True
        for entry in list(state.pending.values()):
            entry.task.cancel()
        with pytest.raises(CallAborted):
            await task

    run(main())


# ---- the default rollout with --hook-failure ----------------------------------------------------


def test_fail_sample_reward_raising_on_every_fifth_sample():
    out = vr.generate_rollout(_args(), 0, Source(5))
    leaves = list(iter_samples(out.samples))
    assert [len(g) for g in out.samples] == [5, 5]          # group sizes hold
    failed = [s for s in leaves if s.status is Sample.Status.FAILED]
    assert [s.index for s in failed] == [0, 5]
    for s in failed:
        assert s.metadata["vime_error"]["hook"] == "reward"
        assert s.metadata["vime_error"]["type"] == "ValueError"
        assert "judge could not parse" in s.metadata["vime_error"]["message"]
        assert s.loss_mask == [0, 0] and s.remove_sample and s.reward is None
    assert all(s.reward is not None for s in leaves if s not in failed)


def test_raise_policy_stops_with_the_hook_named():
    with pytest.raises(ValueError, match="judge could not parse") as info:
        vr.generate_rollout(_args(hook_failure="raise"), 0, Source(5))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"reward call {HERE}.reward_fails_every_fifth failed on sample index=" in notes


def test_reward_past_rm_timeout_fails_that_sample_only():
    start = time.monotonic()
    out = vr.generate_rollout(_args(custom_rm_path=f"{HERE}.reward_sleeps_on_index_1",
                                    rm_timeout=0.2), 0, Source(5))
    assert time.monotonic() - start < 10
    failed = [s for s in iter_samples(out.samples) if s.status is Sample.Status.FAILED]
    assert [s.index for s in failed] == [1]
    rec = failed[0].metadata["vime_error"]
    assert rec["type"] == "TimeoutError" and rec["seconds"] >= 0.2
    assert "--rm-timeout 0.2 s" in rec["message"]


def test_reward_none_is_unscored_under_fail_sample():
    out = vr.generate_rollout(_args(custom_rm_path=f"{HERE}.reward_none_on_index_2"), 0,
                              Source(5))
    failed = [s for s in iter_samples(out.samples) if s.status is Sample.Status.FAILED]
    assert [(s.index, s.metadata["vime_error"]["type"]) for s in failed] == [(2, "Unscored")]


def test_generate_hanging_past_its_timeout_is_cut_back_and_failed():
    out = vr.generate_rollout(_args(custom_generate_function_path=f"{HERE}.gen_hangs_on_index_3",
                                    custom_rm_path=f"{HERE}.reward_none_on_index_2",
                                    custom_generate_timeout=0.2), 0, Source(5))
    by_index = {s.index: s for s in iter_samples(out.samples)}
    hung = by_index[3]
    assert hung.status is Sample.Status.FAILED
    assert hung.metadata["vime_error"]["hook"] == "generate"
    # the token appended before the hang is cut back: the prompt is left, nothing else
    assert hung.tokens == [1, 2, 3] and hung.response_length == 0
    assert hung.rollout_log_probs in (None, [])


def test_all_failed_groups_are_dropped_counted_and_replaced():
    out = vr.generate_rollout(_args(custom_rm_path=f"{HERE}.reward_all_fail_in_group_0",
                                    n_samples_per_prompt=2, over_sampling_batch_size=2), 0,
                              Source(2))
    kept = [g[0].group_index for g in out.samples]
    assert len(kept) == 2 and 0 not in kept        # its slot went to a group drawn after it
    assert out.metrics["rollout/vllm_rollout/failed_groups_dropped"] == 1.0


def test_every_sample_failing_stops_instead_of_drawing_forever():
    with pytest.raises(HookFailureError, match="judge unreachable") as info:
        vr.generate_rollout(_args(custom_rm_path=f"{HERE}.reward_always_fails"), 0, Source(5))
    assert "reward/ConnectionError" in str(info.value)


def test_abort_cancels_slow_reward_calls_instead_of_waiting():
    # one group is needed, two are generated: group 1's reward sleeps for an hour
    args = _args(rollout_batch_size=1, custom_rm_path=f"{HERE}.reward_slow_for_group_1",
                 n_samples_per_prompt=2, hook_failure="raise")
    start = time.monotonic()
    out = vr.generate_rollout(args, 0, Source(2))
    assert time.monotonic() - start < 10, "the abort waited for the slow reward"
    assert [s.index for s in iter_samples(out.samples)] == [0, 1]
    loop_tasks = run(_running_tasks())
    assert not any("reward_slow_for_group_1" in t for t in loop_tasks)


async def _running_tasks() -> list[str]:
    me = asyncio.current_task()
    return [repr(t.get_coro()) for t in asyncio.all_tasks() if t is not me]


# ---- watchdog --------------------------------------------------------------------------------


def test_format_pending_lists_longest_first():
    entries = [PendingCall(3, 1, "reward", "reward", "m.rm", start=95.0),
               PendingCall(1, 0, "generate", "generate", "m.gen", start=90.0)]
    text = format_pending(entries, now=100.0, rollout_id=4, elapsed=100.0, limit=30.0)
    lines = text.splitlines()
    assert lines[0] == ("rollout 4: the step has run 100 s (over --rollout-watchdog-secs 30); "
                        "2 call(s) still pending:")
    assert lines[1] == "  sample index=1 group_index=0: phase=generate hook=generate m.gen for 10.0 s"
    assert lines[2].startswith("  sample index=3 group_index=1: phase=reward hook=reward m.rm")


def test_watchdog_reports_once_and_stop_prevents_it(caplog):
    pending = {1: PendingCall(0, 0, "reward", "reward", "m.rm", start=time.monotonic())}
    dog = Watchdog(0.05, 2, pending)
    with caplog.at_level(logging.WARNING, logger="vime.rollout.watchdog"):
        dog.start()
        time.sleep(0.3)
        dog.stop()
    assert dog.report is not None and "phase=reward hook=reward m.rm" in dog.report
    assert sum("still pending" in r.message for r in caplog.records) == 1
    # stopped before its 0.2 s are up, then waited well past them: it never reports
    quiet = Watchdog(0.2, 3, pending)
    with caplog.at_level(logging.WARNING, logger="vime.rollout.watchdog"):
        quiet.start()
        quiet.stop()
        time.sleep(0.6)
    assert quiet.report is None
    assert sum("still pending" in r.message for r in caplog.records) == 1  # the first dog's


def test_rollout_watchdog_names_the_hanging_reward(caplog):
    args = _args(custom_rm_path=f"{HERE}.reward_sleeps_on_index_1", rm_timeout=1.0,
                 rollout_watchdog_secs=0.3)
    with caplog.at_level(logging.WARNING, logger="vime.rollout.watchdog"):
        vr.generate_rollout(args, 5, Source(5))
    reports = [r.message for r in caplog.records if "still pending" in r.message]
    assert len(reports) == 1
    assert "rollout 5" in reports[0] and "sample index=1 " in reports[0]
    assert f"phase=reward hook=reward {HERE}.reward_sleeps_on_index_1" in reports[0]


async def batch_reward_fails_for_group_0(args, samples, **kwargs):
    if samples[0].group_index == 0:
        raise RuntimeError("batch judge down")
    return [None if s.index == 3 else float(s.index % 2) for s in samples]


def test_group_rm_failure_fails_the_whole_call_and_none_is_unscored():
    out = vr.generate_rollout(_args(custom_rm_path=f"{HERE}.batch_reward_fails_for_group_0",
                                    group_rm=True, n_samples_per_prompt=2,
                                    max_failed_ratio=0.9), 0, Source(2))
    kept = [g[0].group_index for g in out.samples]
    assert 0 not in kept and len(kept) == 2         # group 0 failed whole, was replaced
    assert out.metrics["rollout/vllm_rollout/failed_groups_dropped"] == 1.0
    by_index = {s.index: s for s in iter_samples(out.samples)}
    assert by_index[3].metadata["vime_error"]["type"] == "Unscored"
    assert by_index[2].reward == 0.0 and by_index[2].status is Sample.Status.COMPLETED
