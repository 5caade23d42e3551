"""The column proofs of the per-token checks (``tokens_ok``, ``_mask_ok``, ``logprob_bound``,
``proven_clean``): a proof holds only where the exact per-item scan finds nothing, clean
columns are proven (the fast path is taken), and a bad item is still named by the scan with
the message of before."""

from __future__ import annotations

import enum
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from runtime_helpers import findings, make_args, make_groups, rejects, train_output

from vime.contract.checks.locations import Loc
from vime.contract.checks.sample import (
    LOGPROB_EPS,
    _mask_ok,
    check_vim106,
    check_vim108,
    check_vim109,
    logprob_bound,
    proven_clean,
    tokens_ok,
)
from vime.contract.checks.settings import CheckSettings
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


class Tok(enum.IntEnum):
    BOS = 1


def _exact_tokens_ok(xs: list[Any], vocab: int | None) -> bool:
    return bool(xs) and all(isinstance(x, int) and not isinstance(x, bool) for x in xs) and \
        all(0 <= x and (vocab is None or x < vocab) for x in xs)


def _exact_mask_ok(xs: list[Any]) -> bool:
    return all(type(x) in (int, bool) and x in (0, 1) for x in xs)


_ITEMS = st.one_of(
    st.integers(-3, 40), st.sampled_from([0, 1, True, False, 2**70, -(2**70)]),
    st.floats(allow_nan=True), st.sampled_from([np.int64(3), np.int32(0), np.float64(-0.5),
                                                Tok.BOS, "7", None, 1.0, 0.0, -0.0]))


@given(st.lists(_ITEMS, max_size=12), st.sampled_from([None, 1, 2, 41]), st.integers(1, 30))
def test_tokens_proof_implies_the_exact_scan(xs: list[Any], vocab: int | None,
                                             times: int) -> None:
    xs = xs * times                                  # short lists and numpy columns
    if tokens_ok(xs, vocab):
        assert _exact_tokens_ok(xs, vocab)


@given(st.lists(st.integers(0, 40), min_size=1, max_size=50), st.integers(1, 20))
def test_clean_token_ids_are_proven(xs: list[int], times: int) -> None:
    xs = xs * times
    assert tokens_ok(xs, 41)
    assert not tokens_ok(xs, max(xs))          # the largest id is outside a smaller vocabulary


@given(st.lists(_ITEMS, max_size=12), st.integers(1, 30))
def test_mask_proof_implies_the_exact_scan(xs: list[Any], times: int) -> None:
    xs = xs * times
    if _mask_ok(xs):
        assert _exact_mask_ok(xs) or any(type(x) is Tok for x in xs)


@given(st.lists(st.sampled_from([0, 1, True, False]), max_size=50))
def test_clean_masks_are_proven(xs: list[Any]) -> None:
    assert _mask_ok(xs)


@given(st.lists(_ITEMS, max_size=12), st.integers(1, 30))
def test_logprob_bound_is_the_max_of_finite_reals(xs: list[Any], times: int) -> None:
    xs = xs * times                                  # short lists and numpy columns
    bound = logprob_bound(xs)
    if bound is not None:
        assert all(isinstance(x, (int, float)) and math.isfinite(x) for x in xs)
        assert bound == max(xs)


@given(st.lists(st.floats(-20, -1e-9), min_size=1, max_size=50))
def test_negative_log_probs_prove_vim109_and_vim173(lp: list[float]) -> None:
    sample = Sample(tokens=[1] * (len(lp) + 1), response_length=len(lp), rollout_log_probs=lp)
    assert proven_clean(sample) == {"VIM109", "VIM173"}


def test_proven_clean_needs_a_list_of_the_response_length() -> None:
    lp = [-0.5, 0.0, -0.25]
    assert proven_clean(Sample(tokens=[1] * 4, response_length=3, rollout_log_probs=lp)) == \
        {"VIM109"}                                   # an exact 0.0: VIM173 still looks
    for bad in ([-0.5, math.nan, -0.1], [-0.5, 0.7, -0.1], [-0.5, "x", -0.1], [-0.5, -0.1]):
        assert proven_clean(Sample(tokens=[1] * 4, response_length=3,
                                   rollout_log_probs=bad)) == set()
    assert proven_clean(Sample(tokens=[1] * 4, response_length=3)) == set()
    assert LOGPROB_EPS > 0 and proven_clean(Sample(
        tokens=[1] * 4, response_length=3, rollout_log_probs=[-0.1, LOGPROB_EPS, -0.2])) == \
        {"VIM109"}


_LOC = Loc("samples[0][0]", index=0)
_RL = 300


def _long(**fields: Any) -> Sample:
    sample = Sample(group_index=0, index=0, prompt="p", tokens=[5] * 20 + [7] * _RL,
                    response_length=_RL, loss_mask=[1] * _RL,
                    rollout_log_probs=[-0.5] * _RL, status=Sample.Status.COMPLETED)
    for name, value in fields.items():
        setattr(sample, name, value)
    return sample


@pytest.mark.parametrize(("item", "problem"), [
    (True, "is True (bool), expected an int token id (not bool)"),
    (False, "is False (bool), expected an int token id (not bool)"),
    (np.int64(5), "is np.int64(5) (int64), expected an int token id (not bool)"),
    (5.0, "is 5.0 (float), expected an int token id (not bool)"),
    (-1, "is -1, outside 0 <= id < vocab_size=100"),
    (100, "is 100, outside 0 <= id < vocab_size=100"),
    (2**70, f"is {2**70}, outside 0 <= id < vocab_size=100"),
])
def test_a_bad_token_among_ids_0_and_1_is_named_by_the_scan(item: Any, problem: str) -> None:
    toks = [0, 1] * 100 + [7] * 100
    toks[150] = item
    found = check_vim106(_long(tokens=toks), _LOC, CheckSettings(vocab_size=100), "train")
    assert [(v.id, v.where, v.message) for v in found] == \
        [("VIM106", "samples[0][0].tokens[150] (index=0)", problem.replace(
            "np.int64(5) (int64)", f"{np.int64(5)!r} (int64)"))]


