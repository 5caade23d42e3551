"""vime.agent.assemble: calls -> segments (prefix extension, context rewrites, masks, log-probs)."""

from __future__ import annotations

import pytest

from vime.agent.assemble import CallRecord, context_rewrites, segment_calls, status_of_finish

pytestmark = pytest.mark.unit


def call(prompt: list[int], completion: list[int], finish: str = "stop",
         version: str | None = "1") -> CallRecord:
    lps = tuple(-0.1 * (i + 1) for i in range(len(completion)))
    return CallRecord(tuple(prompt), tuple(completion), lps, finish, version)


def test_prefix_extension_is_one_segment_with_masks_and_aligned_log_probs() -> None:
    calls = [call([1, 2, 3], [10, 11]),
             call([1, 2, 3, 10, 11, 50, 51, 52], [12], "length", "2")]
    (seg,) = segment_calls(calls)
    assert seg.tokens == [1, 2, 3, 10, 11, 50, 51, 52, 12]
    assert seg.prompt_ids == [1, 2, 3]
    assert seg.loss_mask == [1, 1, 0, 0, 0, 1]
    assert seg.rollout_log_probs == pytest.approx([-0.1, -0.2, 0.0, 0.0, 0.0, -0.1])
    assert seg.weight_versions == ["1", "2"]
    assert seg.finish_reason == "length" and seg.calls == [0, 1]
    assert context_rewrites([seg]) == 0


def test_every_generated_token_keeps_its_own_log_prob() -> None:
    calls = [call([7], [1, 2, 3]), call([7, 1, 2, 3, 9], [4, 5])]
    (seg,) = segment_calls(calls)
    generated = [lp for lp, m in zip(seg.rollout_log_probs, seg.loss_mask, strict=True) if m]
    assert generated == pytest.approx([-0.1, -0.2, -0.3, -0.1, -0.2])
    assert [t for t, m in zip(seg.response_ids, seg.loss_mask, strict=True) if m] == [1, 2, 3,
                                                                                       4, 5]


def test_a_rewritten_context_opens_a_new_segment() -> None:
    calls = [call([1, 2], [3]), call([1, 2, 3, 4], [5]), call([1, 9, 9], [6])]
    segs = segment_calls(calls)
    assert [s.tokens for s in segs] == [[1, 2, 3, 4, 5], [1, 9, 9, 6]]
    assert [s.calls for s in segs] == [[0, 1], [2]]
    assert context_rewrites(segs) == 1


def test_a_prompt_that_drops_the_last_completion_is_a_rewrite() -> None:
    segs = segment_calls([call([1, 2], [3, 4]), call([1, 2, 3], [5])])
    assert len(segs) == 2 and segs[1].prompt_ids == [1, 2, 3]


def test_interleaved_sub_agents_stay_two_segments() -> None:
    calls = [call([1], [2]), call([8], [9]), call([1, 2, 5], [3]), call([8, 9, 6], [7])]
    segs = segment_calls(calls)
    assert [s.calls for s in segs] == [[0, 2], [1, 3]]
    assert [s.tokens for s in segs] == [[1, 2, 5, 3], [8, 9, 6, 7]]


def test_no_calls_no_segments_and_versions_only_when_reported() -> None:
    assert segment_calls([]) == [] and context_rewrites([]) == 0
    (seg,) = segment_calls([call([1], [2], version=None)])
    assert seg.weight_versions == []


def test_call_record_rejects_misaligned_log_probs() -> None:
    with pytest.raises(ValueError, match="2 log_probs for 1 completion_ids"):
        CallRecord((1,), (2,), (-0.1, -0.2), "stop")


@pytest.mark.parametrize(("finish", "status"), [("stop", "COMPLETED"), ("length", "TRUNCATED"),
                                                ("abort", "ABORTED")])
def test_status_of_finish(finish: str, status: str) -> None:
    assert status_of_finish(finish) == status
