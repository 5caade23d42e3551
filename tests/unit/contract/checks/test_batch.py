"""vime.contract.checks.batch on exact findings, one check at a time on a read Shape: metrics
(VIM119) and their fixes, VIM112, VIM114-VIM118, VIM120, VIM121, VIM123, VIM125, VIM126, and
the helpers they share (reward kinds, prompts, names)."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_helpers import make_args, make_groups, make_sample

import vime.contract.checks.batch as b
from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.shape import read_shape

pytestmark = pytest.mark.unit


def _rows(found):
    return [(v.id, v.severity, v.where, v.message) for v in found]


def _run(check, groups, info=None, **args):
    s = CheckSettings.from_args(make_args(**args))
    shape, _ = read_shape(groups, s)
    return _rows(check(shape, s, info or b.OutputInfo()))


# ---- VIM119 metrics ------------------------------------------------------------------------

def test_metrics_findings_and_fixes():
    metrics = {1: 1.0, "a/b": "x", "perf/x": 1.0, "r/t": np.float32(1), "r/l": [1],
               "r/ok": True, "r/n": float("nan"), "plain": 2.0, "r/arr": np.zeros(2),
               "r/bytes": b"x", "r/tuple": (1,), "r/d": {"a": 1}, "r/none": None}
    found = b.check_metrics(metrics, builtin_keys={"r/t"})
    assert [(v.where, v.message, v.fix) for v in found] == [
        ("metrics[1]", "key is 1 (int), expected str",
         "name metrics rollout/<module>/<name> (eval/<module>/<name>)"),
        ("metrics['a/b']", "value is 'x' (str), expected a finite real",
         "log a number, not text (put text in sample.metadata instead)"),
        ("metrics['perf/x']", "key clashes with a built-in metric, which overwrites it",
         "name metrics rollout/<module>/<name> (eval/<module>/<name>)"),
        ("metrics['r/t']", "key clashes with a built-in metric, which overwrites it",
         "name metrics rollout/<module>/<name> (eval/<module>/<name>)"),
        ("metrics['r/l']", "value is a list of 1 item(s), expected a finite real",
         "log one number per key: reduce it (e.g. the mean) or use one key per value"),
        ("metrics['r/n']", "value is nan, expected a finite real",
         "log a finite float (check for division by zero, NaN or inf)"),
        ("metrics['plain']", "key has no '/': it may collide with built-in metrics",
         "name metrics rollout/<module>/<name> (eval/<module>/<name>)"),
        ("metrics['r/arr']", "value is array([0., 0.]) (ndarray), expected a finite real; "
         "call .item() on tensors and numpy arrays",
         "log a Python float: call .item() on the tensor or array (or float(...))"),
        ("metrics['r/bytes']", "value is b'x' (bytes), expected a finite real",
         "log a number, not text (put text in sample.metadata instead)"),
        ("metrics['r/tuple']", "value is a tuple of 1 item(s), expected a finite real",
         "log one number per key: reduce it (e.g. the mean) or use one key per value"),
        ("metrics['r/d']", "value is a dict of 1 item(s), expected a finite real",
         "log one number per key: reduce it (e.g. the mean) or use one key per value"),
        ("metrics['r/none']", "value is None (NoneType), expected a finite real",
         "log a finite float (check for division by zero, NaN or inf)")]
    assert {v.id for v in found} == {"VIM119"} and {v.severity for v in found} == {"warning"}


def test_metrics_none_or_not_a_dict():
    assert b.check_metrics(None) == []
    assert b.check_metrics({"rollout/x": 1.0, "rollout/y": False}) == []
    found = b.check_metrics([1], where="m")
    assert [(v.where, v.message, v.fix) for v in found] == [
        ("m", "is a list of 1 item(s), expected dict[str, number] or None",
         "return metrics as {'rollout/<module>/<name>': float} or None")]
    # a key that has no '/' and a bad value: both findings
    assert [v.message for v in b.check_metrics({"acc": "x"})] == [
        "key has no '/': it may collide with built-in metrics",
        "value is 'x' (str), expected a finite real"]


# ---- VIM112 --------------------------------------------------------------------------------

def test_vim112_both_directions_and_metadata_columns():
    groups = make_groups()
    groups[1][2].rollout_log_probs = None
    assert _run(b.check_vim112, groups) == [
        ("VIM112", "error", "samples[1][2].rollout_log_probs (index=6)",
         "rollout_log_probs is set on 7 of 8 samples (samples[0][0] has it, samples[1][2] "
         "does not)")]
    groups = make_groups(rollout_log_probs=None)
    groups[0][3].rollout_log_probs = [-0.5, -0.6, -0.7]
    (row,) = _run(b.check_vim112, groups)
    assert row[2] == "samples[0][3].rollout_log_probs (index=3)"
    assert "samples[0][0] lacks it, samples[0][3] has it" in row[3]
    groups = make_groups()
    groups[0][1].metadata = {"round_number": 1}
    (row,) = _run(b.check_vim112, groups)
    assert row[2] == "samples[0][1].metadata.round_number (index=1)"
    assert "samples[0][0] lacks it, samples[0][1] has it" in row[3]
    groups = make_groups(metadata={"round_number": 1})
    groups[1][0].metadata = None
    (row,) = _run(b.check_vim112, groups)
    assert row[2] == "samples[1][0].metadata.round_number (index=4)"


# ---- VIM114 / VIM115 / VIM116 / VIM117 -----------------------------------------------------

def test_vim114_duplicate_and_missing_indices():
    groups = make_groups()
    groups[0][1].index = 0
    groups[1][0].index = None
    assert _run(b.check_vim114, groups) == [
        ("VIM114", "error", "samples[0][1].index (index=0)",
         "index=0 is also used by samples[0][0]: indices must be unique across rollouts"),
        ("VIM114", "warning", "samples[1][0].index",
         "is None on 1 of 8 samples while the others have one")]
    assert _run(b.check_vim114, make_groups(index=None)) == []
    # fan-out siblings may share an index; the next rollout may not
    a, b2, c = (make_sample(0, 0, rollout_id=1), make_sample(0, 0, rollout_id=1),
                make_sample(0, 0, rollout_id=2))
    b2.reward = a.reward
    assert _run(b.check_vim114, [[[a, b2], [c]]]) == [
        ("VIM114", "error", "samples[0][1][0].index (index=0)",
         "index=0 is also used by samples[0][0]: indices must be unique across rollouts")]


def test_vim115_reused_rollout_id():
    groups = make_groups()
    groups[0][1].rollout_id = 5
    groups[1][1].rollout_id = 5
    groups[1][2].rollout_id = 5
    assert _run(b.check_vim115, groups) == [
        ("VIM115", "warning", "samples[1][1].rollout_id (index=5)",
         "rollout_id=5 is also used by samples[0][1], a different rollout"),
        ("VIM115", "warning", "samples[1][2].rollout_id (index=6)",
         "rollout_id=5 is also used by samples[0][1], a different rollout")]


def test_vim116_metadata_and_train_metadata():
    groups = make_groups()
    groups[0][1].metadata = {"a": {1}}
    groups[1][0].train_metadata = {"x": [np.zeros(1)]}
    assert _run(b.check_vim116, groups) == [
        ("VIM116", "warning", "samples[0][1].metadata (index=1)",
         "['a'] is a set, not JSON-serialisable"),
        ("VIM116", "warning", "samples[1][0].train_metadata (index=4)",
         "['x'][0] is a ndarray, not JSON-serialisable")]


def test_vim117_equal_rewards():
    assert _run(b.check_vim117, make_groups(reward=1.0)) == [
        ("VIM117", "warning", "samples[*].reward",
         "are all equal to 1.0 (8 samples): every advantage is zero")]
    assert _run(b.check_vim117, make_groups(reward=1.0), loss_type="sft_loss") == []
    assert _run(b.check_vim117, [[make_sample(reward=1.0)]], n_samples_per_prompt=1) == []
    assert _run(b.check_vim117, [[make_sample(0, 0, reward=1.0), make_sample(0, 1, reward=1.0)]],
                n_samples_per_prompt=2)[0][3].startswith("are all equal to 1.0 (2 samples)")
    assert _run(b.check_vim117, make_groups()) == []
    groups = make_groups(reward=1.0)
    groups[1][1].reward = None
    assert _run(b.check_vim117, groups) == []
    keyed = make_groups(reward={"acc": 0.0})
    assert _run(b.check_vim117, keyed, reward_key="acc")[0][3].startswith("are all equal to 0.0")


# ---- VIM118 / VIM120 -----------------------------------------------------------------------

def test_vim118_label_based_rewards():
    assert _run(b.check_vim118, make_groups(label=None), rm_type="boxed_math") == [
        ("VIM118", "warning", "samples[*].label", "is None on all 8 samples scored by the "
         "label-based reward 'boxed_math'; every reward will be 0")]
    assert _run(b.check_vim118, make_groups(), rm_type="math") == [
        ("VIM118", "warning", "--label-key",
         "is not set but the reward 'math' compares responses with labels")]
    assert _run(b.check_vim118, make_groups(), rm_type="math", label_key="answer") == []
    assert _run(b.check_vim118, make_groups(label=None), rm_type="remote_rm") == []
    assert _run(b.check_vim118, make_groups()) == []
    groups = make_groups(label=None)
    groups[1][2].metadata = {"rm_type": "f1"}
    assert _run(b.check_vim118, groups, rm_type="remote_rm") == [
        ("VIM118", "warning", "samples[*].label", "is None on all 1 samples scored by the "
         "label-based reward 'f1'; every reward will be 0")]
    groups = make_groups(metadata={"rm_type": ""})
    assert _run(b.check_vim118, groups, rm_type="math")[0][3] == (
        "is not set but the reward 'math' compares responses with labels")
    groups = make_groups(metadata={"rm_type": 3})
    assert _run(b.check_vim118, groups) == []


def test_vim120_hooks_named():
    both = {"rollout_sample_filter_path": "a.b", "rollout_all_samples_process_path": "c.d"}
    assert _run(b.check_vim120, make_groups(), **both) == [
        ("VIM120", "warning", "output", "did not come through finalize_rollout_groups, so "
         "--rollout-sample-filter-path and --rollout-all-samples-process-path never ran")]
    assert _run(b.check_vim120, make_groups(), b.OutputInfo(finalized=True), **both) == []
    assert _run(b.check_vim120, make_groups(), b.OutputInfo(is_default_rollout=True),
                **both) == []
    assert _run(b.check_vim120, make_groups()) == []


# ---- VIM121 --------------------------------------------------------------------------------

def test_vim121_reward_kinds():
    groups = make_groups()
    groups[0][1].reward = {"acc": 1.0}
    groups[1][2].reward = {"acc": 0.0}
    assert _run(b.check_vim121, groups) == [
        ("VIM121", "error", "samples[0][1].reward (index=1)", "mixes reward kinds in one batch: "
         "6 samples have a number (first: samples[0][0] (index=0)), 2 a dict (first: "
         "samples[0][1] (index=1)); with --reward-key=None upstream reads the bare value, "
         "which fails on a dict")]
    assert _run(b.check_vim121, groups, reward_key="acc")[0][3].endswith(
        "with --reward-key='acc' upstream reads reward[key], which fails on a number")
    groups = make_groups(reward={"acc": 1.0})
    groups[1][3].reward = np.float32(1.0)
    groups[1][2].reward = None
    assert _run(b.check_vim121, groups, reward_key="acc") == [
        ("VIM121", "error", "samples[1][3].reward (index=7)", "mixes reward kinds in one "
         "batch: 1 samples have a number (first: samples[1][3] (index=7)), 6 a dict (first: "
         "samples[0][0] (index=0)); with --reward-key='acc' upstream reads reward[key], which "
         "fails on a number")]
    # as many of each: the dicts are named
    groups = [[make_sample(0, 0, reward={"acc": 1.0}), make_sample(0, 1, reward=True)]]
    assert _run(b.check_vim121, groups, n_samples_per_prompt=2)[0][2] == \
        "samples[0][0].reward (index=0)"
    assert _run(b.check_vim121, make_groups(reward={"acc": 1.0})) == []


def test_reward_kinds():
    assert [b._reward_kind(x) for x in (1.0, 3, True, np.float32(1), np.zeros(1), {"a": 1},
                                        None, "1", [1.0])] == [
        "number", "number", "number", "number", "number", "dict", None, None, None]


# ---- VIM123 --------------------------------------------------------------------------------

def test_vim123_shared_objects():
    groups = make_groups()
    shared = [11, 12, 13, 40, 41, 42]
    groups[0][1].tokens = shared
    groups[1][0].tokens = shared
    assert _run(b.check_vim123, groups) == [
        ("VIM123", "error", "samples[1][0].tokens (index=4)",
         f"is the same list object (id {id(shared):#x}) as tokens of samples[0][1] (index=1): "
         "a write to one changes both")]
    groups = make_groups()
    meta = {"k": 1}
    groups[0][1].metadata = meta
    groups[0][2].train_metadata = meta
    assert _run(b.check_vim123, groups) == []   # train_metadata is not a per-sample object
    groups[0][2].loss_mask = None
    mask = [1, 1, 1]
    groups[0][1].loss_mask = mask
    groups[0][2].rollout_log_probs = mask
    (row,) = _run(b.check_vim123, groups)
    assert row[2] == "samples[0][2].rollout_log_probs (index=2)"
    assert row[3].startswith(f"is the same list object (id {id(mask):#x}) as its loss_mask of "
                             "samples[0][1] (index=1)")


def test_vim123_same_sample_twice_and_fan_out_metadata():
    groups = make_groups()
    groups[1][3] = groups[0][0]
    assert _run(b.check_vim123, groups) == [
        ("VIM123", "error", "samples[1][3] (index=0)",
         "is the same Sample object as samples[0][0] (index=0): every field is shared")]
    meta = {"k": 1}
    a = make_sample(0, 0, rollout_id=1)
    c = make_sample(0, 1, rollout_id=1)
    a.metadata = c.metadata = meta
    assert _run(b.check_vim123, [[[a, c]]], n_samples_per_prompt=1) == []
    d = make_sample(0, 2, rollout_id=2)
    d.metadata = meta
    (row,) = _run(b.check_vim123, [[[a, c], [d]]], n_samples_per_prompt=2)
    assert row[2] == "samples[0][1][0].metadata (index=2)"
    assert row[3].startswith(f"is the same dict object (id {id(meta):#x}) as metadata of "
                             "samples[0][0][0] (index=0)")
    a.tokens = c.tokens
    assert [r[2] for r in _run(b.check_vim123, [[[a, c]]], n_samples_per_prompt=1)] == [
        "samples[0][0][1].tokens (index=1)"]


# ---- VIM125 / VIM126 -----------------------------------------------------------------------

def test_vim125_prompts_of_a_group():
    groups = make_groups()
    for k in (0, 1):
        groups[1][k].tokens = [99] + groups[1][k].tokens[1:]
    assert _run(b.check_vim125, groups) == [
        ("VIM125", "error", "samples[1]", "holds 2 different prompts (tokens[:len(tokens) - "
         "response_length]): samples[1][0] (index=4), samples[1][1] (index=5) (3 prompt "
         "tokens); samples[1][2] (index=6), samples[1][3] (index=7) (3 prompt tokens); "
         "samples[1][0] and samples[1][2] first differ at token 0")]
    groups = make_groups(n=6)
    for k in range(1, 6):
        groups[0][k].tokens = [11, 12] + groups[0][k].tokens[3:]
    assert _run(b.check_vim125, groups, n_samples_per_prompt=6) == [
        ("VIM125", "error", "samples[0]", "holds 2 different prompts (tokens[:len(tokens) - "
         "response_length]): samples[0][0] (index=0) (3 prompt tokens); samples[0][1] "
         "(index=1), samples[0][2] (index=2), samples[0][3] (index=3), samples[0][4] "
         "(index=4) and 1 more (2 prompt tokens); samples[0][0] and samples[0][1] first differ "
         "at token 2")]
    assert _run(b.check_vim125, make_groups()) == []


def test_vim125_prompt_edges():
    # a sample whose response is all of its tokens has an empty prompt; one with no response
    # (or unreadable lengths) is left to VIM106/VIM107
    whole = make_sample(0, 1)
    whole.tokens = whole.tokens[3:]
    assert b._prompt_of(whole) == []
    assert b._prompt_of(make_sample(response_length=0)) is None
    odd = make_sample()
    odd.response_length = 9
    assert b._prompt_of(odd) is None
    odd.response_length = "3"
    assert b._prompt_of(odd) is None
    odd.response_length, odd.tokens = 3, (11, 12, 13, 40, 41, 42)
    assert b._prompt_of(odd) is None
    assert b._prompt_of(make_sample()) == [11, 12, 13]
    group = [make_sample(0, 0), whole, make_sample(0, 2, response_length=0)]
    rows = _run(b.check_vim125, [group], n_samples_per_prompt=3)
    assert [r[3].split(": ", 1)[1] for r in rows] == [
        "samples[0][0] (index=0) (3 prompt tokens); samples[0][1] (index=1) (0 prompt "
        "tokens); samples[0][0] and samples[0][1] first differ at token 0"]


def test_vim126_weight_versions():
    groups = make_groups(weight_versions=["3"])
    groups[1][2].weight_versions = []
    assert _run(b.check_vim126, groups) == [
        ("VIM126", "warning", "samples[1][2].weight_versions (index=6)",
         "is empty but 7 of 8 samples carry weight versions (e.g. samples[0][0] (index=0): "
         "['3']): the staleness metrics and pop_oldest see only part of the step")]
    groups = make_groups()
    groups[0][2].weight_versions = ["1", "2"]
    assert _run(b.check_vim126, groups)[0][2:] == (
        "samples[0][0].weight_versions (index=0)",
        "is empty but 1 of 8 samples carry weight versions (e.g. samples[0][2] (index=2): "
        "['1', '2']): the staleness metrics and pop_oldest see only part of the step")
    assert _run(b.check_vim126, make_groups(weight_versions=["3"])) == []
    assert _run(b.check_vim126, make_groups()) == []


# ---- VIM115 between siblings ---------------------------------------------------------------

def _leaf(k: int, **fields):
    from vime.contract.checks.locations import Loc
    from vime.contract.checks.shape import Leaf

    sample = make_sample(0, k, **fields)
    return Leaf(sample, Loc(f"x[{k}]", sample.index))


def test_siblings_share_a_rollout_id():
    assert b.siblings_problems([_leaf(0, rollout_id=None)], "fan") == []
    three = [_leaf(0, rollout_id=1, reward=0.0), _leaf(1, rollout_id=1, reward=0.0),
             _leaf(2, rollout_id=2, reward=0.0)]
    assert _rows(b.siblings_problems(three, "fan")) == [
        ("VIM115", "error", "x[2].rollout_id (index=2)", "is 2 but its sibling x[0] has 1")]
    unset = [_leaf(0, rollout_id=1, reward=0.0), _leaf(1, rollout_id=1, reward=0.0),
             _leaf(2, rollout_id=None, reward=0.0)]
    assert _rows(b.siblings_problems(unset, "fan")) == [
        ("VIM115", "error", "x[2].rollout_id (index=2)", "is None but fan is a fan-out of 3 "
         "samples: siblings must share a non-None rollout_id")]
    # every sibling is compared with the first, two siblings included
    middle = [_leaf(0, rollout_id=1, reward=0.0), _leaf(1, rollout_id=2, reward=0.0),
              _leaf(2, rollout_id=1, reward=0.0)]
    assert _rows(b.siblings_problems(middle, "fan")) == [
        ("VIM115", "error", "x[1].rollout_id (index=1)", "is 2 but its sibling x[0] has 1")]
    assert [r[2] for r in _rows(b.siblings_problems(middle[:2], "fan"))] == [
        "x[1].rollout_id (index=1)"]
    # the other rules of the siblings follow the rollout_id rule
    agree = [_leaf(0, rollout_id=1, reward=0.0), _leaf(1, rollout_id=1, reward=0.0),
             _leaf(2, rollout_id=1, reward=1.0)]
    assert _rows(b.siblings_problems(agree, "fan"))[0][2] == "x[2].reward (index=2)"


def test_segments_share_group_index_and_reward():
    group = [_leaf(0, reward=0.0), _leaf(1, reward=0.0), _leaf(2, reward=0.0, group_index=3)]
    assert _rows(b.segments_disagree(group)) == [
        ("VIM115", "error", "x[2].group_index (index=2)",
         "is 3 but its sibling x[0] has 0: fan-out siblings share group_index")]
    group = [_leaf(0, reward=0.0), _leaf(1, reward=0.0), _leaf(2, reward=1.0)]
    assert _rows(b.segments_disagree(group)) == [
        ("VIM115", "error", "x[2].reward (index=2)",
         "is 1.0 but its sibling x[0] has 0.0: fan-out siblings share the rollout's reward")]
    assert b.segments_disagree([_leaf(0, reward=0.0), _leaf(1, reward=0.0)]) == []


def test_names_and_prompt_edges():
    leaves = [_leaf(k) for k in range(5)]
    assert b._names(leaves[:4]) == "x[0] (index=0), x[1] (index=1), x[2] (index=2), x[3] (index=3)"
    assert b._names(leaves).endswith("x[3] (index=3) and 1 more")
    one = make_sample(response_length=1)
    assert b._prompt_of(one) == [11, 12, 13]


# ---- a skipped sample does not end the walk (continue, not break) --------------------------

def test_vim113_walk_goes_on_after_a_differing_group():
    groups = make_groups()
    groups[0][2].group_index = 5
    groups[1][3].group_index = 7
    assert [(r[2], r[3]) for r in _run(b.check_vim113, groups)] == [
        ("samples[0][2].group_index (index=2)",
         "is 5 but samples[0][0] of the same group has 0"),
        ("samples[1][3].group_index (index=7)",
         "is 7 but samples[1][0] of the same group has 1")]
    # the group's first sample sets the value the others are compared with
    groups = make_groups()
    groups[0][1].group_index = 5
    assert [(r[2], r[3]) for r in _run(b.check_vim113, groups)] == [
        ("samples[0][1].group_index (index=1)",
         "is 5 but samples[0][0] of the same group has 0")]
    # an empty group is skipped, and the groups after it are checked
    groups = make_groups()
    groups[1][2].group_index = 9
    assert [(r[2], r[3]) for r in _run(b.check_vim113, [[], groups[1]])] == [
        ("samples[1][2].group_index (index=6)",
         "is 9 but samples[1][0] of the same group has 1")]


def test_vim114_walk_goes_on_after_a_none_or_repeated_index():
    a, b2, c = (make_sample(0, 0, rollout_id=1), make_sample(0, 0, rollout_id=1),
                make_sample(0, 0, rollout_id=2))
    a.index = None
    b2.reward = a.reward
    assert [r[:3] for r in _run(b.check_vim114, [[[a, b2], [c]]])] == [
        ("VIM114", "error", "samples[0][1][0].index (index=0)"),
        ("VIM114", "warning", "samples[0][0][0].index")]
    a, b2, d, c = (make_sample(0, 0, rollout_id=1), make_sample(0, 0, rollout_id=1),
                   make_sample(0, 1, rollout_id=1), make_sample(0, 1, rollout_id=2))
    b2.reward = d.reward = a.reward
    assert [r[:3] for r in _run(b.check_vim114, [[[a, b2, d], [c]]])] == [
        ("VIM114", "error", "samples[0][1][0].index (index=1)")]


def test_vim123_walk_goes_on_after_a_twin():
    a = make_sample(0, 0, rollout_id=1)
    c = make_sample(0, 1, rollout_id=1)
    d = make_sample(0, 2, rollout_id=2)
    d.tokens = c.tokens
    assert [r[2] for r in _run(b.check_vim123, [[[a, a, c], [d]]], n_samples_per_prompt=2)] == [
        "samples[0][0][1] (index=0)", "samples[0][1][0].tokens (index=2)"]


def test_vim125_walk_goes_on_after_an_unreadable_prompt():
    group = [make_sample(0, 0, response_length=0), make_sample(0, 1), make_sample(0, 2)]
    group[2].tokens = [99] + group[2].tokens[1:]
    rows = _run(b.check_vim125, [group], n_samples_per_prompt=3)
    assert [r[2] for r in rows] == ["samples[0]"]