def test_token_ids_0_and_1_and_int_subclasses_pass() -> None:
    toks = [0, 1, Tok.BOS] * 100 + [99]
    assert check_vim106(_long(tokens=toks), _LOC, CheckSettings(vocab_size=100), "train") == []
    assert tokens_ok([0, 1] * 100 + [99], 100)
    big = [2**70] * 300        # over int64: no column, the scan accepts it without a vocabulary
    assert not tokens_ok(big, None)
    assert tokens_ok(big[:3], None)                  # short lists: builtin min/max, exact
    assert check_vim106(_long(tokens=big), _LOC, CheckSettings(), "train") == []
    assert [v.message for v in check_vim106(_long(tokens=big), _LOC, CheckSettings(
        vocab_size=100), "train")] == [f"is {2**70}, outside 0 <= id < vocab_size=100"]


@pytest.mark.parametrize(("item", "problem"), [
    (2, "is 2 (int), expected 0 or 1"),
    (1.0, "is 1.0 (float), expected 0 or 1"),
    (256, "is 256 (int), expected 0 or 1"),
    (-1, "is -1 (int), expected 0 or 1"),
    (np.int64(1), f"is {np.int64(1)!r} (int64), expected 0 or 1"),
])
@pytest.mark.parametrize("rest", [1, 0])
def test_a_bad_mask_value_is_named_by_the_scan(item: Any, problem: str, rest: int) -> None:
    mask = [1] * _RL
    mask[3] = rest
    mask[200] = item
    found = check_vim108(_long(loss_mask=mask), _LOC, CheckSettings(), "train")
    assert [(v.id, v.where, v.message) for v in found] == \
        [("VIM108", "samples[0][0].loss_mask[200] (index=0)", problem)]


def test_masks_of_bools_and_mixed_zeros_pass() -> None:
    mask = [True, False, 1, 0] * (_RL // 4)
    assert check_vim108(_long(loss_mask=mask), _LOC, CheckSettings(), "train") == []


@pytest.mark.parametrize(("item", "problem"), [
    (math.nan, "is nan, expected a finite log-prob"),
    (math.inf, "is inf, expected a finite log-prob"),
    (0.7, "is 0.7, expected a natural-log probability <= 0"),
    ("-0.5", "is '-0.5' (str), expected a float log-prob"),
    (True, "is True (bool), expected a float log-prob"),
])
def test_a_bad_log_prob_is_named_by_the_scan(item: Any, problem: str) -> None:
    lp = [-0.5] * _RL
    lp[123] = item
    sample = _long(rollout_log_probs=lp)
    assert proven_clean(sample) == set()
    found = check_vim109(sample, _LOC, CheckSettings(logprob_flags=("--use-tis",)), "train")
    assert [(v.id, v.severity, v.where, v.message) for v in found] == \
        [("VIM109", "error", "samples[0][0].rollout_log_probs[123] (index=0)", problem)]


def test_a_placeholder_run_is_still_reported_when_vim109_is_proven() -> None:
    groups = make_groups(response_length=12)
    groups[1][2].rollout_log_probs = [-0.5] * 2 + [0.0] * 10
    assert proven_clean(groups[1][2]) == {"VIM109"}
    found = findings(train_output(groups), make_args(use_tis=True))
    assert [(v.id, v.where) for v in found] == \
        [("VIM173", "samples[1][2].rollout_log_probs[2] (index=6)")]


def test_a_proven_batch_reports_the_first_bad_sample_as_before() -> None:
    groups = make_groups()
    groups[1][3].tokens[-1] = True
    err = rejects(train_output(groups))
    assert err.ids == ["VIM106"]
    assert "samples[1][3].tokens[5] (index=7) is True (bool)" in str(err)


def test_vim105_proof_holds_only_for_clean_samples() -> None:
    from vime.contract.checks.sample import _vim105_clean, check_vim105

    sample = _long()
    assert _vim105_clean(sample) and check_vim105(sample, _LOC, CheckSettings(), "train") == []
    sample.teacher_log_probs = [-0.5] * _RL      # a length-ruled field set: the loop checks it
    assert not _vim105_clean(sample)
    assert check_vim105(sample, _LOC, CheckSettings(), "train") == []
    sample.teacher_log_probs = [-0.5] * (_RL - 1)
    assert [v.where for v in check_vim105(sample, _LOC, CheckSettings(), "train")] == \
        ["samples[0][0].teacher_log_probs (index=0)"]
    for name, bad in (("prompt", 3), ("remove_sample", "no"), ("weight_versions", [1]),
                      ("metadata", {1: 2})):
        sample = _long(**{name: bad})
        assert not _vim105_clean(sample)
        assert [v.where for v in check_vim105(sample, _LOC, CheckSettings(), "train")] == \
            [f"samples[0][0].{name} (index=0)"]


def test_vim105_proof_leaves_a_length_ruled_any_field_to_the_loop() -> None:
    from vime.contract.checks.sample import _vim105_clean, check_vim105

    sample = _long(rollout_routed_experts=[[0]] * 3)       # Any-typed, tokens-1 entries due
    assert not _vim105_clean(sample)
    assert [v.where for v in check_vim105(sample, _LOC, CheckSettings(), "train")] == \
        ["samples[0][0].rollout_routed_experts (index=0)"]
