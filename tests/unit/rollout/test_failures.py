"""The pure functions of vime.rollout.failures on exact values: the --hook-failure decision
(settle_failed_call, settle_unscored), the error record, marking a sample FAILED, the failure
counts and metrics, and the stop message of --max-failed-ratio (records missing or malformed,
defaults, ordering of the examples)."""

from __future__ import annotations

import math
from argparse import Namespace

import pytest

from vime.rollout.failures import (
    ERROR_KEY,
    MESSAGE_CHARS,
    error_record,
    failure_counts,
    failure_metrics,
    mark_failed,
    settle_failed_call,
    settle_unscored,
    too_many_failed,
)
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

FIX = ("  fix: repair the failing hook (the samples' metadata['vime_error'] holds every error), "
       "raise --rm-timeout / --custom-generate-timeout if they time out, or raise "
       "--max-failed-ratio")


def _sample(index: int | None, *, response_length: int = 2) -> Sample:
    s = Sample(index=index, group_index=0, tokens=[1, 2, 3, 4][:2 + response_length],
               response_length=response_length, reward=1.0, status=Sample.Status.COMPLETED)
    s.loss_mask = [1] * response_length
    return s


def _failed(index: int | None, hook: str, exc: BaseException) -> Sample:
    return mark_failed(_sample(index), hook, exc, 0.5)


# ---- the --hook-failure decision ------------------------------------------------------------

RAISE, FAIL = Namespace(hook_failure="raise"), Namespace(hook_failure="fail-sample")


def test_raise_policy_returns_the_hooks_own_exception_noted_and_marks_nothing() -> None:
    group = [_sample(3), _sample(4)]
    exc = ValueError("judge down")
    raised = settle_failed_call(RAISE, group, "reward", exc, 1.25, path="my.rm")
    assert raised is exc
    assert exc.__notes__ == ["vime: reward call my.rm failed on sample index=3 (group_index=0) "
                             "after 1.2 s; --hook-failure raise stops the run (fail-sample "
                             "would fail only this sample)"]
    assert all(s.status is Sample.Status.COMPLETED and s.reward == 1.0 for s in group)


def test_the_default_policy_is_raise() -> None:
    assert settle_failed_call(Namespace(), [_sample(0)], "generate", KeyError("k"), 0.0,
                              path="g") is not None
    assert settle_unscored(Namespace(), _sample(0), 0.0, message="None") is False


def test_fail_sample_marks_every_sample_once_after_prepare() -> None:
    group = [_sample(1), _failed(2, "generate", RuntimeError("earlier"))]
    seen: list[int | None] = []
    exc = TimeoutError("over --rm-timeout 2 s")
    assert settle_failed_call(FAIL, group, "reward", exc, 2.0, path="my.rm",
                              prepare=lambda s: seen.append(s.index)) is None
    assert seen == [1]                      # the already failed sample is left as it was
    assert group[0].status is Sample.Status.FAILED and group[0].reward is None
    assert group[0].metadata[ERROR_KEY] == {"hook": "reward", "type": "TimeoutError",
                                            "message": "over --rm-timeout 2 s", "seconds": 2.0}
    assert group[1].metadata[ERROR_KEY]["message"] == "earlier"
    assert not getattr(exc, "__notes__", None)


def test_a_none_reward_is_unscored_only_under_fail_sample() -> None:
    kept, failed = _sample(5), _sample(6)
    assert settle_unscored(RAISE, kept, 0.3, message="rm returned None") is False
    assert kept.status is Sample.Status.COMPLETED
    assert settle_unscored(FAIL, failed, 0.3, message="rm returned None") is True
    assert failed.metadata[ERROR_KEY] == {"hook": "reward", "type": "Unscored",
                                          "message": "rm returned None", "seconds": 0.3}


# ---- error_record ----------------------------------------------------------------------------


