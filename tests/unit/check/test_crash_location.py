"""A hook that raises is reported once, at the deepest frame in the user's own file, with the
exception's text (vime_lint.check.calls.user_origin): an agent that raises is not reported a
second time as the default rollout that ran it, nor at a line inside vime."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import vime
from vime_lint.check.calls import is_user_file, user_origin
from vime_lint.runtime.harness import main

pytestmark = pytest.mark.unit

AGENT = '''
def helper(x):
    return {"a": 1}[x]


async def run_agent(args, sample, base_url, api_key, **kwargs):
    return helper("b")
'''

REWARD = '''
import json


async def reward(args, sample):
    return json.loads("not json")
'''


@pytest.fixture(autouse=True)
def _paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cl_raising_agent.py").write_text(AGENT)
    (tmp_path / "cl_raising_reward.py").write_text(REWARD)
    monkeypatch.syspath_prepend(str(tmp_path))


def _errors(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, [line for line in out.splitlines() if line.startswith("error:")]


def test_a_raising_agent_is_one_error_at_the_users_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, errors = _errors(capsys, "--agent-function-path", "cl_raising_agent.run_agent")
    assert code == 1
    where = os.path.realpath(tmp_path / "cl_raising_agent.py")
    assert [e.replace(str(tmp_path / "cl_raising_agent.py"), where) for e in errors] == [
        f"error: --agent-function-path `cl_raising_agent.run_agent` raised KeyError: 'b' at "
        f"{where}:3 in helper"], errors


def test_an_error_raised_in_a_library_is_located_at_the_users_call(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, errors = _errors(capsys, "--rollout-function-path",
                           "vime.rollout.vllm_rollout.generate_rollout",
                           "--custom-rm-path", "cl_raising_reward.reward")
    assert code == 1 and errors
    path = tmp_path / "cl_raising_reward.py"
    assert all(f"{path}:6 in reward" in e for e in errors), errors
    assert all("JSONDecodeError: Expecting value" in e for e in errors), errors
    assert not any("json/decoder.py" in e for e in errors), errors


def _chain() -> BaseException:
    try:
        try:
            json.loads("x")      # raised inside the standard library: no user frame there
        except ValueError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as exc:
        return exc
    raise AssertionError("unreachable")


def test_user_origin_and_the_files_that_are_not_the_users() -> None:
    assert not is_user_file(vime.__file__ or "")
    assert not is_user_file(json.__file__ or "")
    assert not is_user_file("<string>")
    assert is_user_file(__file__)
    exc = _chain()
    shown, frame = user_origin(exc)
    # raised here (this test file counts as the user's): the RuntimeError, at its raise
    assert shown is exc and frame is not None and frame.name == "_chain"
    assert frame.lineno == exc.__traceback__.tb_lineno if exc.__traceback__ else False
