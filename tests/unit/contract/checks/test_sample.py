"""vime.contract.checks.sample on exact values: each per-sample check (VIM105-VIM111, VIM122,
VIM124, VIM127) called directly on one ``Sample``, with every finding's id, severity, where,
message and fix, the stage each one reads, and which case stops the check."""

from __future__ import annotations

import math
from typing import Any

import pytest

from vime.contract.checks.locations import Loc
from vime.contract.checks.sample import (
    OWNED_FIELDS,
    SAMPLE_CHECKS,
    check_sample,
    check_vim105,
    check_vim106,
    check_vim107,
    check_vim108,
    check_vim109,
    check_vim110,
    check_vim111,
    check_vim122,
    check_vim124,
    check_vim127,
    mask_looks_inverted,
)
from vime.contract.checks.settings import CheckSettings
from vime.contract.errors import Violation
from vime.contract.invariants import INVARIANTS
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

L = Loc("samples[0][1]", index=5)
S = CheckSettings()
TIS = CheckSettings(logprob_flags=("--use-tis",))
ST = Sample.Status


def good(**fields: Any) -> Sample:
    """A clean trained sample: prompt ids 5, 6, response ids 7, 8."""
    sample = Sample(prompt="p", tokens=[5, 6, 7, 8], response_length=2, loss_mask=[1, 1],
                    rollout_log_probs=[-0.1, -0.2], reward=1.0, status=ST.COMPLETED)
    for name, value in fields.items():
        setattr(sample, name, value)
    return sample


def v(inv_id: str, where: str, message: str, *, severity: str | None = None,
      fix: str | None = None) -> Violation:
    inv = INVARIANTS[inv_id]
    return Violation(inv_id, severity or inv.severity, f"samples[0][1]{where} (index=5)",  # type: ignore[arg-type]
                     message, fix=inv.fix if fix is None else fix)


def test_a_clean_sample_has_no_finding_at_either_stage() -> None:
    for stage in ("generate", "train"):
        assert check_sample(good(), L, S, stage) == []
        assert check_sample(good(), L, TIS, stage) == []
    assert list(SAMPLE_CHECKS) == ["VIM105", "VIM106", "VIM107", "VIM108", "VIM109", "VIM110",
                                   "VIM111", "VIM122", "VIM124", "VIM127"]
    assert OWNED_FIELDS == {"tokens", "response_length", "loss_mask", "rollout_log_probs",
                            "reward", "status"}


# ---- VIM105 -------------------------------------------------------------------------------

def test_vim105_type_errors_for_conversion_fields_and_warnings_for_the_others() -> None:
    assert check_vim105(good(remove_sample="yes"), L, S, "train") == [
        v("VIM105", ".remove_sample",
          "is 'yes' (str) (str is not an instance of bool), expected bool")]
    assert check_vim105(good(weight_versions=["a", 2]), L, S, "train") == [
        v("VIM105", ".weight_versions", "is a list of 2 item(s) (item 1 of list is not an "
          "instance of str), expected list[str]", severity="warning")]
    # None where the hint has no None
    assert check_vim105(good(weight_versions=None), L, S, "train") == [
        v("VIM105", ".weight_versions", "is None (NoneType) (None is not a list), expected "
          "list[str]", severity="warning")]


def test_vim105_every_bad_field_is_reported_in_field_order() -> None:
    found = check_vim105(good(prompt=3, remove_sample="no"), L, S, "train")
    assert [(x.where, x.severity) for x in found] == [
        ("samples[0][1].prompt (index=5)", "warning"),
        ("samples[0][1].remove_sample (index=5)", "error")]


def test_vim105_length_rules() -> None:
    assert check_vim105(good(teacher_log_probs=[-1.0]), L, S, "train") == [
        v("VIM105", ".teacher_log_probs", "is of length 1, expected length 2 (response_length)",
          fix="store one teacher_log_probs entry per response token")]
    assert check_vim105(good(teacher_log_probs=[-1.0, -1.0]), L, S, "train") == []
    assert check_vim105(good(rollout_top_p_token_offsets=[0, 1]), L, S, "train") == [
        v("VIM105", ".rollout_top_p_token_offsets",
          "is of length 2, expected length 3 (response_length+1)", severity="warning",
          fix="store one rollout_top_p_token_offsets entry per response token")]
    assert check_vim105(good(rollout_top_p_token_offsets=[0, 1, 2]), L, S, "train") == []
    assert check_vim105(good(rollout_routed_experts=[[1]] * 2), L, S, "train") == [
        v("VIM105", ".rollout_routed_experts", "is of length 2, expected length 3 (tokens-1)",
          severity="warning", fix="store one rollout_routed_experts entry per response token")]
    assert check_vim105(good(rollout_routed_experts=[[1]] * 3), L, S, "train") == []


