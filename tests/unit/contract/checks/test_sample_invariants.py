"""Per-sample invariants VIM105-VIM111 on the train output: one passing and one failing case
each (the failing ones check the id and the location in the message)."""

from __future__ import annotations

import math

import pytest
from runtime_helpers import findings, make_args, make_groups, only, rejects, train_output

from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def test_valid_batch_has_no_findings() -> None:
    assert findings(train_output(make_groups())) == []


# ---- VIM105 field types ---------------------------------------------------------------------

def test_vim105_rejects_string_remove_sample() -> None:
    groups = make_groups()
    groups[1][2].remove_sample = "yes"
    err = rejects(train_output(groups))
    assert err.ids == ["VIM105"]
    assert "VIM105 error: samples[1][2].remove_sample (index=6) is 'yes' (str)" in str(err)
    assert "expected bool" in str(err)


def test_vim105_accepts_declared_types() -> None:
    groups = make_groups()
    groups[0][0].weight_versions = ["3"]
    groups[0][0].metadata = {"rm_type": None, "round_number": None}
    groups[0][0].session_id = "abc"
    for s in groups[0][1:] + groups[1]:
        s.metadata = {"round_number": None}
    assert only(findings(train_output(groups)), "VIM105") == []


def test_vim105_warns_on_non_conversion_field() -> None:
    groups = make_groups()
    groups[0][3].weight_versions = ["v1", 2]
    found = only(findings(train_output(groups)), "VIM105")
    assert [v.severity for v in found] == ["warning"]
    assert "samples[0][3].weight_versions (index=3)" in found[0].format()
    assert "item 1" in found[0].message


def test_vim105_checks_dataclass_fields() -> None:
    groups = make_groups()
    groups[1][0].prefix_cache_info.cached_tokens = "12"
    found = only(findings(train_output(groups)), "VIM105")
    assert len(found) == 1
    assert found[0].where == "samples[1][0].prefix_cache_info (index=4)"
    assert "cached_tokens" in found[0].message


def test_vim105_rejects_teacher_log_probs_of_wrong_length() -> None:
    groups = make_groups(teacher_log_probs=[-1.0, -1.0, -1.0])
    groups[0][1].teacher_log_probs = [-1.0]
    err = rejects(train_output(groups))
    assert "VIM105 error: samples[0][1].teacher_log_probs (index=1) is of length 1" in str(err)


# ---- VIM106 tokens --------------------------------------------------------------------------

def test_vim106_rejects_string_token() -> None:
    groups = make_groups()
    groups[1][3].tokens[4] = "a"
    err = rejects(train_output(groups))
    assert "VIM106 error: samples[1][3].tokens[4] (index=7) is 'a' (str)" in str(err)


def test_vim106_rejects_bool_token() -> None:
    groups = make_groups()
    groups[0][0].tokens[0] = True
    assert "samples[0][0].tokens[0] (index=0) is True (bool)" in str(rejects(train_output(groups)))


def test_vim106_rejects_empty_tokens() -> None:
    groups = make_groups()
    groups[0][2].tokens = []
    err = rejects(train_output(groups))
    assert "VIM106" in err.ids and "samples[0][2].tokens (index=2) is empty" in str(err)


def test_vim106_rejects_token_outside_vocabulary() -> None:
    groups = make_groups()
    groups[0][1].tokens[-1] = 500
    err = rejects(train_output(groups), make_args(vocab_size=256))
    assert "samples[0][1].tokens[5] (index=1) is 500, outside 0 <= id < vocab_size=256" in str(err)


def test_vim106_rejects_negative_token_without_vocab_size() -> None:
    groups = make_groups()
    groups[0][1].tokens[1] = -1
    assert "tokens[1] (index=1) is -1" in str(rejects(train_output(groups)))


def test_vim106_accepts_int_tokens_within_vocabulary() -> None:
    assert only(findings(train_output(make_groups()), make_args(vocab_size=64)), "VIM106") == []


# ---- VIM107 response_length -----------------------------------------------------------------

def test_vim107_rejects_zero_response_length() -> None:
    groups = make_groups()
    s = groups[0][0]
    s.response_length, s.rollout_log_probs = 0, []
    err = rejects(train_output(groups))
    assert "VIM107 error: samples[0][0].response_length (index=0) is 0" in str(err)
    assert "tokens[-0:]" in str(err)


