"""`vime train` prints an error from user code as the message, the user's file:line and the
path of the full traceback (vime.utils.user_errors, vime.utils.train_errors.report_error)."""

from __future__ import annotations

import importlib.util
from argparse import Namespace
from pathlib import Path

import pytest

from vime.contract.errors import ContractError
from vime.utils.train_errors import report_error as _report_error
from vime.utils.user_errors import TRAIN_LOG, cause_of, short_report, user_frame, write_traceback

pytestmark = pytest.mark.unit

USER_CODE = "def score(sample):\n    return 1.0 / sample\n"


def _user_error(tmp_path: Path) -> Exception:
    path = tmp_path / "my_reward.py"
    path.write_text(USER_CODE)
    spec = importlib.util.spec_from_file_location("my_reward", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        module.score(0)
    except ZeroDivisionError as exc:
        return exc
    raise AssertionError("no error")


class FakeRayTaskError(Exception):
    """What the driver gets from an actor: the cause and the remote traceback as text (the
    attributes of ray.exceptions.RayTaskError)."""

    def __init__(self, cause: BaseException, traceback_str: str) -> None:
        super().__init__("ray::_ActorCore.generate() failed")
        self.cause = cause
        self.traceback_str = traceback_str


def test_user_frame_of_a_local_error(tmp_path: Path) -> None:
    exc = _user_error(tmp_path)
    assert user_frame(exc) == (str(tmp_path / "my_reward.py"), 2, "score")


def test_user_frame_of_a_remote_error_is_read_from_rays_text(tmp_path: Path) -> None:
    vime_file = Path(__file__).resolve().parents[3] / "vime" / "ray" / "rollout.py"
    remote = (f'Traceback (most recent call last):\n  File "{vime_file}", line 320, in generate\n'
              f'  File "{tmp_path}/my_rollout.py", line 17, in generate_rollout\n'
              f'  File "{vime_file}", line 99, in helper\n'
              "ZeroDivisionError: float division by zero\n")
    exc = FakeRayTaskError(ZeroDivisionError("float division by zero"), remote)
    assert cause_of(exc).args == ("float division by zero",)
    assert user_frame(exc) == (f"{tmp_path}/my_rollout.py", 17, "generate_rollout")


def test_vime_or_library_errors_have_no_user_frame() -> None:
    vime_file = Path(__file__).resolve().parents[3] / "vime" / "ray" / "rollout.py"
    lib_file = Path(pytest.__file__).resolve()
    remote = (f'  File "{vime_file}", line 320, in generate\n'
              f'  File "{lib_file}", line 5, in main\n  File "<frozen runpy>", line 1, in x\n')
    assert user_frame(FakeRayTaskError(RuntimeError("engine gone"), remote)) is None


def test_short_report_and_log(tmp_path: Path) -> None:
    exc = _user_error(tmp_path)
    log = write_traceback(tmp_path / "run", exc)
    assert log == tmp_path / "run" / TRAIN_LOG
    assert "Traceback (most recent call last)" in log.read_text()
    assert short_report(exc, log).splitlines() == [
        "ZeroDivisionError: float division by zero",
        f"  at {tmp_path / 'my_reward.py'}:2 in score",
        f"  full traceback: {log}"]


def test_report_error_prints_three_lines_for_user_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exc = FakeRayTaskError(_user_error(tmp_path), "")
    assert _report_error(Namespace(run_dir=str(tmp_path / "run")), exc) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "vime train: error in your code: ZeroDivisionError: float division by zero"
    assert err[1].endswith("my_reward.py:2 in score") and len(err) == 3


def test_report_error_prints_a_contract_violation_with_the_log(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exc = FakeRayTaskError(ContractError("VIM110 error: samples[0][0].reward is None"), "")
    assert _report_error(Namespace(run_dir=str(tmp_path / "run")), exc) == 1
    err = capsys.readouterr().err
    assert err.startswith("vime train: contract violation, stopped before the optimiser step:\n"
                          "VIM110 error: samples[0][0].reward is None\n  full traceback: ")
    assert "Traceback" not in err


def test_report_error_raises_vimes_own_errors_again(tmp_path: Path) -> None:
    exc = RuntimeError("engine gone")
    with pytest.raises(RuntimeError, match="engine gone"):
        _report_error(Namespace(run_dir=str(tmp_path / "run")), exc)


def test_contract_violation_on_many_samples_is_one_entry(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vime.contract.invariants import INVARIANTS

    found = [INVARIANTS["VIM110"].violation(f"samples[{g}][{e}].reward (index={2 * g + e})",
                                            problem="is None", context="rollout `m.f` step 0")
             for g in range(32) for e in range(2)]
    exc = FakeRayTaskError(ContractError(found, header="rollout `m.f` step 0: 64 errors"), "")
    assert _report_error(Namespace(run_dir=str(tmp_path / "run")), exc) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[1] == "rollout `m.f` step 0: 64 errors"
    assert err[2] == "VIM110 error: samples[0][0].reward (index=0) is None"
    assert err[3].startswith("  64 findings at samples[*][*].reward: also samples[0][1]")
    assert sum(line.startswith("VIM110") for line in err) == 1