def test_vim105_no_length_finding_without_a_known_length() -> None:
    # tokens not a list: no tokens-1 length; response_length not an int: no per-token length
    assert check_vim105(good(rollout_routed_experts=[[1]], tokens=(1, 2, 3)), L, S, "train") == []
    assert check_vim105(good(teacher_log_probs=[-1.0], response_length=2.0), L, S, "train") == []
    # a value without a length (Any-typed field) is not measured
    assert check_vim105(good(rollout_routed_experts=7), L, S, "train") == []


def test_vim105_a_wrong_type_is_not_also_a_wrong_length() -> None:
    found = check_vim105(good(teacher_log_probs=["x"]), L, S, "train")
    assert [(x.where, x.message[:20]) for x in found] == [
        ("samples[0][1].teacher_log_probs (index=5)", "is a list of 1 item(")]


# ---- VIM106 -------------------------------------------------------------------------------

def test_vim106_tokens_that_are_not_a_list() -> None:
    np = pytest.importorskip("numpy")
    assert check_vim106(good(tokens=(1, 2)), L, S, "train") == [
        v("VIM106", ".tokens", "is a tuple of 2 item(s), expected list[int] (prompt token ids "
          "then response token ids)")]
    assert check_vim106(good(tokens=np.array([1, 2])), L, S, "train") == [
        v("VIM106", ".tokens", f"is {np.array([1, 2])!r} (ndarray), expected list[int] (prompt "
          "token ids then response token ids)", fix="convert with .tolist()")]


def test_vim106_empty_and_bad_ids() -> None:
    np = pytest.importorskip("numpy")
    assert check_vim106(good(tokens=[]), L, S, "train") == [
        v("VIM106", ".tokens", "is empty; expected the prompt token ids followed by the "
          "response token ids")]
    assert check_vim106(good(tokens=[1, np.int64(2), "x"]), L, S, "train") == [
        v("VIM106", ".tokens[1]", f"is {np.int64(2)!r} (int64), expected an int token id (not "
          "bool)", fix="convert numpy/torch ids with .tolist()")]
    assert check_vim106(good(tokens=[1, 2.0]), L, S, "train") == [
        v("VIM106", ".tokens[1]", "is 2.0 (float), expected an int token id (not bool)")]
    assert check_vim106(good(tokens=[1, 2, False]), L, S, "train") == [
        v("VIM106", ".tokens[2]", "is False (bool), expected an int token id (not bool)")]


def test_vim106_ids_outside_the_vocabulary() -> None:
    assert check_vim106(good(tokens=[1, 9, 10, 11]), L, CheckSettings(vocab_size=10),
                        "train") == [
        v("VIM106", ".tokens[2]", "is 10, outside 0 <= id < vocab_size=10")]
    assert check_vim106(good(tokens=[1, 9]), L, CheckSettings(vocab_size=10), "train") == []
    assert check_vim106(good(tokens=[0, 1, -1, -2]), L, S, "train") == [
        v("VIM106", ".tokens[2]", "is -1, outside 0 <= id < a vocabulary")]
    assert check_vim106(good(tokens=[0, 10**6]), L, S, "train") == []


# ---- VIM107 -------------------------------------------------------------------------------

FIX107 = INVARIANTS["VIM107"].fix


def test_vim107_not_an_int() -> None:
    for rl, shown in ((None, "None (NoneType)"), (2.0, "2.0 (float)"), (True, "True (bool)")):
        assert check_vim107(good(response_length=rl), L, S, "train") == [
            v("VIM107", ".response_length", f"is {shown}, expected an int (number of response "
              "tokens)")]