def test_vim107_rejects_response_longer_than_tokens() -> None:
    groups = make_groups()
    groups[1][1].response_length = 9
    groups[1][1].rollout_log_probs = [-0.1] * 9
    err = rejects(train_output(groups))
    assert "samples[1][1].response_length (index=5) is 9, longer than len(tokens)=6" in str(err)


def test_vim107_rejects_float_response_length() -> None:
    groups = make_groups()
    groups[1][1].response_length = 3.0
    assert "samples[1][1].response_length (index=5) is 3.0 (float)" in str(
        rejects(train_output(groups)))


def test_vim107_warns_when_prompt_counted_as_response() -> None:
    groups = make_groups()
    s = groups[0][3]
    s.response_length, s.rollout_log_probs = 6, [-0.1] * 6
    found = only(findings(train_output(groups)), "VIM107")
    assert [(v.severity, v.where) for v in found] == [
        ("warning", "samples[0][3].response_length (index=3)")]


def test_vim107_accepts_response_inside_tokens() -> None:
    assert only(findings(train_output(make_groups())), "VIM107") == []


# ---- VIM108 loss_mask -----------------------------------------------------------------------

def test_vim108_rejects_short_loss_mask() -> None:
    groups = make_groups()
    groups[1][2].loss_mask = [1, 1]
    err = rejects(train_output(groups))
    assert err.ids == ["VIM108"]
    assert ("VIM108 error: samples[1][2].loss_mask (index=6) has 2 entries, expected "
            "response_length=3") in str(err)
    assert "append_response_tokens" in str(err)


def test_vim108_fix_follows_which_side_is_wrong() -> None:
    # response_length never set: the fix is to set it, not to extend the mask
    groups = make_groups()
    groups[1][2].loss_mask = [1, 1, 1]
    groups[1][2].response_length = 0
    found = findings(train_output(groups))
    (unset,) = only(found, "VIM108")
    assert unset.message.endswith("has 3 entries, expected response_length=0")
    assert unset.fix.startswith("set sample.response_length to the number of response tokens "
                                "(the mask has 3)")
    assert "extend loss_mask" not in unset.fix
    (lp,) = only(found, "VIM109")   # the log-probs: the same case, the same fix
    assert lp.fix.startswith("set sample.response_length to the number of response tokens")
    # a mask longer than the response: extending it is no fix either
    groups = make_groups()
    groups[0][1].loss_mask = [1, 1, 1, 1]
    (long,) = only(findings(train_output(groups)), "VIM108")
    assert long.fix.startswith("give loss_mask one entry per response token")
    assert "extend loss_mask" not in long.fix


def test_vim108_rejects_non_binary_value() -> None:
    groups = make_groups()
    groups[0][0].loss_mask = [1, 2, 1]
    assert "samples[0][0].loss_mask[1] (index=0) is 2 (int), expected 0 or 1" in str(
        rejects(train_output(groups)))


def test_vim108_warns_all_zero_mask_without_remove_sample() -> None:
    groups = make_groups()
    groups[0][0].loss_mask = [0, 0, 0]
    found = only(findings(train_output(groups)), "VIM108")
    assert [v.severity for v in found] == ["warning"]
    groups[0][0].remove_sample = True
    assert only(findings(train_output(groups)), "VIM108") == []


def test_vim108_accepts_matching_loss_mask() -> None:
    groups = make_groups(loss_mask=[1, 0, 1])
    assert only(findings(train_output(groups)), "VIM108") == []


# ---- VIM109 rollout_log_probs ---------------------------------------------------------------

def test_vim109_rejects_short_log_probs() -> None:
    groups = make_groups()
    groups[1][0].rollout_log_probs = [-0.1]
    err = rejects(train_output(groups))
    assert ("VIM109 error: samples[1][0].rollout_log_probs (index=4) has 1 entries, expected "
            "response_length=3") in str(err)


def test_vim109_rejects_nan_when_consumed_and_warns_otherwise() -> None:
    groups = make_groups()
    groups[0][1].rollout_log_probs[2] = math.nan
    found = only(findings(train_output(groups)), "VIM109")
    assert [(v.severity, v.where) for v in found] == [
        ("warning", "samples[0][1].rollout_log_probs[2] (index=1)")]
    err = rejects(train_output(groups), make_args(use_rollout_logprobs=True))
    assert "samples[0][1].rollout_log_probs[2] (index=1) is nan, expected a finite" in str(err)


