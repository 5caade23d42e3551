"""FAILED samples at B5 (--hook-failure fail-sample): VIM180 the error record, VIM181 nothing
trainable; a well-formed FAILED sample passes every other check (its reward is None, it may
have no response) and keeps its group's size."""

from __future__ import annotations

import pytest
from runtime_helpers import findings, ids, make_groups, only, rejects, train_output

from vime.rollout.failures import mark_failed
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def _with_failed(**fields):
    groups = make_groups()
    target = groups[1][2]
    mark_failed(target, "reward", ValueError("judge down"), 1.5)
    for name, value in fields.items():
        setattr(target, name, value)
    return groups, target


def test_vim180_well_formed_failed_sample_passes_every_check():
    groups, target = _with_failed()
    assert findings(train_output(groups)) == []
    # also without a response (generate failed): only the prompt tokens are left
    target.tokens, target.response_length, target.loss_mask = [11, 12, 13], 0, []
    target.rollout_log_probs = None
    assert findings(train_output(groups)) == []


def test_vim180_failed_sample_without_record_is_rejected():
    groups, target = _with_failed()
    del target.metadata["vime_error"]
    err = rejects(train_output(groups))
    found = only(err.violations, "VIM180")
    assert len(found) == 1
    assert found[0].where == "samples[1][2].metadata (index=6)"
    assert found[0].message == "is missing"
    assert "mark_failed" in found[0].fix


@pytest.mark.parametrize("record, problem", [
    ("boom", "is 'boom' (str), expected a dict"),
    ({"hook": "reward", "type": "ValueError", "message": "x"}, "lacks 'seconds'"),
    ({"hook": "reward", "type": 3, "message": "x", "seconds": 1.0}, "['type'] is 3 (int), expected a str"),
    ({"hook": "reward", "type": "E", "message": "x", "seconds": -1.0}, "['seconds'] is -1.0"),
    ({"hook": "reward", "type": "E", "message": "x", "seconds": True}, "['seconds'] is True (bool), expected a number"),
])
def test_vim180_malformed_record_is_named(record, problem):
    groups, target = _with_failed()
    target.metadata["vime_error"] = record
    found = only(findings(train_output(groups)), "VIM180")
    assert len(found) == 1 and problem in found[0].message, found


def test_vim181_trainable_failed_sample_is_rejected():
    groups, _ = _with_failed(loss_mask=[1, 0, 1], remove_sample=False)
    found = only(rejects(train_output(groups)).violations, "VIM181")
    assert len(found) == 1
    assert found[0].where == "samples[1][2].loss_mask (index=6)"
    assert found[0].message == "has trainable tokens and remove_sample is False"
    groups, _ = _with_failed(loss_mask=None, remove_sample=False)
    found = only(findings(train_output(groups)), "VIM181")
    assert [v.message for v in found] == [
        "is None (every response token trains) and remove_sample is False"]


def test_vim181_zero_mask_or_remove_sample_passes():
    groups, _ = _with_failed(loss_mask=[0, 0, 0], remove_sample=False)
    assert "VIM181" not in ids(findings(train_output(groups)))
    groups, _ = _with_failed(loss_mask=[1, 1, 1], remove_sample=True)
    assert "VIM181" not in ids(findings(train_output(groups)))


def test_failed_sample_still_counts_for_group_size_and_field_types():
    groups, target = _with_failed()
    groups[1].remove(target)
    assert "VIM103" in ids(findings(train_output(groups)))
    groups, target = _with_failed(tokens=[11, "12"])
    assert "VIM106" in ids(findings(train_output(groups)))


def test_completed_sample_without_reward_is_still_vim110():
    groups = make_groups()
    groups[0][0].reward = None
    assert groups[0][0].status is Sample.Status.COMPLETED
    assert "VIM110" in ids(findings(train_output(groups)))


# ---- vime-lint check: failures per hook in the summary ------------------------------------------