def test_vim107_zero_is_an_error_except_an_aborted_or_failed_sample_after_generate() -> None:
    zero = ("is 0, expected 1 <= response_length <= len(tokens)=4: tokens[-0:] is not the "
            "response (tokens[-0:] is the whole sequence)")
    for status in (ST.ABORTED, ST.FAILED):
        assert check_vim107(good(response_length=0, status=status), L, S, "generate") == []
        assert check_vim107(good(response_length=0, status=status), L, S, "train") == [
            v("VIM107", ".response_length", zero)]
    for status in (ST.COMPLETED, ST.TRUNCATED, ST.PENDING):
        assert check_vim107(good(response_length=0, status=status), L, S, "generate") == [
            v("VIM107", ".response_length", zero)]
    assert [x.message[:40] for x in check_vim107(
        good(response_length=-1, status=ST.ABORTED), L, S, "generate")] == [
        "is -1, expected 1 <= response_length <= "]
    assert check_vim107(good(tokens=(1, 2), response_length=0), L, S, "train") == [
        v("VIM107", ".response_length", zero.replace("len(tokens)=4", "len(tokens)=None"))]


def test_vim107_against_the_length_of_tokens() -> None:
    assert check_vim107(good(response_length=5), L, S, "train") == [
        v("VIM107", ".response_length", "is 5, longer than len(tokens)=4")]
    assert check_vim107(good(response_length=3), L, S, "train") == []
    assert check_vim107(good(response_length=1), L, S, "train") == []
    assert check_vim107(good(response_length=4), L, S, "train") == [
        v("VIM107", ".response_length", "is 4 == len(tokens) although the prompt is non-empty: "
          "the prompt tokens are counted as response", severity="warning",
          fix="tokens must hold the prompt ids followed by the response ids; response_length "
              "counts only the generated ones")]
    assert check_vim107(good(response_length=4, prompt=""), L, S, "train") == []
    assert check_vim107(good(response_length=99, tokens=(1,)), L, S, "train") == []


# ---- VIM108 -------------------------------------------------------------------------------

def test_vim108_none_and_not_a_list() -> None:
    assert check_vim108(good(loss_mask=None), L, S, "train") == []
    assert check_vim108(good(loss_mask=(1, 1)), L, S, "train") == [
        v("VIM108", ".loss_mask", "is a tuple of 2 item(s), expected list[int] of 0/1 or None")]


def test_vim108_length_and_the_fix_for_the_side_that_is_wrong() -> None:
    assert check_vim108(good(loss_mask=[1, 1], response_length=0), L, S, "train") == [
        v("VIM108", ".loss_mask", "has 2 entries, expected response_length=0",
          fix="set sample.response_length to the number of response tokens (the mask has 2), "
              "or grow the sample with Sample.append_response_tokens(), which sets both")]
    assert check_vim108(good(loss_mask=[1, 1, 1]), L, S, "train") == [
        v("VIM108", ".loss_mask", "has 3 entries, expected response_length=2",
          fix="give loss_mask one entry per response token, or fix response_length if it is the "
              "one that is short (Sample.append_response_tokens() keeps both in step)")]
    assert check_vim108(good(loss_mask=[1]), L, S, "train") == [
        v("VIM108", ".loss_mask", "has 1 entries, expected response_length=2")]
    assert check_vim108(good(loss_mask=[1], response_length=1), L, S, "train") == []
    # response_length not an int: VIM107's, the mask is checked for its values only
    assert check_vim108(good(loss_mask=[1, 3, 1], response_length=None), L, S, "train") == [
        v("VIM108", ".loss_mask[1]", "is 3 (int), expected 0 or 1")]


def test_vim108_values() -> None:
    assert check_vim108(good(loss_mask=[1, 2]), L, S, "train") == [
        v("VIM108", ".loss_mask[1]", "is 2 (int), expected 0 or 1")]
    assert check_vim108(good(loss_mask=[0, 1.0]), L, S, "train") == [
        v("VIM108", ".loss_mask[1]", "is 1.0 (float), expected 0 or 1")]
    assert check_vim108(good(loss_mask=[True, 0]), L, S, "train") == []
    assert check_vim108(good(loss_mask=[1, 0]), L, S, "train") == []


def test_vim108_all_zero_warns_unless_removed() -> None:
    zero = v("VIM108", ".loss_mask", "is all zero (2 entries) but remove_sample is False: the "
             "sample trains nothing", severity="warning",
             fix="set remove_sample=True to leave it out on purpose, or mark the generated tokens "
                 "with 1")
    assert check_vim108(good(loss_mask=[0, 0]), L, S, "train") == [zero]
    assert check_vim108(good(loss_mask=[False, False]), L, S, "generate") == [zero]
    assert check_vim108(good(loss_mask=[0, 0], remove_sample=True), L, S, "train") == []
    assert check_vim108(good(loss_mask=[], response_length=0), L, S, "train") == []