def test_vim109_rejects_positive_log_prob_when_consumed() -> None:
    groups = make_groups()
    groups[0][1].rollout_log_probs[0] = 0.3
    err = rejects(train_output(groups), make_args(use_tis=True))
    assert "rollout_log_probs[0] (index=1) is 0.3, expected a natural-log probability" in str(err)


def test_vim109_accepts_rounding_above_zero() -> None:
    groups = make_groups()
    groups[0][1].rollout_log_probs[0] = 5e-7
    assert only(findings(train_output(groups)), "VIM109") == []


def test_vim109_requires_log_probs_when_consumed() -> None:
    groups = make_groups(rollout_log_probs=None)
    err = rejects(train_output(groups), make_args(use_rollout_logprobs=True))
    assert "samples[0][0].rollout_log_probs (index=0) is None but --use-rollout-logprobs" in str(err)


def test_vim109_accepts_a_single_exact_zero_a_certain_token_is_real() -> None:
    # a pretrained model is often certain of a token (its EOS, a repeated line): float32 0.0
    groups = make_groups()
    groups[1][1].rollout_log_probs[2] = 0.0
    groups[0][0].rollout_log_probs[0] = 0.0
    assert only(findings(train_output(groups), make_args(use_rollout_logprobs=True)),
                "VIM109") == []


def test_vim109_accepts_valid_log_probs() -> None:
    args = make_args(use_rollout_logprobs=True)
    assert only(findings(train_output(make_groups()), args), "VIM109") == []


# ---- VIM110 reward --------------------------------------------------------------------------

def test_vim110_rejects_missing_reward() -> None:
    groups = make_groups()
    groups[1][3].reward = None
    err = rejects(train_output(groups))
    assert "VIM110 error: samples[1][3].reward (index=7) is None" in str(err)


def test_vim110_rejects_dict_reward_without_reward_key() -> None:
    groups = make_groups()
    for g in groups:
        for s in g:
            s.reward = {"acc": 1.0, "fmt": 0.0}
    err = rejects(train_output(groups))
    assert "samples[0][0].reward (index=0) is a dict with keys ['acc', 'fmt'] but --reward-key" \
        in str(err)
    assert "--reward-key naming one of" in str(err)


def test_vim110_rejects_dict_missing_the_key() -> None:
    groups = make_groups()
    groups[0][0].reward = {"fmt": 1.0}
    err = rejects(train_output(groups), make_args(reward_key="acc"))
    assert "samples[0][0].reward (index=0) is a dict without the key 'acc'" in str(err)


def test_vim110_rejects_infinite_reward_and_warns_bool() -> None:
    groups = make_groups()
    groups[0][1].reward = math.inf
    groups[0][2].reward = True
    found = only(findings(train_output(groups)), "VIM110")
    assert [(v.severity, v.where) for v in found] == [
        ("error", "samples[0][1].reward (index=1)"), ("warning", "samples[0][2].reward (index=2)")]


def test_vim110_accepts_float_and_keyed_dict() -> None:
    groups = make_groups()
    groups[0][0].reward = {"acc": 1.0}
    for s in groups[0][1:] + groups[1]:
        s.reward = {"acc": 0.0}
    assert only(findings(train_output(groups), make_args(reward_key="acc")), "VIM110") == []


# ---- VIM111 status --------------------------------------------------------------------------

def test_vim111_rejects_string_status() -> None:
    groups = make_groups()
    groups[0][3].status = "truncated"
    err = rejects(train_output(groups))
    assert "VIM111 error: samples[0][3].status (index=3) is 'truncated' (str)" in str(err)
    assert "fix: assign Sample.Status.TRUNCATED" in str(err)


def test_vim111_warns_pending_and_trainable_aborted() -> None:
    groups = make_groups()
    groups[0][0].status = Sample.Status.PENDING
    groups[0][1].status = Sample.Status.ABORTED
    found = only(findings(train_output(groups)), "VIM111")
    assert [(v.severity, v.where) for v in found] == [
        ("warning", "samples[0][0].status (index=0)"), ("warning", "samples[0][1].status (index=1)")]
    assert "PENDING" in found[0].message and "ABORTED" in found[1].message


def test_vim111_accepts_members_and_removed_aborted() -> None:
    groups = make_groups()
    groups[0][0].status = Sample.Status.TRUNCATED
    groups[0][1].status = Sample.Status.ABORTED
    groups[0][1].remove_sample = True
    assert only(findings(train_output(groups)), "VIM111") == []