def test_error_record_from_an_exception() -> None:
    assert error_record("reward", ValueError("no answer"), 1.25) == {
        "hook": "reward", "type": "ValueError", "message": "no answer", "seconds": 1.25}


def test_error_record_without_an_exception() -> None:
    assert error_record("generate", None, 0.0) == {
        "hook": "generate", "type": "Error", "message": "", "seconds": 0.0}
    assert error_record("reward", None, 2.0, type_name="Unscored") == {
        "hook": "reward", "type": "Unscored", "message": "", "seconds": 2.0}


def test_error_record_overrides_and_cuts() -> None:
    rec = error_record("reward", KeyError("k"), 1.0, type_name="Mine", message="said so")
    assert rec["type"] == "Mine" and rec["message"] == "said so"
    assert error_record("reward", ValueError("x"), 1.0, message="")["message"] == ""
    long = error_record("reward", ValueError("y" * (MESSAGE_CHARS + 50)), 1.0)
    assert long["message"] == "y" * MESSAGE_CHARS


def test_error_record_timeout_and_seconds() -> None:
    assert error_record("reward", TimeoutError(), 3.0)["message"] == "timed out"
    assert error_record("reward", TimeoutError("slow rm"), 3.0)["message"] == "slow rm"
    assert error_record("reward", ValueError(), 0.25)["seconds"] == 0.25
    assert error_record("reward", ValueError(), -1.0)["seconds"] == 0.0   # clock skew
    assert error_record("reward", ValueError(), 1 / 3)["seconds"] == 0.333333


# ---- mark_failed -----------------------------------------------------------------------------


def test_mark_failed_sets_every_field() -> None:
    s = mark_failed(_sample(4, response_length=2), "reward", ValueError("bad"), 0.5,
                    message="cut")
    assert s.status is Sample.Status.FAILED
    assert s.metadata[ERROR_KEY] == {"hook": "reward", "type": "ValueError", "message": "cut",
                                     "seconds": 0.5}
    assert s.reward is None and s.loss_mask == [0, 0] and s.remove_sample is True


def test_mark_failed_keeps_other_metadata_and_repairs_a_non_dict() -> None:
    s = _sample(1)
    s.metadata = {"mine": 1}
    mark_failed(s, "generate", None, 0.0, type_name="Unscored")
    assert s.metadata == {"mine": 1, ERROR_KEY: {"hook": "generate", "type": "Unscored",
                                                 "message": "", "seconds": 0.0}}
    odd = _sample(2)
    odd.metadata = None  # type: ignore[assignment]
    mark_failed(odd, "reward", ValueError("v"), 0.0)
    assert odd.metadata == {ERROR_KEY: {"hook": "reward", "type": "ValueError",
                                        "message": "v", "seconds": 0.0}}


def test_mark_failed_mask_follows_the_response_length() -> None:
    empty = mark_failed(_sample(0, response_length=0), "generate", ValueError(), 0.0)
    assert empty.loss_mask == []
    broken = _sample(0)
    broken.response_length = None  # type: ignore[assignment]
    assert mark_failed(broken, "generate", ValueError(), 0.0).loss_mask == []


# ---- failure_counts / failure_metrics --------------------------------------------------------


def test_failure_counts_and_metrics() -> None:
    samples = [_failed(0, "reward", ValueError("a")), _failed(1, "reward", ValueError("b")),
               _failed(2, "generate", KeyError("c")), _sample(3)]
    assert failure_counts(samples) == {("reward", "ValueError"): 2, ("generate", "KeyError"): 1}
    assert failure_metrics(samples) == {
        "rollout/failed/count": 3.0, "rollout/failed/ratio": 0.75,
        "rollout/failed/generate/KeyError": 1.0, "rollout/failed/reward/ValueError": 2.0}
    assert failure_metrics([]) == {"rollout/failed/count": 0.0, "rollout/failed/ratio": 0.0}