# ---- VIM109 -------------------------------------------------------------------------------

def test_vim109_none_is_an_error_only_when_consumed() -> None:
    assert check_vim109(good(rollout_log_probs=None), L, S, "train") == []
    flags = CheckSettings(logprob_flags=("--use-tis", "--get-mismatch-metrics"))
    assert check_vim109(good(rollout_log_probs=None), L, flags, "train") == [
        v("VIM109", ".rollout_log_probs",
          "is None but --use-tis, --get-mismatch-metrics reads it")]


def test_vim109_not_a_list_and_length() -> None:
    assert check_vim109(good(rollout_log_probs=(-0.1, -0.2)), L, S, "train") == [
        v("VIM109", ".rollout_log_probs", "is a tuple of 2 item(s), expected list[float] or None")]
    assert check_vim109(good(rollout_log_probs=[-1.0], response_length=0), L, S, "train") == [
        v("VIM109", ".rollout_log_probs", "has 1 entries, expected response_length=0",
          fix="set sample.response_length to the number of response tokens (the log-probs have "
              "1), or grow the sample with Sample.append_response_tokens(), which sets both")]
    assert check_vim109(good(rollout_log_probs=[-1.0]), L, S, "train") == [
        v("VIM109", ".rollout_log_probs", "has 1 entries, expected response_length=2")]
    assert check_vim109(good(rollout_log_probs=[], response_length=0), L, TIS, "train") == []
    assert check_vim109(good(rollout_log_probs=[-1.0, 0.5], response_length=None), L, TIS,
                        "train") == [
        v("VIM109", ".rollout_log_probs[1]", "is 0.5, expected a natural-log probability <= 0")]


@pytest.mark.parametrize(("item", "problem"), [
    ("x", "is 'x' (str), expected a float log-prob"),
    (True, "is True (bool), expected a float log-prob"),
    (None, "is None (NoneType), expected a float log-prob"),
    (-math.inf, "is -inf, expected a finite log-prob"),
    (math.nan, "is nan, expected a finite log-prob"),
    (0.5, "is 0.5, expected a natural-log probability <= 0"),
    (1, "is 1, expected a natural-log probability <= 0"),
])
def test_vim109_values_error_when_consumed_and_warn_otherwise(item: Any, problem: str) -> None:
    sample = good(rollout_log_probs=[-1.0, item, 7.0])
    sample.response_length, sample.tokens = 3, [5, 6, 7, 8, 9]
    assert check_vim109(sample, L, TIS, "train") == [
        v("VIM109", ".rollout_log_probs[1]", problem)]
    assert check_vim109(sample, L, S, "train") == [
        v("VIM109", ".rollout_log_probs[1]", problem, severity="warning")]


def test_vim109_accepts_ints_and_rounding_up_to_eps() -> None:
    assert check_vim109(good(rollout_log_probs=[0, -3]), L, TIS, "train") == []
    assert check_vim109(good(rollout_log_probs=[1e-6, -0.5]), L, TIS, "train") == []
    assert [x.message for x in check_vim109(good(rollout_log_probs=[2e-6, -0.5]), L, TIS,
                                            "train")] == [
        "is 2e-06, expected a natural-log probability <= 0"]


# ---- VIM110 -------------------------------------------------------------------------------

NONE_FIX = ("set sample.reward to a float on every sample before it is returned (the default "
            "rollout scores samples with --rm-type or --custom-rm-path)")


def test_vim110_none_after_generate_is_fine_and_in_train_output_an_error() -> None:
    assert check_vim110(good(reward=None), L, S, "generate") == []
    assert check_vim110(good(reward=None), L, S, "train") == [
        v("VIM110", ".reward", "is None; every sample needs a reward before training",
          fix=NONE_FIX)]
    assert check_vim110(good(reward=None, status=ST.ABORTED), L, S, "train") == [
        v("VIM110", ".reward", "is None; every sample needs a reward before training (the "
          "sample is ABORTED: drop or recycle aborted groups, or score them)", fix=NONE_FIX)]