def test_vime_lint_check_summarises_failures_per_hook(capsys, monkeypatch):
    from pathlib import Path

    from vime_lint.runtime.harness import main

    fixtures = Path(__file__).resolve().parents[3] / "fixtures" / "runtime_hooks"
    monkeypatch.syspath_prepend(str(fixtures))
    argv = ["--rollout-function-path", "vime_ref_good.generate_rollout",
            "--custom-rm-path", "vime_ref_failing.reward_fails_on_even",
            "--n-samples-per-prompt", "4"]
    # (--no-probe: the reward probes would call the failing judge on purpose, VIM303)
    assert main([*argv, "--hook-failure", "fail-sample", "--no-probe"]) == 0
    out = capsys.readouterr().out
    summary = out.split("failures per hook (FAILED samples, --hook-failure fail-sample):")[1]
    lines = summary.strip("\n").splitlines()
    assert lines[0] == ("  reward/ValueError: 2 sample(s), e.g. sample index=0: judge could not "
                        "parse sample 0")
    assert lines[1].startswith("  reward/Unscored: 1 sample(s), e.g. sample index=3:")
    assert "vime-lint check: clean" in out
    # with the default policy the first failure is an error in the user's code (exit 1)
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "failures per hook" not in out
    assert "error: --custom-rm-path `vime_ref_failing.reward_fails_on_even` raised ValueError" \
        in out


# ---- vime.contract.checks.failures on exact values ---------------------------------------------


def _s(index: int, group: int, failed: bool = False) -> Sample:
    return Sample(index=index, group_index=group, tokens=[1, 2], response_length=1, reward=1.0,
                  status=Sample.Status.FAILED if failed else Sample.Status.COMPLETED)


def test_without_failed_drops_failed_leaves_and_emptied_rollouts_but_keeps_every_group() -> None:
    from vime.contract.checks.failures import without_failed
    from vime.contract.checks.settings import CheckSettings
    from vime.contract.checks.shape import read_shape

    ok, other = _s(0, 0), _s(3, 1)
    samples = [[[ok, _s(1, 0, True)], [_s(2, 0, True)]], [[other]], [[_s(4, 2, True)]]]
    shape, _ = read_shape(samples, CheckSettings())
    assert shape is not None and shape.depth == 3
    out = without_failed(shape)
    assert out.depth == 3
    assert [leaf.sample for leaf in out.leaves] == [ok, other]
    assert [[(r.prefix, [leaf.sample for leaf in r.leaves]) for r in g] for g in out.groups] == \
        [[(shape.groups[0][0].prefix, [ok])], [(shape.groups[1][0].prefix, [other])], []]
    assert out.group_prefixes == shape.group_prefixes and len(out.group_prefixes) == 3
    clean, _ = read_shape([[ok], [other]], CheckSettings())
    assert clean is not None and without_failed(clean) is clean


def test_error_records_on_exact_values() -> None:
    from vime.contract.checks.failures import error_record_problem

    good = {"hook": "h", "type": "ValueError", "message": "m", "seconds": 0}
    assert error_record_problem(good) is None
    assert error_record_problem({**good, "seconds": 0.5}) is None
    assert error_record_problem({"hook": "h"}) == "lacks 'type', 'message', 'seconds'"
    assert error_record_problem({**good, "seconds": -0.1}) == \
        "['seconds'] is -0.1, expected a finite number >= 0"


def test_vim180_and_vim181_edge_cases() -> None:
    from vime.contract.checks.failures import check_vim180, check_vim181
    from vime.contract.checks.locations import Loc
    from vime.contract.checks.settings import CheckSettings

    s, loc = CheckSettings(), Loc("samples[0][0]", 0)
    bare = _s(0, 0, True)
    bare.metadata = None  # type: ignore[assignment]
    found = check_vim180(bare, loc, s, "rollout")           # no metadata dict: no record
    assert [v.id for v in found] == ["VIM180"] and "is missing" in found[0].message
    nothing = _s(0, 0, True)
    nothing.loss_mask, nothing.response_length = None, 0
    assert check_vim181(nothing, loc, s, "rollout") == []          # no token to train
    nothing.response_length = None  # type: ignore[assignment]
    assert check_vim181(nothing, loc, s, "rollout") == []          # unknown length: 0
    one = _s(0, 0, True)
    one.loss_mask, one.response_length = None, 1
    assert [v.id for v in check_vim181(one, loc, s, "rollout")] == ["VIM181"]
    masked = _s(0, 0, True)
    masked.loss_mask, masked.response_length = [1], 0
    found = check_vim181(masked, loc, s, "rollout")
    assert [v.id for v in found] == ["VIM181"] and "has trainable tokens" in found[0].message
