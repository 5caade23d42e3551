"""--contract-check modes, the interval, once-per-step warnings, timing and the policy API."""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

import pytest
from runtime_helpers import HOOK, make_args, make_groups, train_output

import vime.contract.checks.policy as policy
from vime.contract.checks.policy import WarnOnce, enforce, order_findings
from vime.contract.checks.settings import CheckContext
from vime.contract.errors import ContractError, ContractWarning, LoggedContractWarning, Violation
from vime.contract.invariants import INVARIANTS
from vime_lint.runtime import (
    ContractChecker,
    run_checks,
    should_check,
    validate_rollout_output,
)

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _fresh_warn_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty once-per-step memory: the process-wide one remembers the
    (step, id, call site) pairs of tests run before in the same process (mutmut's clean run
    after its stats run saw no VIM105 warning at step 11)."""
    monkeypatch.setattr(policy, "_DEFAULT_REGISTRY", WarnOnce())


def _bad_groups() -> list:
    groups = make_groups()
    groups[0][1].loss_mask = [1]
    groups[1][0].session_id = 3                 # a warning (VIM105, not read by conversion)
    return groups


def test_raise_mode_raises_errors_with_context_and_warns_warnings() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ContractError) as info:
            validate_rollout_output(train_output(_bad_groups()), make_args(), evaluation=False,
                                    hook_path=HOOK, rollout_id=11)
    err = info.value
    assert err.ids == ["VIM108"]
    assert isinstance(err, TypeError) and isinstance(err, ValueError)
    assert err.violations[0].context == (
        "rollout `my_pkg.rollout.generate_rollout` (--rollout-function-path) step 11")
    # (a ResourceWarning of an object some earlier test left to the garbage collector may land
    # in this block; only the contract's own warnings are this test's)
    ours = [w for w in caught if not issubclass(w.category, ResourceWarning)]
    assert [w.category for w in ours] == [LoggedContractWarning]
    assert "VIM105 warning" in str(ours[0].message)


def test_raise_mode_lists_at_most_twenty() -> None:
    groups = make_groups(groups=8, n=4, loss_mask=[1])
    with pytest.raises(ContractError) as info:
        validate_rollout_output(train_output(groups), make_args(rollout_batch_size=8),
                                evaluation=False, hook_path=HOOK, rollout_id=1)
    assert len(info.value.violations) == 32
    assert "... and 12 more violation(s)" in str(info.value)


def test_warn_mode_logs_everything_and_keeps_samples(caplog: pytest.LogCaptureFixture) -> None:
    groups = _bad_groups()
    out = train_output(groups)
    args = make_args(contract_check="warn")
    with caplog.at_level(logging.WARNING, "vime.contract.checks"), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = validate_rollout_output(out, args, evaluation=False, hook_path=HOOK,
                                        rollout_id=3)
    assert [v.id for v in found] == ["VIM108", "VIM105"]
    assert sum(len(g) for g in out.samples) == 8
    assert "VIM108 error: samples[0][1].loss_mask" in caplog.text
    assert "VIM105 warning" in caplog.text
    assert len(caught) == 2 and all(issubclass(w.category, ContractWarning) for w in caught)


def test_warnings_once_per_id_and_call_site_per_step() -> None:
    groups = make_groups(weight_versions=[1])
    args = make_args(contract_check="warn")
    checker = ContractChecker(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in (1, 1, 2):
            found, _ = checker.run_checks(train_output(groups), evaluation=False, hook_path=HOOK,
                                          rollout_id=step)
            assert len(found) == 8
    assert len(caught) == 2      # step 1 once, step 2 once


def test_warn_once_registry_is_bounded() -> None:
    reg = WarnOnce(keep_steps=2)
    assert reg.first(1, "VIM105", "a") and not reg.first(1, "VIM105", "a")
    assert reg.first(1, "VIM105", "b")
    reg.first(2, "VIM105", "a")
    reg.first(3, "VIM105", "a")
    assert reg.first(1, "VIM105", "a")           # step 1 was forgotten


def test_off_mode_checks_nothing() -> None:
    args = make_args(contract_check="off")
    assert validate_rollout_output(train_output([]), args, evaluation=False, hook_path=HOOK) == []
    assert not ContractChecker(args).enabled


def test_interval_skips_b5_but_not_b1() -> None:
    args = make_args(contract_check_interval=2)
    assert should_check(args, 4) and not should_check(args, 5)
    assert should_check(args, 5, "B1") and should_check(args, None)
    assert not should_check(make_args(contract_check="off"), 4, "B1")
    out = train_output(_bad_groups())
    assert validate_rollout_output(out, args, evaluation=False, hook_path=HOOK,
                                   rollout_id=5) == []
    with pytest.raises(ContractError), warnings.catch_warnings():
        warnings.simplefilter("ignore", ContractWarning)
        validate_rollout_output(out, args, evaluation=False, hook_path=HOOK, rollout_id=6)


def test_run_checks_returns_seconds() -> None:
    output = train_output(make_groups())
    t0 = time.perf_counter()
    found, seconds = run_checks(output, make_args(), evaluation=False, hook_path=HOOK,
                                rollout_id=0)
    wall = time.perf_counter() - t0
    # The checks' own time: positive, and part of the call's wall time (no fixed bound, which
    # a loaded machine could exceed).
    assert found == [] and 0.0 < seconds <= wall


def test_checker_should_check_and_eval_context() -> None:
    args = make_args(contract_check_interval=3, eval_function_path="my_pkg.ev.eval_rollout")
    checker = ContractChecker(args)
    assert checker.should_check(3) and not checker.should_check(4) and checker.should_check(4, "B0")
    with pytest.raises(ContractError) as info:
        checker.run_checks({"toy": {"rewards": [None]}}, evaluation=True,
                           hook_path="my_pkg.ev.eval_rollout", rollout_id=3)
    assert "eval rollout `my_pkg.ev.eval_rollout` (--eval-function-path) step 3" in str(info.value)


@pytest.mark.parametrize("values, message", [
    ({"contract_check": "loud"}, "--contract-check='loud': expected one of off, warn, raise"),
    ({"contract_check_interval": 0}, "--contract-check-interval=0: expected an int >= 1"),
])
def test_invalid_settings_name_the_argument(values: dict, message: str) -> None:
    with pytest.raises(ValueError, match="contract-check"):
        should_check(make_args(**values), 1)
    with pytest.raises(ValueError) as info:
        ContractChecker(make_args(**values))
    assert message in str(info.value)


def test_default_rollout_path_makes_group_count_an_error() -> None:
    from vime.contract.hooks import HOOKS

    with pytest.raises(ContractError) as info:
        validate_rollout_output(train_output(make_groups(groups=3)), make_args(),
                                evaluation=False, hook_path=HOOKS["rollout_function_path"].default)
    assert info.value.ids == ["VIM104"]


def test_light_imports() -> None:
    import subprocess
    import sys

    code = ("import sys, vime_lint.runtime; "
            "print(sorted(m for m in ('torch','ray','vllm','transformers','httpx') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---- the policy API on exact values ---------------------------------------------------------

_CTX = CheckContext("rollout_function_path", "my_pkg.rollout.fn", 7)


def _v(inv_id: str, severity: str = "warning", where: str = "samples") -> Violation:
    return Violation(inv_id, severity, where, "is wrong")  # type: ignore[arg-type]


def _enforce_caught(found: list, mode: str, ctx: CheckContext = _CTX, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = enforce(found, mode, ctx, **kwargs)  # type: ignore[arg-type]
    return out, [w for w in caught if issubclass(w.category, ContractWarning)]


def test_warn_once_default_keeps_four_steps() -> None:
    reg = WarnOnce()
    for step in (1, 2, 3, 4):
        assert reg.first(step, "VIM105", "a")
    assert not reg.first(1, "VIM105", "a")        # four steps remembered
    assert reg.first(5, "VIM105", "a")            # the fifth forgets the oldest
    assert reg.first(1, "VIM105", "a")


def test_order_findings_errors_first_then_id_order_unknown_ids_last() -> None:
    last_known = list(INVARIANTS)[-1]
    found = [_v("VIM999"), _v(last_known), _v("VIM110"), _v("VIM105"),
             _v("VIM112", "error"), _v("VIM105", "error", "x")]
    assert [(v.id, v.severity) for v in order_findings(found)] == [
        ("VIM105", "error"), ("VIM112", "error"), ("VIM105", "warning"), ("VIM110", "warning"),
        (last_known, "warning"), ("VIM999", "warning")]


def test_enforce_off_mode_returns_findings_without_raising_or_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "vime.contract.checks"):
        out, caught = _enforce_caught([_v("VIM110"), _v("VIM108", "error")], "off")
    assert [v.id for v in out] == ["VIM108", "VIM110"]
    assert caught == [] and caplog.records == []


def test_enforce_raise_header_and_limit() -> None:
    errors = [_v("VIM108", "error", "a"), _v("VIM108", "error", "b"), _v("VIM110", "error", "c")]
    with pytest.raises(ContractError) as info:
        enforce(errors, "raise", _CTX, limit=2)
    text = str(info.value)
    assert text.splitlines()[0] == (
        "rollout `my_pkg.rollout.fn` (--rollout-function-path) step 7: 3 contract error(s) "
        "(--contract-check raise; --contract-check warn logs them and keeps the samples)")
    assert text.splitlines()[-1] == "... and 1 more violation(s)"
    assert info.value.ids == ["VIM108", "VIM108", "VIM110"]


def test_enforce_raise_without_errors_warns_the_warnings(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "vime.contract.checks"):
        out, caught = _enforce_caught([_v("VIM117"), _v("VIM105")], "raise")
    assert [v.id for v in out] == ["VIM105", "VIM117"]
    assert [str(w.message).split(":")[0] for w in caught] == ["VIM105 warning", "VIM117 warning"]
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_enforce_uses_the_given_registry(mode: str) -> None:
    reg = WarnOnce()
    assert reg.first(7, "VIM105", _CTX.call_site)
    found = [_v("VIM105")] + ([_v("VIM108", "error")] if mode == "raise" else [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            enforce(found, mode, _CTX, registry=reg)  # type: ignore[arg-type]
        except ContractError:
            assert mode == "raise"
    assert [w for w in caught if issubclass(w.category, ContractWarning)] == []


def test_warnings_once_per_call_site_not_per_id() -> None:
    other = CheckContext("eval_function_path", "my_pkg.ev.fn", 7)
    _, first = _enforce_caught([_v("VIM105")], "warn")
    _, second = _enforce_caught([_v("VIM105")], "warn", other)
    _, again = _enforce_caught([_v("VIM105")], "warn")
    assert (len(first), len(second), len(again)) == (1, 1, 0)


def test_report_log_level_and_text(caplog: pytest.LogCaptureFixture) -> None:
    many = [_v("VIM105", where=f"samples[{i}]") for i in range(21)]
    with caplog.at_level(logging.WARNING, "vime.contract.checks"):
        _enforce_caught(many, "warn")
        _enforce_caught([_v("VIM105"), _v("VIM108", "error")], "warn")
    warned, errored = caplog.records
    assert warned.levelno == logging.WARNING and errored.levelno == logging.ERROR
    assert warned.getMessage() == (
        "rollout `my_pkg.rollout.fn` (--rollout-function-path) step 7: 21 contract "
        "finding(s)\n" + "\n".join(v.format() for v in many))
    assert errored.getMessage().startswith(
        "rollout `my_pkg.rollout.fn` (--rollout-function-path) step 7: 2 contract finding(s)\n"
        "VIM108 error: samples is wrong")


@pytest.mark.skipif("mutants" in Path(policy.__file__).parts,
                    reason="mutmut's trampolines put frames between the warning and its caller")
def test_warning_points_at_the_caller_of_the_check() -> None:
    # stacklevel=4: _report, enforce, validate_rollout_output, then the code that called it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        validate_rollout_output(train_output(_bad_groups()), make_args(contract_check="warn"),
                                evaluation=False, hook_path=HOOK, rollout_id=4)
    ours = [w for w in caught if issubclass(w.category, ContractWarning)]
    assert len(ours) == 2 and {w.filename for w in ours} == {__file__}