def test_vim110_values() -> None:
    assert check_vim110(good(reward=1), L, S, "train") == []
    assert check_vim110(good(reward=math.inf), L, S, "generate") == [
        v("VIM110", ".reward", "is inf, expected a finite real",
          fix="store a finite float (check for division by zero, NaN or inf)")]
    assert check_vim110(good(reward=True), L, S, "train") == [
        v("VIM110", ".reward", "is a bool (True); store a float (1.0 / 0.0)",
          severity="warning", fix="store a float (1.0 / 0.0), not a bool")]
    assert check_vim110(good(reward={"acc": 1.0}), L, CheckSettings(reward_key="acc"),
                        "train") == []
    assert check_vim110(good(reward={"b": 1.0}), L, CheckSettings(reward_key="acc"),
                        "train") == [
        v("VIM110", ".reward", "is a dict without the key 'acc' (--reward-key); it has ['b']",
          fix="store 'acc' in every reward dict, or pass --reward-key naming one of ['b']")]


def test_vim110_leaves_array_rewards_to_vim122_in_train_output() -> None:
    np = pytest.importorskip("numpy")
    assert check_vim110(good(reward=np.zeros(2)), L, S, "train") == []
    keyed = CheckSettings(reward_key="acc")
    assert check_vim110(good(reward={"acc": np.zeros(2)}), L, keyed, "train") == []
    # after generate VIM122 does not run: the array is VIM110's
    assert [x.id for x in check_vim110(good(reward=np.zeros(2)), L, S, "generate")] == ["VIM110"]


# ---- VIM111 -------------------------------------------------------------------------------

FIX111 = INVARIANTS["VIM111"].fix


def test_vim111_not_a_member_names_the_member_a_string_means() -> None:
    assert check_vim111(good(status="Completed"), L, S, "train") == [
        v("VIM111", ".status", "is 'Completed' (str), expected a Sample.Status member",
          fix="assign Sample.Status.COMPLETED")]
    assert check_vim111(good(status="aborted"), L, S, "generate") == [
        v("VIM111", ".status", "is 'aborted' (str), expected a Sample.Status member",
          fix="assign Sample.Status.ABORTED")]
    assert check_vim111(good(status="done"), L, S, "train") == [
        v("VIM111", ".status", "is 'done' (str), expected a Sample.Status member")]
    assert check_vim111(good(status=3), L, S, "train") == [
        v("VIM111", ".status", "is 3 (int), expected a Sample.Status member")]


def test_vim111_pending_and_trainable_aborted() -> None:
    for stage in ("generate", "train"):
        assert check_vim111(good(status=ST.PENDING), L, S, stage) == [
            v("VIM111", ".status", "is PENDING after generation (it trains as not truncated)",
              severity="warning")]
    aborted = v("VIM111", ".status", "is ABORTED but the sample is trainable (remove_sample is "
                "False and its loss_mask has ones)", severity="warning",
                fix="set remove_sample=True on aborted samples, or recycle the group with "
                    "--partial-rollout")
    assert check_vim111(good(status=ST.ABORTED), L, S, "train") == [aborted]
    assert check_vim111(good(status=ST.ABORTED, loss_mask=None), L, S, "train") == [aborted]
    assert check_vim111(good(status=ST.ABORTED, loss_mask=[0, 1]), L, S, "train") == [aborted]
    assert check_vim111(good(status=ST.ABORTED), L, S, "generate") == []
    assert check_vim111(good(status=ST.ABORTED, loss_mask=[0, 0]), L, S, "train") == []
    assert check_vim111(good(status=ST.ABORTED, remove_sample=True), L, S, "train") == []
    for status in (ST.COMPLETED, ST.TRUNCATED, ST.FAILED):
        assert check_vim111(good(status=status), L, S, "train") == []


# ---- VIM122 -------------------------------------------------------------------------------

TAIL = ", not a Python number (only numpy.float64, a float subclass, is tolerated)"


