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
