"""vime.contract.checks.rollout_output on exact findings: what each kind of result gets (a
rollout output, the legacy bare list / dict, something else), the defaults, metrics and their
built-in keys in both modes, FAILED leaves among others, and the VIM109/VIM173 scans skipped
for the samples proven clean."""

from __future__ import annotations

import pytest
from runtime_helpers import eval_output, make_args, make_groups, train_output

import vime.contract.checks.field_reports as field_reports
import vime.contract.checks.sample as sample_checks
from vime.contract.checks.rollout_output import collect_rollout_output
from vime.contract.checks.settings import CheckSettings
from vime.rollout.failures import mark_failed

pytestmark = pytest.mark.unit


def _settings(**values):
    return CheckSettings.from_args(make_args(**values))


def _rows(found):
    return [(v.id, v.severity, v.where) for v in found]


def test_valid_outputs_have_no_findings():
    assert collect_rollout_output(train_output(make_groups()), _settings(),
                                  evaluation=False) == []
    assert collect_rollout_output(eval_output({}), _settings(), evaluation=True) == []


def test_not_a_rollout_output_is_the_vim101_error_alone():
    found = collect_rollout_output(5, _settings(), evaluation=False)
    assert _rows(found) == [("VIM101", "error", "output")]
    assert found[0].message == ("`rollout function` (train) returned a int; expected "
                                "RolloutFnTrainOutput")
    named = collect_rollout_output(None, _settings(), evaluation=True, name="my_pkg.ro.fn")
    assert _rows(named) == [("VIM101", "error", "output")]
    assert named[0].message.startswith("`my_pkg.ro.fn` (eval) returned ")


def test_legacy_bare_list_is_read_as_samples():
    groups = make_groups()
    groups[1][0].reward = None
    found = collect_rollout_output(groups, _settings(rollout_sample_filter_path="my.f"),
                                   evaluation=False)
    # not finalized: a bare list never came through finalize_rollout_groups (VIM120)
    assert _rows(found) == [("VIM110", "error", "samples[1][0].reward (index=4)"),
                            ("VIM120", "warning", "output")]


def test_legacy_bare_dict_is_read_as_eval_data():
    found = collect_rollout_output({"toy": {"rewards": [1.0]}}, _settings(), evaluation=True)
    assert _rows(found) == [("VIM130", "error", "data['toy']")]
    assert found[0].message == "is missing 'truncated', 'samples'"


def test_defaults_custom_rollout_and_full_check():
    # is_default_rollout=False: a wrong group count is a warning; full=True: samples checked
    groups = make_groups(3)
    groups[0][0].reward = None
    found = collect_rollout_output(train_output(groups), _settings(), evaluation=False)
    assert _rows(found) == [("VIM110", "error", "samples[0][0].reward (index=0)"),
                            ("VIM104", "warning", "samples")]
    default = collect_rollout_output(train_output(groups), _settings(), evaluation=False,
                                     is_default_rollout=True)
    assert ("VIM104", "error", "samples") in _rows(default)


def test_full_false_checks_only_metrics():
    groups = make_groups()
    groups[0][0].reward = None
    found = collect_rollout_output(train_output(groups, metrics={"acc": 1}), _settings(),
                                   evaluation=False, full=False)
    assert _rows(found) == [("VIM119", "warning", "metrics['acc']")]
    data = {"toy": {"rewards": [1.0]}}
    assert collect_rollout_output(eval_output(data), _settings(), evaluation=True,
                                  full=False) == []


@pytest.mark.parametrize("evaluation", [False, True])
def test_metrics_and_builtin_keys(evaluation):
    metrics = {"acc": 1.0, "rollout/x": 1.0, "rollout/y": 2.0}
    output = (eval_output({}, metrics=metrics) if evaluation
              else train_output(make_groups(), metrics=metrics))
    found = collect_rollout_output(output, _settings(), evaluation=evaluation,
                                   builtin_metric_keys={"rollout/x"})
    assert [(v.id, v.where, v.message) for v in found] == [
        ("VIM119", "metrics['acc']", "key has no '/': it may collide with built-in metrics"),
        ("VIM119", "metrics['rollout/x']", "key clashes with a built-in metric, which "
                                           "overwrites it")]
    assert _rows(collect_rollout_output(output, _settings(), evaluation=evaluation)) == [
        ("VIM119", "warning", "metrics['acc']")]


def test_failed_leaf_does_not_stop_the_other_leaves():
    groups = make_groups()
    mark_failed(groups[0][1], "reward", ValueError("judge down"), 1.0)
    groups[1][0].reward = None
    found = collect_rollout_output(train_output(groups), _settings(), evaluation=False)
    assert _rows(found) == [("VIM110", "error", "samples[1][0].reward (index=4)")]


def _count_calls(monkeypatch):
    """Count the VIM109 (sample) and VIM173 (field report) check calls, per sample index."""
    calls: dict[str, list[int]] = {"VIM109": [], "VIM173": []}
    real_109, real_173 = sample_checks.SAMPLE_CHECKS["VIM109"], field_reports.check_vim173

    def spy_109(sample, *args):
        calls["VIM109"].append(sample.index)
        return real_109(sample, *args)

    def spy_173(sample, *args):
        calls["VIM173"].append(sample.index)
        return real_173(sample, *args)

    monkeypatch.setattr(sample_checks, "_ALL_CHECKS", tuple(
        (inv_id, spy_109 if inv_id == "VIM109" else check)
        for inv_id, check in sample_checks._ALL_CHECKS))
    monkeypatch.setattr(field_reports, "check_vim173", spy_173)
    return calls


def test_proven_clean_samples_skip_the_log_prob_scans(monkeypatch):
    calls = _count_calls(monkeypatch)
    groups = make_groups()
    # index 5: a log prob of exactly 0.0 proves VIM109 clean only (VIM173 looks for 0.0)
    groups[1][1].rollout_log_probs = [-0.5, 0.0, -0.7]
    assert collect_rollout_output(train_output(groups), _settings(), evaluation=False) == []
    assert calls == {"VIM109": [], "VIM173": [5]}
    # without log probs nothing is proven: both run on every sample
    calls["VIM109"].clear()
    calls["VIM173"].clear()
    bare = make_groups(rollout_log_probs=None)
    assert collect_rollout_output(train_output(bare), _settings(), evaluation=False) == []
    assert calls == {"VIM109": list(range(8)), "VIM173": list(range(8))}