def test_vim122_numpy_scalars_and_arrays_in_train_output() -> None:
    np = pytest.importorskip("numpy")
    assert check_vim122(good(reward=np.float32(1.0)), L, S, "train") == [
        v("VIM122", ".reward", "is a numpy.float32 scalar" + TAIL,
          fix="store float(x) (x.item() for a one-element tensor or array)")]
    assert check_vim122(good(reward=np.zeros(3)), L, S, "train") == [
        v("VIM122", ".reward", "is a numpy.ndarray of shape (3,), dtype float64" + TAIL,
          fix="reduce the 3 elements to the one number to train on (e.g. float(x.mean())), "
              "then store that float")]
    assert check_vim122(good(reward=np.zeros(0)), L, S, "train") == [
        v("VIM122", ".reward", "is a numpy.ndarray of shape (0,), dtype float64" + TAIL,
          fix="store one Python float per sample")]
    assert check_vim122(good(reward=np.float32(1.0)), L, S, "generate") == []
    assert check_vim122(good(reward=np.float64(1.0)), L, S, "train") == []
    assert check_vim122(good(reward=1), L, S, "train") == []


def test_vim122_reads_the_reward_key_of_a_dict() -> None:
    np = pytest.importorskip("numpy")
    keyed = CheckSettings(reward_key="acc")
    assert check_vim122(good(reward={"acc": np.float32(1.0)}), L, keyed, "train") == [
        v("VIM122", ".reward['acc']", "is a numpy.float32 scalar" + TAIL,
          fix="store float(x) (x.item() for a one-element tensor or array)")]
    assert check_vim122(good(reward={"acc": 1.0, "b": np.zeros(2)}), L, keyed, "train") == []
    assert check_vim122(good(reward={"acc": np.float32(1.0)}), L, S, "train") == []
    assert check_vim122(good(reward={"b": np.float32(1.0)}), L, keyed, "train") == []


# ---- VIM124 -------------------------------------------------------------------------------

FIX124 = INVARIANTS["VIM124"].fix


def test_vim124_budgets() -> None:
    s = CheckSettings(max_response_len=2, max_context_len=5)
    sample = good(response_length=3, tokens=[1] * 6, loss_mask=[1, 0, 1])
    assert check_vim124(sample, L, s, "train") == [
        v("VIM124", ".response_length", "is 3 tokens, 1 over --rollout-max-response-len=2"),
        v("VIM124", ".tokens", "has 6 tokens (3 prompt + 3 response), 1 over "
          "--rollout-max-context-len=5")]
    assert check_vim124(sample, L, s, "generate") == []
    assert check_vim124(sample, L, CheckSettings(max_response_len=3, max_context_len=6),
                        "train") == []
    assert check_vim124(sample, L, S, "train") == []
    # the split is left out where response_length does not fit in tokens
    long = good(response_length=9, tokens=[1] * 6, loss_mask=None)
    assert check_vim124(long, L, CheckSettings(max_context_len=5), "train") == [
        v("VIM124", ".tokens", "has 6 tokens, 1 over --rollout-max-context-len=5")]
    assert check_vim124(good(response_length=6, tokens=[1] * 6, loss_mask=None), L,
                        CheckSettings(max_context_len=4), "train") == [
        v("VIM124", ".tokens", "has 6 tokens (0 prompt + 6 response), 2 over "
          "--rollout-max-context-len=4")]
    assert check_vim124(good(response_length=0, tokens=[1] * 6, loss_mask=None), L,
                        CheckSettings(max_context_len=4), "train") == [
        v("VIM124", ".tokens", "has 6 tokens, 2 over --rollout-max-context-len=4")]
    assert check_vim124(good(response_length=3.0, tokens=(1,) * 9, loss_mask=None), L,
                        CheckSettings(max_response_len=2, max_context_len=4), "train") == []


def test_vim124_trailing_masked_tokens() -> None:
    trail = v("VIM124", ".loss_mask[1]", "ends in 2 masked tokens (loss_mask 0 at response "
              "positions 1-2, after the last trainable token at 0): an observation appended "
              "after the last generated turn is never answered", severity="warning",
              fix="end the turn loop on a model turn: do not append an observation after the "
                  "last generate call")
    sample = good(response_length=3, tokens=[1] * 6, loss_mask=[1, 0, 0])
    assert check_vim124(sample, L, S, "train") == [trail]
    sample = good(response_length=4, tokens=[1] * 6, loss_mask=[0, 1, 1, 0])
    assert [x.where for x in check_vim124(sample, L, S, "train")] == [
        "samples[0][1].loss_mask[3] (index=5)"]
    assert "ends in 1 masked tokens (loss_mask 0 at response positions 3-3, after the last " \
           "trainable token at 2)" in check_vim124(sample, L, S, "train")[0].message
    for quiet in (good(response_length=3, tokens=[1] * 6, loss_mask=[1, 0, 0],
                       remove_sample=True),
                  good(response_length=3, tokens=[1] * 6, loss_mask=[0, 0, 0]),
                  good(response_length=3, tokens=[1] * 6, loss_mask=[0, 0, 1]),
                  good(response_length=4, tokens=[1] * 6, loss_mask=[1, 0, 0]),
                  good(response_length=3.0, tokens=[1] * 6, loss_mask=[1, 0, 0]),
                  good(response_length=0, tokens=[1] * 6, loss_mask=[])):
        assert check_vim124(quiet, L, S, "train") == []


