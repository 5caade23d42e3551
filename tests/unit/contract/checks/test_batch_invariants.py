"""Batch invariants of the train output (VIM102-VIM104, VIM112-VIM120) and metrics (VIM119):
passing and failing cases, with id and location checked in the message."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_helpers import (
    HOOK,
    findings,
    make_args,
    make_groups,
    make_sample,
    only,
    rejects,
    train_output,
)

from vime.rollout.base_types import finalize_rollout_groups

pytestmark = pytest.mark.unit


# ---- VIM102 shape ---------------------------------------------------------------------------

def test_vim102_rejects_empty_samples() -> None:
    err = rejects(train_output([]))
    assert err.ids == ["VIM102"] and "VIM102 error: samples is empty" in str(err)


def test_vim102_rejects_non_sample_leaf() -> None:
    groups = make_groups()
    groups[1][2] = {"tokens": [1]}
    err = rejects(train_output(groups))
    assert "VIM102 error: samples[1][2] is a dict of 1 item(s), expected a Sample" in str(err)


def test_vim102_rejects_mixed_depth() -> None:
    groups = make_groups()
    groups[1][0] = [groups[1][0]]
    err = rejects(train_output(groups))
    assert "VIM102 error: samples[1][0] is a list (depth 3) but earlier elements are Samples" \
        in str(err)


def test_vim102_warns_flat_list_and_regroups() -> None:
    flat = [s for g in make_groups() for s in g]
    found = findings(train_output(flat))
    assert [(v.id, v.severity) for v in found] == [("VIM102", "warning")]
    assert "regrouped by group_index" in found[0].message


def test_vim102_accepts_fan_out_depth_3() -> None:
    groups = make_groups()
    fanned = [[[s] for s in g] for g in groups]
    a, b = make_sample(0, 0), make_sample(0, 0)
    a.rollout_id = b.rollout_id = 100
    fanned[0][0] = [a, b]
    assert findings(train_output(fanned)) == []


# ---- VIM103 / VIM104 ------------------------------------------------------------------------

def test_vim103_rejects_uneven_group() -> None:
    groups = make_groups()
    groups[1].pop()
    err = rejects(train_output(groups))
    text = str(err)
    assert err.ids == ["VIM103"]
    assert ("rollout `my_pkg.rollout.generate_rollout` (--rollout-function-path) step 7: "
            "1 contract error(s)") in text
    assert ("VIM103 error: samples[1] has 3 samples, expected n_samples_per_prompt=4 — uneven "
            "groups silently change GRPO advantages") in text
    assert "fix: keep failed samples and set remove_sample=True" in text


def test_vim103_accepts_full_groups() -> None:
    assert only(findings(train_output(make_groups())), "VIM103") == []


def test_vim104_warns_for_custom_rollout_and_rejects_for_default() -> None:
    groups = make_groups(groups=3)
    found = only(findings(train_output(groups)), "VIM104")
    assert [(v.severity, v.where) for v in found] == [("warning", "samples")]
    assert "has 3 groups, expected rollout_batch_size=2" in found[0].message
    err = rejects(train_output(groups), is_default_rollout=True)
    assert "VIM104 error: samples has 3 groups" in str(err)


def test_vim104_accepts_rollout_batch_size_groups() -> None:
    assert only(findings(train_output(make_groups())), "VIM104") == []


# ---- VIM112 optional columns ----------------------------------------------------------------

def test_vim112_rejects_log_probs_on_some_samples() -> None:
    groups = make_groups()
    groups[1][3].rollout_log_probs = None
    err = rejects(train_output(groups))
    assert ("VIM112 error: samples[1][3].rollout_log_probs (index=7) rollout_log_probs is set on "
            "7 of 8 samples (samples[0][0] has it, samples[1][3] does not)") in str(err)


def test_vim112_rejects_round_number_on_some_samples() -> None:
    groups = make_groups()
    groups[0][2].metadata = {"round_number": 2}
    err = rejects(train_output(groups))
    assert "samples[0][2].metadata.round_number (index=2)" in str(err)


def test_vim112_accepts_all_or_none() -> None:
    groups = make_groups(rollout_log_probs=None, train_metadata={"a": 1})
    assert only(findings(train_output(groups)), "VIM112") == []


# ---- VIM113 group_index ---------------------------------------------------------------------

def test_vim113_rejects_group_index_differing_within_group() -> None:
    groups = make_groups()
    groups[1][2].group_index = 9
    err = rejects(train_output(groups))
    assert "VIM113 error: samples[1][2].group_index (index=6) is 9 but samples[1][0]" in str(err)


def test_vim113_rejects_group_index_shared_across_groups() -> None:
    groups = make_groups()
    for s in groups[1]:
        s.group_index = 0
    err = rejects(train_output(groups))
    assert "VIM113 error: samples[1] uses group_index=0, already used by samples[0]" in str(err)


def test_vim113_rejects_partial_group_index() -> None:
    groups = make_groups()
    groups[0][1].group_index = None
    err = rejects(train_output(groups))
    assert "samples[0][1].group_index (index=1) is None but 7 of 8" in str(err)


def test_vim113_accepts_distinct_or_absent() -> None:
    assert only(findings(train_output(make_groups(group_index=None))), "VIM113") == []
    assert only(findings(train_output(make_groups())), "VIM113") == []


# ---- VIM114 index ---------------------------------------------------------------------------

def test_vim114_rejects_duplicate_index() -> None:
    groups = make_groups()
    groups[1][3].index = 2
    err = rejects(train_output(groups))
    assert ("VIM114 error: samples[1][3].index (index=2) index=2 is also used by samples[0][2]"
            in str(err))


def test_vim114_warns_set_none_mix() -> None:
    groups = make_groups()
    groups[0][0].index = None
    found = only(findings(train_output(groups)), "VIM114")
    assert [(v.severity, v.where) for v in found] == [("warning", "samples[0][0].index")]


def test_vim114_accepts_siblings_sharing_index() -> None:
    groups = [[[s] for s in g] for g in make_groups()]
    a, b = make_sample(0, 0), make_sample(0, 0)
    a.rollout_id = b.rollout_id = 0
    groups[0][0] = [a, b]
    assert only(findings(train_output(groups)), "VIM114") == []


# ---- VIM115 rollout-id rule -----------------------------------------------------------------

def _fanned(**sibling: object) -> list[list[list]]:
    groups = [[[s] for s in g] for g in make_groups()]
    a, b = make_sample(1, 1), make_sample(1, 1)
    a.rollout_id = b.rollout_id = 42
    for name, value in sibling.items():
        setattr(b, name, value)
    groups[1][1] = [a, b]
    return groups


def test_vim115_rejects_siblings_without_rollout_id() -> None:
    err = rejects(train_output(_fanned(rollout_id=None)))
    assert ("VIM115 error: samples[1][1][1].rollout_id (index=5) is None but samples[1][1] is a "
            "fan-out of 2 samples") in str(err)


def test_vim115_rejects_siblings_with_different_reward() -> None:
    err = rejects(train_output(_fanned(reward=0.0)))
    assert "samples[1][1][1].reward (index=5) is 0.0 but its sibling samples[1][1][0]" in str(err)


def test_vim115_warns_reused_rollout_id() -> None:
    groups = make_groups()
    groups[0][0].rollout_id = groups[1][1].rollout_id = 3
    found = only(findings(train_output(groups)), "VIM115")
    assert [(v.severity, v.where) for v in found] == [("warning", "samples[1][1].rollout_id (index=5)")]


def test_vim115_accepts_siblings_sharing_rollout_id() -> None:
    assert only(findings(train_output(_fanned())), "VIM115") == []


# ---- VIM116 metadata JSON -------------------------------------------------------------------

def test_vim116_warns_numpy_in_metadata() -> None:
    groups = make_groups()
    groups[0][1].metadata = {"scores": [1, np.zeros(2)]}
    found = only(findings(train_output(groups)), "VIM116")
    assert [(v.severity, v.where) for v in found] == [("warning", "samples[0][1].metadata (index=1)")]
    assert "['scores'][1] is a ndarray, not JSON-serialisable" in found[0].message


def test_vim116_accepts_plain_metadata() -> None:
    groups = make_groups(metadata={"tools": [{"name": "calc"}], "raw_reward": 1.0})
    assert only(findings(train_output(groups)), "VIM116") == []


# ---- VIM117 constant reward -----------------------------------------------------------------

def test_vim117_warns_constant_reward() -> None:
    found = only(findings(train_output(make_groups(reward=1.0))), "VIM117")
    assert len(found) == 1 and found[0].severity == "warning"
    assert "samples[*].reward are all equal to 1.0 (8 samples)" in found[0].format()
    # one hard batch of a healthy GRPO run gives it too: the fix says that is expected, and
    # when it is a problem (it said only "check the reward function and the labels")
    assert ("fix: expected now and then on a batch of hard (or easy) prompts, where every "
            "answer is wrong (or right); when it repeats across steps, check the reward "
            "function") in found[0].format(), found[0].format()


def test_vim117_accepts_varied_reward_and_sft() -> None:
    assert only(findings(train_output(make_groups())), "VIM117") == []
    args = make_args(loss_type="sft_loss")
    assert only(findings(train_output(make_groups(reward=0.0)), args), "VIM117") == []


# ---- VIM118 labels --------------------------------------------------------------------------

def test_vim118_warns_label_based_rm_without_labels() -> None:
    args = make_args(rm_type="boxed_math", label_key="answer")
    found = only(findings(train_output(make_groups(label=None)), args), "VIM118")
    assert len(found) == 1 and "is None on all 8 samples" in found[0].message
    assert found[0].where == "samples[*].label"


def test_vim118_warns_missing_label_key() -> None:
    found = only(findings(train_output(make_groups()), make_args(rm_type="math")), "VIM118")
    assert [v.where for v in found] == ["--label-key"]


def test_vim118_accepts_labels_with_label_key() -> None:
    args = make_args(rm_type="math", label_key="answer")
    assert only(findings(train_output(make_groups()), args), "VIM118") == []


# ---- VIM119 metrics -------------------------------------------------------------------------

def test_vim119_warns_unqualified_key_and_nan_value() -> None:
    out = train_output(make_groups(), metrics={"acc": 1.0, "rollout/x/y": float("nan"),
                                               "perf/contract_check_time": 1.0})
    found = only(findings(out), "VIM119")
    assert [v.where for v in found] == ["metrics['acc']", "metrics['rollout/x/y']",
                                        "metrics['perf/contract_check_time']"]
    assert all(v.severity == "warning" for v in found)


def test_vim119_on_a_tensor_value_says_to_log_a_float_not_how_to_name_it() -> None:
    import torch

    out = train_output(make_groups(), metrics={"rollout/my_mod/acc": torch.tensor(0.5),
                                               "rollout/my_mod/note": "ok"})
    found = only(findings(out), "VIM119")
    assert [v.where for v in found] == ["metrics['rollout/my_mod/acc']",
                                        "metrics['rollout/my_mod/note']"]
    assert found[0].fix == ("log a Python float: call .item() on the tensor or array (or "
                            "float(...))")
    assert found[1].fix == "log a number, not text (put text in sample.metadata instead)"
    assert "name metrics" not in found[0].fix + found[1].fix
    unqualified = only(findings(train_output(make_groups(), metrics={"acc": 1.0})), "VIM119")
    assert unqualified[0].fix.startswith("name metrics rollout/<module>/<name>")


def test_vim119_runs_on_skipped_steps() -> None:
    out = train_output(make_groups(reward=None), metrics={"acc": 1})
    found = findings(out, make_args(contract_check_interval=2), rollout_id=3)
    assert [v.id for v in found] == ["VIM119"]


def test_vim119_accepts_qualified_metrics() -> None:
    out = train_output(make_groups(), metrics={"rollout/my_mod/groups": 2, "rollout/my_mod/ok": True})
    assert only(findings(out), "VIM119") == []


# ---- VIM120 finalize ------------------------------------------------------------------------

def test_vim120_warns_when_sample_filter_bypassed() -> None:
    args = make_args(rollout_sample_filter_path="my_pkg.filters.drop_long")
    found = only(findings(train_output(make_groups()), args), "VIM120")
    assert len(found) == 1 and "--rollout-sample-filter-path never ran" in found[0].message


def test_vim120_accepts_finalized_output() -> None:
    args = make_args(rollout_all_samples_process_path="my_pkg.hooks.log_all")
    out = finalize_rollout_groups(args, 7, make_groups())
    assert out.finalized is True
    assert only(findings(out, args), "VIM120") == []
    # The same groups returned directly are flagged, naming the all-samples hook that never ran,
    # and the context names the rollout hook and step.
    (bypassed,) = only(findings(train_output(make_groups()), args), "VIM120")
    assert "--rollout-all-samples-process-path never ran" in bypassed.message
    assert bypassed.context == f"rollout `{HOOK}` (--rollout-function-path) step 7"