def test_records_missing_or_malformed_count_as_unknown() -> None:
    no_record, not_a_dict, no_metadata, partial = (_sample(i) for i in range(4))
    for s in (no_record, not_a_dict, no_metadata, partial):
        s.status = Sample.Status.FAILED
    not_a_dict.metadata = {ERROR_KEY: "oops"}
    no_metadata.metadata = None  # type: ignore[assignment]
    partial.metadata = {ERROR_KEY: {"hook": "reward"}}
    assert failure_counts([no_record, not_a_dict, no_metadata, partial]) == {
        ("unknown", "unknown"): 3, ("reward", "unknown"): 1}


# ---- too_many_failed -------------------------------------------------------------------------


def test_at_or_under_the_ratio_nothing_stops() -> None:
    samples = [_failed(0, "reward", ValueError()), _sample(1)]
    assert too_many_failed(samples, 0.5) is None
    assert too_many_failed([], 0.0) is None
    assert too_many_failed(samples, math.inf) is None


def test_the_stop_message_exactly() -> None:
    samples = [_failed(7, "reward", ValueError("seven")), _failed(2, "reward", ValueError("two")),
               _failed(5, "generate", KeyError("five")), _sample(1)]
    assert too_many_failed(samples, 0.5) == "\n".join([
        "3 of 4 samples failed in this step (ratio 0.75 > --max-failed-ratio 0.5); most common "
        "errors:",
        "  reward/ValueError: 2 sample(s), e.g. sample index=2: two",
        "  generate/KeyError: 1 sample(s), e.g. sample index=5: 'five'",
        FIX])
    assert too_many_failed(samples, 0.5, where="rollout 3").startswith(
        "3 of 4 samples failed in rollout 3 (")


def test_the_stop_message_names_the_top_three_kinds() -> None:
    kinds = [ValueError, KeyError, TypeError, OSError]
    samples = [_failed(i, "reward", kind(str(i))) for i, kind in enumerate(kinds)]
    samples.append(_failed(9, "reward", ValueError("again")))
    lines = too_many_failed(samples, 0.1).splitlines()   # type: ignore[union-attr]
    assert len(lines) == 1 + 3 + 1
    assert lines[1] == "  reward/ValueError: 2 sample(s), e.g. sample index=0: 0"
    assert not any("OSError" in line for line in lines)
    assert len(too_many_failed(samples, 0.1, top=4).splitlines()) == 6  # type: ignore[union-attr]


def test_the_example_is_the_lowest_index_and_unindexed_come_last() -> None:
    samples = [_failed(None, "reward", ValueError("none")), _failed(3, "reward", ValueError("3")),
               _failed(1, "reward", ValueError("1")), _failed(0, "reward", ValueError("0"))]
    assert "e.g. sample index=0: 0\n" in too_many_failed(samples, 0.0)  # type: ignore[operator]
    unindexed_first = [samples[0], _failed(2, "reward", ValueError("2"))]
    assert "e.g. sample index=2: 2\n" in too_many_failed(unindexed_first, 0.0)  # type: ignore[operator]


def test_the_example_of_a_malformed_record() -> None:
    broken = _sample(4)
    broken.status = Sample.Status.FAILED
    broken.metadata = None  # type: ignore[assignment]
    partial = _sample(6)
    partial.status = Sample.Status.FAILED
    partial.metadata = {ERROR_KEY: {"hook": "generate", "type": "KeyError"}}
    lines = too_many_failed([broken, partial], 0.0).splitlines()  # type: ignore[union-attr]
    assert lines[1:3] == ["  unknown/unknown: 1 sample(s), e.g. sample index=4: ",
                          "  generate/KeyError: 1 sample(s), e.g. sample index=6: "]
    odd = _sample(8)
    odd.status = Sample.Status.FAILED
    odd.metadata = {ERROR_KEY: ["not", "a", "dict"]}
    assert "unknown/unknown: 1 sample(s), e.g. sample index=8: \n" in \
        too_many_failed([odd], 0.0)  # type: ignore[operator]