# ---- VIM127 -------------------------------------------------------------------------------

def inverted(**fields: Any) -> Sample:
    return good(**{"loss_mask": [0, 1, 1], "rollout_log_probs": [-0.5, 0.0, 0.0],
                   "response_length": 3, "tokens": [1] * 5, **fields})


def test_vim127_an_inverted_mask_warns_in_train_output() -> None:
    assert check_vim127(inverted(), L, S, "train") == [
        v("VIM127", ".loss_mask", "looks inverted: all 2 trainable tokens (mask 1) have "
          "rollout_log_probs exactly 0.0, the placeholder of environment tokens, while the 1 "
          "masked tokens (mask 0) have real negative log-probs: the model's tokens are masked "
          "and the environment's are trained")]
    assert check_vim127(inverted(), L, S, "generate") == []
    assert check_vim127(inverted(loss_mask=None), L, S, "train") == []


@pytest.mark.parametrize(("mask", "lp", "looks"), [
    ([0, 1, 1], [-0.5, 0.0, 0.0], True),
    ([1, 0, 1, 0], [0.0, -0.5, 0.0, -2.0], True),
    ([True, False, True], [0.0, -1.0, 0.0], True),
    ([0, 1], [-0.5, 0.0], False),                      # one trainable token only
    ([1, 1, 1], [0.0, 0.0, 0.0], False),               # no masked token to compare with
    ([0, 0, 0], [-0.5, 0.0, 0.0], False),              # no trainable token
    ([0, 1, 1], [-0.5, -0.1, 0.0], False),             # a real log-prob on a trained token
    ([0, 1, 1], [-0.5, 0.0, -0.1], False),
    ([0, 0, 1, 1], [-0.5, 0.0, 0.0, 0.0], False),      # a masked token at 0.0
    ([0, 1, 1], [0.0, 0.0, 0.0], False),
    ([0, 1, 1], [-0.5, 0.0], False),                   # lengths differ
    ([0, 1, 1], [-0.5, 0.0, 0.0, 0.0], False),
    ([0, 1, 1], (-0.5, 0.0, 0.0), False),              # not lists
    ((0, 1, 1), [-0.5, 0.0, 0.0], False),
    ([0, 1, 1], ["x", 0.0, 0.0], False),               # malformed: VIM109's
    ([0, 1, 1], [None, 0.0, 0.0], False),
])
def test_mask_looks_inverted(mask: Any, lp: Any, looks: bool) -> None:
    sample = Sample(tokens=[1] * 8, response_length=3, loss_mask=mask, rollout_log_probs=lp)
    assert mask_looks_inverted(sample) is looks


# ---- check_sample -------------------------------------------------------------------------

def test_check_sample_runs_every_check_in_id_order_but_the_skipped_ones() -> None:
    sample = good(remove_sample="x", tokens=[1, 2, 3, -1], rollout_log_probs=[-1.0, 0.5],
                  status=ST.PENDING, reward=None)
    assert [x.id for x in check_sample(sample, L, S, "train")] == [
        "VIM105", "VIM106", "VIM109", "VIM110", "VIM111"]
    assert [x.id for x in check_sample(sample, L, S, "train",
                                       frozenset({"VIM106", "VIM109"}))] == [
        "VIM105", "VIM110", "VIM111"]
    assert [x.id for x in check_sample(sample, L, S, "generate")] == [
        "VIM105", "VIM106", "VIM109", "VIM111"]


