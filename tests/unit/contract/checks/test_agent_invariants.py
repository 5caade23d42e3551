"""VIM185-VIM187: an --agent-function-path run (what run returned, calls made, calls left in
flight), through the pure checks and the B2 boundary call with --contract-check."""

from __future__ import annotations

import pytest
from runtime_helpers import make_args

from vime.contract.checks import check_agent_result
from vime.contract.checks.agent import check_vim185, check_vim186, check_vim187
from vime.contract.checks.settings import CheckSettings
from vime.contract.errors import ContractError, ContractWarning

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def fresh_warn_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no warning given yet: a finding warns once per step and call
    site, so a test that ran before (or the same test run twice, as mutmut does) would
    otherwise leave only the log line."""
    from vime.contract.checks import policy

    monkeypatch.setattr(policy, "_DEFAULT_REGISTRY", policy.WarnOnce())

PATH = "my_agent.run_agent"


def test_vim185_rejects_a_string_result() -> None:
    v = check_vim185("1.0", CheckSettings(), "agent function result (index=3)")
    assert v is not None and v.id == "VIM185" and v.severity == "error"
    assert "agent function result (index=3)" in v.where and "str" in v.message


def test_vim185_rejects_an_unawaited_coroutine() -> None:
    async def helper() -> float:
        return 1.0

    v = check_vim185(helper(), CheckSettings(), "agent function result")
    assert v is not None and "un-awaited coroutine" in v.message


def test_vim185_rejects_a_dict_without_reward_key() -> None:
    v = check_vim185({"score": 1.0}, CheckSettings(), "agent function result")
    assert v is not None and "--reward-key" in v.message


def test_vim185_accepts_numbers_keyed_dicts_and_none() -> None:
    s = CheckSettings(reward_key="score")
    assert check_vim185(1.0, s, "r") is None and check_vim185(0, s, "r") is None
    assert check_vim185(None, s, "r") is None and check_vim185({"score": 0.5}, s, "r") is None


def test_vim185_warns_on_a_bool() -> None:
    v = check_vim185(True, CheckSettings(), "r")
    assert v is not None and v.severity == "warning"


def test_vim186_rejects_a_run_without_calls() -> None:
    v = check_vim186(0, "agent run (index=2)")
    assert v is not None and v.id == "VIM186" and "recorded no model call" in v.message
    assert "AsyncOpenAI(base_url=base_url, api_key=api_key)" in v.fix


def test_vim186_accepts_a_run_with_calls() -> None:
    assert check_vim186(2, "agent run") is None


def test_vim187_warns_on_calls_in_flight() -> None:
    v = check_vim187(1, "agent run (index=0)")
    assert v is not None and v.id == "VIM187" and v.severity == "warning"
    assert "1 model call(s) were still running" in v.message


def test_vim187_accepts_a_run_that_awaited_everything() -> None:
    assert check_vim187(0, "agent run") is None


def test_vim185_boundary_raises_with_the_hook_and_its_argument() -> None:
    with pytest.raises(ContractError) as info:
        check_agent_result(b"x", make_args(), hook_path=PATH, rollout_id=0, index=4, calls=1)
    text = str(info.value)
    assert "VIM185" in text and PATH in text and "--agent-function-path" in text


def test_vim187_boundary_only_warns_in_raise_mode() -> None:
    with pytest.warns(ContractWarning, match="VIM187 warning: agent run"):
        found = check_agent_result(1.0, make_args(), hook_path=PATH, rollout_id=0, calls=2,
                                   in_flight=1)
    assert [v.id for v in found] == ["VIM187"]
    assert check_agent_result(1.0, make_args(contract_check="off"), hook_path=PATH,
                              rollout_id=0, calls=0) == []


NO_CALL = ("recorded no model call: run returned without a completed request to the base_url "
           "and api_key it was given, so the trajectory has no model tokens to train on")


def test_agent_result_problems_on_exact_values_with_and_without_an_index() -> None:
    from vime.contract.checks.agent import agent_result_problems

    found = agent_result_problems("1.0", CheckSettings(), calls=0, in_flight=2, index=3)
    assert [(v.id, v.severity, v.where, v.message) for v in found] == [
        ("VIM185", "error", "agent function result (index=3)",
         "is '1.0' (str), expected a finite real (the agent returned '1.0' (str))"),
        ("VIM186", "error", "agent run (index=3)", NO_CALL),
        ("VIM187", "warning", "agent run (index=3)",
         "returned while 2 model call(s) were still running: they are not part of the "
         "trajectory")]
    found = agent_result_problems({"r": 1.0}, CheckSettings(), calls=0, in_flight=1)
    assert [(v.id, v.where) for v in found] == [
        ("VIM185", "agent function result"), ("VIM186", "agent run"), ("VIM187", "agent run")]
    assert found[1].message == NO_CALL
    assert agent_result_problems(None, CheckSettings(), calls=1, in_flight=0, index=0) == []


def test_vim186_one_call_is_enough() -> None:
    assert check_vim186(1, "agent run") is None
    v = check_vim186(0, "agent run (index=1)")
    assert v is not None and (v.where, v.message) == ("agent run (index=1)", NO_CALL)


def test_vim185_closes_the_coroutine_it_was_given(recwarn: pytest.WarningsRecorder) -> None:
    import gc

    async def helper() -> float:
        return 1.0

    coro = helper()
    v = check_vim185(coro, CheckSettings(), "agent function result (index=2)")
    assert v is not None and v.where == "agent function result (index=2)"
    assert v.message == ("is an awaitable: the agent returned an un-awaited coroutine instead "
                         "of its reward")
    assert coro.cr_frame is None          # closed: no "never awaited" warning later
    del coro
    gc.collect()
    assert not [w for w in recwarn if "never awaited" in str(w.message)]
