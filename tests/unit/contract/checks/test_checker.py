"""vime.contract.checks.checker on exact results: ``validate_rollout_output``, ``run_checks`` and
``ContractChecker`` each pass the mode, the default-rollout flag, the built-in metric keys, the
once-per-step registry and the hook's context through to the checks and the policy."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from runtime_helpers import HOOK, eval_output, make_args, make_groups, train_output

import vime.contract.checks.policy as policy
from vime.contract.checks.checker import ContractChecker, run_checks, validate_rollout_output
from vime.contract.checks.policy import WarnOnce
from vime.contract.errors import ContractError, Violation
from vime.contract.hooks import HOOKS

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _fresh_warn_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty process-wide once-per-step memory for each test."""
    monkeypatch.setattr(policy, "_DEFAULT_REGISTRY", WarnOnce())


def _one_group_short() -> Any:
    """1 group where ``rollout_batch_size`` is 2: VIM104, an error only for the default
    rollout, the only finding."""
    return train_output(make_groups(groups=1))


def _rows(found: list[Violation]) -> list[tuple[str, str, str]]:
    return [(v.id, v.severity, v.context) for v in found]


def _three_ways(output: Any, mode: str = "warn", *, checker_keys: Any = (),
                **kwargs: Any) -> list[list[Violation]]:
    """The findings of ``output`` at step 7 through the function, its timed form and the
    checker (a fresh ``args`` each)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = validate_rollout_output(output, make_args(contract_check=mode),
                                        evaluation=False, hook_path=HOOK, rollout_id=7, **kwargs)
        second, seconds = run_checks(output, make_args(contract_check=mode), evaluation=False,
                                     hook_path=HOOK, rollout_id=7, **kwargs)
        assert seconds >= 0.0
        kwargs.pop("builtin_metric_keys", None)
        checker = ContractChecker(make_args(contract_check=mode),
                                  builtin_metric_keys=checker_keys)
        third, _ = checker.run_checks(output, evaluation=False, hook_path=HOOK, rollout_id=7,
                                      **kwargs)
    return [first, second, third]


CONTEXT = f"rollout `{HOOK}` (--rollout-function-path) step 7"


def test_off_mode_returns_no_findings_without_checking() -> None:
    # B1 (the metrics) is checked on every step in the other modes, whatever the interval
    output = train_output(make_groups(groups=1), metrics={"plain": "x"})
    for found in _three_ways(output, "warn"):
        assert [v.id for v in found] == ["VIM104", "VIM119", "VIM119"]
    for found in _three_ways(output, "off"):
        assert found == []
    assert not ContractChecker(make_args(contract_check="off")).enabled
    assert ContractChecker(make_args(contract_check="warn")).enabled


def test_a_custom_rollout_group_count_is_a_warning_and_the_default_rollouts_an_error() -> None:
    for found in _three_ways(_one_group_short()):
        assert _rows(found) == [("VIM104", "warning", CONTEXT)]
    for found in _three_ways(_one_group_short(), is_default_rollout=True):
        assert _rows(found) == [("VIM104", "error", CONTEXT)]
    default = HOOKS["rollout_function_path"].default
    assert default is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = validate_rollout_output(_one_group_short(), make_args(contract_check="warn"),
                                        evaluation=False, hook_path=default, rollout_id=None)
    assert [(v.id, v.severity) for v in found] == [("VIM104", "error")]
    with pytest.raises(ContractError) as err:
        validate_rollout_output(_one_group_short(), make_args(), evaluation=False,
                                hook_path=HOOK, is_default_rollout=True)
    assert err.value.ids == ["VIM104"]


def test_builtin_metric_keys_reach_the_metrics_check() -> None:
    output = train_output(make_groups(), metrics={"rollout/mine/x": 1.0, "rollout/mine/y": 2.0})
    assert all(found == [] for found in _three_ways(output))
    for found in _three_ways(output, builtin_metric_keys={"rollout/mine/y"},
                             checker_keys=["rollout/mine/y"]):
        assert [(v.id, v.where, v.message) for v in found] == [
            ("VIM119", "metrics['rollout/mine/y']",
             "key clashes with a built-in metric, which overwrites it")]


def test_the_registry_given_remembers_the_steps_warnings() -> None:
    output = _one_group_short()
    site = f"rollout_function_path:{HOOK}"
    mine, timed = WarnOnce(), WarnOnce()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        validate_rollout_output(output, make_args(contract_check="warn"), evaluation=False,
                                hook_path=HOOK, rollout_id=7, registry=mine)
        run_checks(output, make_args(contract_check="warn"), evaluation=False, hook_path=HOOK,
                   rollout_id=7, registry=timed)
        checker = ContractChecker(make_args(contract_check="warn"))
        checker.run_checks(output, evaluation=False, hook_path=HOOK, rollout_id=7)
    for registry in (mine, timed, checker.registry):
        assert not registry.first(7, "VIM104", site)      # already warned at step 7
        assert registry.first(8, "VIM104", site)
    assert policy._DEFAULT_REGISTRY.first(7, "VIM104", site)   # the default one was not used


def test_the_context_names_the_eval_hook_only_on_eval_steps_that_have_one() -> None:
    output = _one_group_short()
    args = make_args(contract_check="warn", eval_function_path="my_pkg.evals.run")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = validate_rollout_output(output, args, evaluation=False, hook_path=HOOK,
                                        rollout_id=3)
    assert [v.context for v in found] == [f"rollout `{HOOK}` (--rollout-function-path) step 3"]
    evaluation = {"math": {"rewards": [1.0], "truncated": [False], "samples": []}}
    for eval_path, hook in (("my_pkg.evals.run", "eval rollout `my_pkg.evals.run` "
                                                 "(--eval-function-path)"),
                            (None, "rollout `my_pkg.evals.run` (--rollout-function-path)")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = validate_rollout_output(
                eval_output(evaluation), make_args(contract_check="warn",
                                                   eval_function_path=eval_path),
                evaluation=True, hook_path="my_pkg.evals.run", rollout_id=3)
        assert found and {v.context for v in found} == {f"{hook} step 3"}, found