def test_tokens_ok_proves_long_columns_and_leaves_the_rest_to_the_exact_scan() -> None:
    from vime.contract.checks.sample import _COLUMN_MIN, tokens_ok
    pytest.importorskip("numpy")
    n = _COLUMN_MIN + 4
    ids = [0, 1, 2] + list(range(n - 3))
    # a long valid column (ids 0 and 1 included) is proven, with or without a vocab
    assert tokens_ok(ids, None) is True
    assert tokens_ok(ids, n - 3) is True
    assert tokens_ok([0] * n, 1) is True
    # an id at the vocab size, a negative one, a bool among the 0s and 1s, a float, or an id
    # over int64 is not proven
    assert tokens_ok(ids, n - 4) is False
    assert tokens_ok([-1] + ids[1:], None) is False
    assert tokens_ok([True] + ids[1:], None) is False
    assert tokens_ok([1.0] + ids[1:], None) is False
    assert tokens_ok([2 ** 63] + ids[1:], None) is False
    # short columns: builtins
    assert tokens_ok([0, 1, 2], 3) is True
    assert tokens_ok([0, 1, 3], 3) is False
    assert tokens_ok([], None) is False


# ---- the fast paths' fallbacks on exact values ----------------------------------------------
# (each test below fails on a mutant that mutation testing found surviving the ones above)

def test_vim105_a_sample_missing_a_field_is_not_proven_clean() -> None:
    # e.g. a Sample unpickled from a version without the field: the exact scan reports it
    sample = good()
    del sample.metadata
    assert check_vim105(sample, L, S, "train") == [
        v("VIM105", ".metadata", "is None (NoneType) (None is not a dict), expected "
          "dict[str, Any]")]                      # an error: conversion reads metadata


def test_vim106_int_subclass_ids_are_ints() -> None:
    import enum

    class Special(enum.IntEnum):
        BOS = 1
        EOS = 2

    assert check_vim106(good(tokens=[Special.BOS, 5, 6, Special.EOS]), L, S, "train") == []
    assert check_vim106(good(tokens=[Special.BOS, 5, 6, True]), L, S, "train") == [
        v("VIM106", ".tokens[3]", "is True (bool), expected an int token id (not bool)")]


def test_vim108_a_mask_of_one_other_value_and_a_one_token_response() -> None:
    assert check_vim108(good(loss_mask=[2, 2]), L, S, "train") == [
        v("VIM108", ".loss_mask[0]", "is 2 (int), expected 0 or 1")]
    assert check_vim108(good(loss_mask=[1, 1], response_length=1), L, S, "train") == [
        v("VIM108", ".loss_mask", "has 2 entries, expected response_length=1",
          fix="give loss_mask one entry per response token, or fix response_length if it is the "
              "one that is short (Sample.append_response_tokens() keeps both in step)")]


def test_vim109_float_subclasses_up_to_eps_and_a_one_token_response() -> None:
    import numpy as np

    # numpy.float64 items: not proven by the fast path, accepted by the exact scan
    lp = [np.float64(-0.5), 1e-6]
    assert check_vim109(good(rollout_log_probs=lp), L, TIS, "train") == []
    assert [x.message for x in check_vim109(good(rollout_log_probs=[np.float64(-0.5), 2e-6]),
                                            L, TIS, "train")] == [
        "is 2e-06, expected a natural-log probability <= 0"]
    assert check_vim109(good(rollout_log_probs=[-1.0, -2.0], response_length=1), L, S,
                        "train") == [
        v("VIM109", ".rollout_log_probs", "has 2 entries, expected response_length=1")]


def test_vim122_an_array_reward_with_a_reward_key_is_named_as_the_reward() -> None:
    import numpy as np

    keyed = CheckSettings(reward_key="acc")
    assert [x.where for x in check_vim122(good(reward=np.float32(1.0)), L, keyed, "train")] == [
        "samples[0][1].reward (index=5)"]


def test_vim124_splits_a_one_token_response_from_the_prompt() -> None:
    assert check_vim124(good(response_length=1, tokens=[1] * 6, loss_mask=None), L,
                        CheckSettings(max_context_len=4), "train") == [
        v("VIM124", ".tokens", "has 6 tokens (5 prompt + 1 response), 2 over "
          "--rollout-max-context-len=4")]


def test_proven_clean_proves_nothing_on_log_probs_that_are_not_a_list() -> None:
    from vime.contract.checks.sample import proven_clean

    assert proven_clean(good()) == frozenset({"VIM109", "VIM173"})
    assert proven_clean(good(rollout_log_probs=(-0.1, -0.2))) == frozenset()
    assert proven_clean(good(rollout_log_probs=None)) == frozenset()
