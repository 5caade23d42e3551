"""B7, the trainer hook results (VIM190-VIM193): each check with passing and failing values.

The same checks run inside real training steps in tests/unit/backends/test_trainer_hooks.py."""

from __future__ import annotations

import pytest
import torch

from vime.contract.checks.trainer import (
    advantages_result_problems,
    custom_loss_result_problems,
    reduced_loss_problems,
    reducer_factory_problems,
    require_trainer_result,
    tis_result_problems,
)
from vime.contract.errors import ContractError
from vime.contract.invariants import INVARIANTS

pytestmark = pytest.mark.unit


def messages(found: list) -> list[str]:
    return [f"{v.where} {v.message}" for v in found]


def test_b7_ids_are_always_enforced_runtime_errors() -> None:
    for inv_id in ("VIM190", "VIM191", "VIM192", "VIM193"):
        inv = INVARIANTS[inv_id]
        assert inv.boundaries == ("B7",) and inv.enforcement == "always"
        assert inv.severity == "error"


def test_vim190_a_finite_scalar_with_grad_and_numeric_logs_pass() -> None:
    w = torch.ones(3, requires_grad=True)
    loss = (w * 2).sum()
    assert custom_loss_result_problems((loss, {"a": loss.detach(), "b": 1.5, "c": 2})) == []


@pytest.mark.parametrize("result,expected", [
    (torch.ones(()), "is a tensor of shape (), expected a (loss, log_dict) pair"),
    ((torch.ones(2, requires_grad=True), {}), "has shape (2,), expected a scalar"),
    ((torch.tensor(float("inf"), requires_grad=True), {}), "is inf: not finite"),
    ((torch.tensor(1.0), {}), "does not require grad"),
    ((1.0, {}), "is a float, expected a 0-d torch tensor"),
    ((torch.tensor(1.0, requires_grad=True), [1]), "is a list, expected a dict"),
    ((torch.tensor(1.0, requires_grad=True), {"x": float("nan")}), "['x'] is nan, not finite"),
    ((torch.tensor(1.0, requires_grad=True), {"x": torch.ones(3)}), "not one number"),
    ((torch.tensor(1.0, requires_grad=True), {1: 1.0}), "has the key 1 (int), expected str"),
])
def test_vim190_bad_custom_loss_results_are_named(result: object, expected: str) -> None:
    found = custom_loss_result_problems(result)
    assert [v.id for v in found] == ["VIM190"]
    assert expected in messages(found)[0]


def test_vim191_one_tensor_per_sample_and_token_passes() -> None:
    data = {"advantages": [torch.ones(3), torch.zeros(2)], "returns": [torch.ones(3), torch.ones(2)]}
    assert advantages_result_problems(None, data, [3, 2]) == []
    assert advantages_result_problems(None, {"advantages": data["advantages"]}, [3, 2]) == []


@pytest.mark.parametrize("result,data,expected", [
    (None, {}, "rollout_data has no 'advantages' key"),
    ([1], {"advantages": [torch.ones(3), torch.ones(2)]}, "expected None"),
    (None, {"advantages": [torch.ones(3)]}, "has 1 entries, expected one per sample (2)"),
    (None, {"advantages": [torch.ones(1), torch.ones(2)]},
     "[0] has shape (1,), expected (3,) (response_lengths[0]) (one value per sample: "
     "broadcast it"),
    (None, {"advantages": [[1.0, 1.0, 1.0], torch.ones(2)]}, "[0] is a list, expected a 1-D"),
    (None, {"advantages": [torch.ones(3), torch.tensor([1.0, float("nan")])]}, "NaN or inf"),
    (None, {"advantages": torch.ones(2, 3)}, "is a tensor of shape (2, 3), expected a list"),
    (None, {"advantages": [torch.ones(3), torch.ones(2)], "returns": [torch.ones(3)]},
     "rollout_data['returns'] has 1 entries"),
])
def test_vim191_bad_advantages_are_named(result: object, data: dict, expected: str) -> None:
    found = advantages_result_problems(result, data, [3, 2])
    assert found and {v.id for v in found} == {"VIM191"}
    assert any(expected in m for m in messages(found)), messages(found)


def test_vim192_same_shapes_and_binary_masks_pass() -> None:
    masks = [torch.ones(3), torch.tensor([1.0, 0.0])]
    result = (torch.zeros(5), masks, {"tis": torch.ones(5), "count": 2.0})
    assert tis_result_problems(result, (5,), [(3,), (2,)]) == []


@pytest.mark.parametrize("result,expected", [
    ((torch.zeros(5), [torch.ones(3), torch.ones(2)]), "is a 2-tuple, expected (pg_loss"),
    ((torch.zeros(4), [torch.ones(3), torch.ones(2)], {}), "expected a tensor of the given "
                                                            "shape (5,)"),
    ((torch.full((5,), float("nan")), [torch.ones(3), torch.ones(2)], {}), "NaN or inf"),
    ((torch.zeros(5), [torch.ones(3)], {}), "expected a list of 2 masks"),
    ((torch.zeros(5), [torch.ones(3), torch.ones(3)], {}), "[1][1] is a tensor of shape (3,), "
                                                           "expected shape (2,)"),
    ((torch.zeros(5), [torch.ones(3) * 0.5, torch.ones(2)], {}), "values other than 0 and 1"),
    ((torch.zeros(5), [torch.ones(3), torch.ones(2)], {"tis": torch.ones(4)}),
     "['tis'] has shape (4,), expected (5,)"),
    ((torch.zeros(5), [torch.ones(3), torch.ones(2)], {"tis": "x"}), "is a str, not a number"),
])
def test_vim192_bad_tis_results_are_named(result: object, expected: str) -> None:
    found = tis_result_problems(result, (5,), [(3,), (2,)])
    assert found and {v.id for v in found} == {"VIM192"}
    assert any(expected in m for m in messages(found)), messages(found)


def test_vim193_a_callable_giving_a_finite_scalar_passes() -> None:
    x = torch.ones(4, requires_grad=True)
    assert reducer_factory_problems(lambda t: t.mean()) == []
    assert reduced_loss_problems(x.mean(), input_requires_grad=True) == []


@pytest.mark.parametrize("value,expected", [
    (torch.ones(4, requires_grad=True), "has shape (4,), expected a scalar"),
    (torch.tensor(float("nan"), requires_grad=True), "is nan: not finite"),
    (torch.tensor(1.0), "does not require grad although pg_loss did"),
    (1.0, "is a float, expected a 0-d tensor"),
])
def test_vim193_bad_reducer_outputs_are_named(value: object, expected: str) -> None:
    found = reduced_loss_problems(value, input_requires_grad=True)
    assert [v.id for v in found] == ["VIM193"] and expected in found[0].message
    assert "expected a callable" in reducer_factory_problems(3).pop().message


def test_vim190_require_names_the_hook_path_argument_step_and_fix() -> None:
    found = custom_loss_result_problems(torch.ones(()))
    with pytest.raises(ContractError) as info:
        require_trainer_result(found, hook="custom_loss_function_path",
                               hook_path="my_pkg.losses.my_loss", rollout_id=4)
    text = str(info.value)
    assert "custom loss `my_pkg.losses.my_loss` (--custom-loss-function-path) step 4" in text
    assert "before the optimiser step" in text and "fix: return `(loss, log_dict)`" in text
    require_trainer_result([], hook="custom_loss_function_path", hook_path=None, rollout_id=0)
