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


# ---- every finding on exact values: where, message, id --------------------------------------

NAN, INF = float("nan"), float("inf")
_GRAD = torch.ones(3, requires_grad=True)


def _exact(found: list) -> list[tuple[str, str, str]]:
    return [(v.id, v.where, v.message) for v in found]


LOSS, LOG = "custom loss result[0] (loss)", "custom loss result[1]"
EXACT_CASES = [
    ("loss 3-tuple", lambda: custom_loss_result_problems((1, 2, 3)),
     [("VIM190", "custom loss result", "is a 3-tuple, expected a (loss, log_dict) pair")]),
    ("loss str", lambda: custom_loss_result_problems("x"),
     [("VIM190", "custom loss result", "is a str, expected a (loss, log_dict) pair")]),
    ("loss float", lambda: custom_loss_result_problems((1.0, {})),
     [("VIM190", LOSS, "is a float, expected a 0-d torch tensor")]),
    ("loss inf", lambda: custom_loss_result_problems((torch.tensor(INF, requires_grad=True), {})),
     [("VIM190", LOSS, "is inf: not finite")]),
    ("loss vector", lambda: custom_loss_result_problems((torch.ones(2), {})),
     [("VIM190", LOSS, "has shape (2,), expected a scalar (reduce it, e.g. with "
                       "sum_of_sample_mean)"),
      ("VIM190", LOSS, "does not require grad: it was not computed from `logits` (or was "
                       "detached), so backward() would train nothing")]),
    ("log_dict list", lambda: custom_loss_result_problems((_GRAD.sum(), [1])),
     [("VIM190", f"{LOG} (log_dict)", "is a list, expected a dict of names to numbers")]),
    ("log_dict values", lambda: custom_loss_result_problems((_GRAD.sum(), {
        1: 2, "a": NAN, "b": torch.ones(2), "c": "x", "d": True, "e": torch.tensor([INF]),
        "f": -INF, "ok": torch.tensor([2.0]), "ok2": 3})),
     [("VIM190", f"{LOG} (log_dict)", "has the key 1 (int), expected str"),
      ("VIM190", f"{LOG}['a']", "is nan, not finite"),
      ("VIM190", f"{LOG}['b']", "is a tensor of shape (2,), not one number"),
      ("VIM190", f"{LOG}['c']", "is a str, not a number"),
      ("VIM190", f"{LOG}['d']", "is a bool, not a number"),
      ("VIM190", f"{LOG}['e']", "is inf, not finite"),
      ("VIM190", f"{LOG}['f']", "is -inf, not finite")]),
    ("advantages returned", lambda: advantages_result_problems([1], {}, [3, 2]),
     [("VIM191", "advantage function result", "is a list, expected None: store the advantages "
                                              "in rollout_data['advantages'] instead of "
                                              "returning them"),
      ("VIM191", "rollout_data", "has no 'advantages' key after the call: the hook must set "
                                 "rollout_data['advantages']")]),
    ("advantages tensor", lambda: advantages_result_problems(
        None, {"advantages": torch.ones(2, 3)}, [3, 2]),
     [("VIM191", "rollout_data['advantages']", "is a tensor of shape (2, 3), expected a list "
                                               "with one 1-D tensor per sample (2 samples)")]),
    ("advantages count", lambda: advantages_result_problems(
        None, {"advantages": [torch.ones(3)]}, [3, 2]),
     [("VIM191", "rollout_data['advantages']", "has 1 entries, expected one per sample (2)")]),
    ("advantages entries", lambda: advantages_result_problems(None, {
        "advantages": [[1.0], torch.ones(1), torch.ones(2), torch.tensor([NAN]), torch.ones(2)],
        "returns": None}, [3, 2, 1, 1, 2]),
     [("VIM191", "rollout_data['advantages'][0]", "is a list, expected a 1-D tensor of 3 "
                                                  "values (response_lengths[0])"),
      ("VIM191", "rollout_data['advantages'][1]", "has shape (1,), expected (2,) "
                                                  "(response_lengths[1]) (one value per "
                                                  "sample: broadcast it to every response "
                                                  "token)"),
      ("VIM191", "rollout_data['advantages'][2]", "has shape (2,), expected (1,) "
                                                  "(response_lengths[2])"),
      ("VIM191", "rollout_data['advantages'][3]", "holds NaN or inf values")]),
    ("advantages (1, 1) for one token", lambda: advantages_result_problems(
        None, {"advantages": [torch.ones(1, 1)]}, [1]),
     [("VIM191", "rollout_data['advantages'][0]", "has shape (1, 1), expected (1,) "
                                                  "(response_lengths[0])")]),
    ("advantages: five findings at most", lambda: advantages_result_problems(
        None, {"advantages": [[0]] * 7}, [1] * 7),
     [("VIM191", f"rollout_data['advantages'][{i}]", "is a list, expected a 1-D tensor of 1 "
                                                     f"values (response_lengths[{i}])")
      for i in range(5)]),
    ("returns", lambda: advantages_result_problems(
        None, {"advantages": [torch.ones(1)], "returns": [torch.ones(2)]}, [1]),
     [("VIM191", "rollout_data['returns'][0]", "has shape (2,), expected (1,) "
                                               "(response_lengths[0])")]),
    ("advantages and returns both wrong", lambda: advantages_result_problems(
        None, {"advantages": [torch.ones(2)], "returns": [torch.ones(3)]}, [1]),
     [("VIM191", "rollout_data['advantages'][0]", "has shape (2,), expected (1,) "
                                                  "(response_lengths[0])"),
      ("VIM191", "rollout_data['returns'][0]", "has shape (3,), expected (1,) "
                                               "(response_lengths[0])")]),
    ("tis str", lambda: tis_result_problems("x", (3,), [(3,)]),
     [("VIM192", "TIS function result", "is a str, expected (pg_loss, "
                                        "modified_response_masks, tis_metrics)")]),
    ("tis 2-tuple", lambda: tis_result_problems((1, 2), (3,), [(3,)]),
     [("VIM192", "TIS function result", "is a 2-tuple, expected (pg_loss, "
                                        "modified_response_masks, tis_metrics)")]),
    ("tis None", lambda: tis_result_problems(None, (3,), [(3,)]),
     [("VIM192", "TIS function result", "is a NoneType, expected (pg_loss, "
                                        "modified_response_masks, tis_metrics)")]),
    ("tis containers", lambda: tis_result_problems(
        (torch.tensor([1.0, NAN, 0.0]), {"m": 1}, [1]), (3,), [(3,)]),
     [("VIM192", "TIS function result[0] (pg_loss)", "holds NaN or inf values"),
      ("VIM192", "TIS function result[1] (modified_response_masks)",
       "is a dict, expected a list of 1 masks (one per sample)"),
      ("VIM192", "TIS function result[2] (tis_metrics)",
       "is a list, expected a dict of names to tensors")]),
    ("tis counts", lambda: tis_result_problems((1.0, [torch.ones(2), torch.ones(3)], {}),
                                               (3,), [(3,)]),
     [("VIM192", "TIS function result[0] (pg_loss)",
       "is a float, expected a tensor of the given shape (3,)"),
      ("VIM192", "TIS function result[1] (modified_response_masks)",
       "is a list of 2 entries, expected a list of 1 masks (one per sample)")]),
    ("tis masks and metrics", lambda: tis_result_problems(
        (torch.zeros(3), [torch.ones(2), torch.tensor([1.0, 0.5]), [1, 1]],
         {1: 2, "a": torch.ones(2), "b": torch.tensor([1.0, NAN, 1.0]), "c": "x",
          "d": torch.tensor(NAN), "ok": torch.ones(3), "ok1": torch.tensor(2.0), "ok2": 4}),
        (3,), [(2,), (2,), (2,)]),
     [("VIM192", "TIS function result[1][1]", "holds values other than 0 and 1 (weights "
                                              "belong in pg_loss, masks only select tokens)"),
      ("VIM192", "TIS function result[1][2]", "is a list, expected shape (2,) (loss_masks[2])"),
      ("VIM192", "TIS function result[2]", "has the key 1, expected str"),
      ("VIM192", "TIS function result[2]['a']", "has shape (2,), expected (3,) (one value per "
                                                "token) or one number"),
      ("VIM192", "TIS function result[2]['b']", "holds NaN or inf values"),
      ("VIM192", "TIS function result[2]['c']", "is a str, not a number"),
      ("VIM192", "TIS function result[2]['d']", "is nan, not finite")]),
    ("reducer factory", lambda: reducer_factory_problems(3),
     [("VIM193", "pg-loss reducer factory result",
       "is a int, expected a callable reduce(pg_loss)")]),
    ("reducer str", lambda: reduced_loss_problems("x", input_requires_grad=False),
     [("VIM193", "pg-loss reducer output", "is a str, expected a 0-d tensor")]),
    ("reducer vector", lambda: reduced_loss_problems(torch.ones(2), input_requires_grad=False),
     [("VIM193", "pg-loss reducer output", "has shape (2,), expected a scalar")]),
    ("reducer nan", lambda: reduced_loss_problems(torch.tensor(NAN), input_requires_grad=False),
     [("VIM193", "pg-loss reducer output", "is nan: not finite")]),
    ("reducer detached", lambda: reduced_loss_problems(torch.tensor(1.0),
                                                       input_requires_grad=True),
     [("VIM193", "pg-loss reducer output", "does not require grad although pg_loss did (it "
                                           "was detached or rebuilt from numbers): backward() "
                                           "would skip the policy loss")]),
    ("reducer one element", lambda: reduced_loss_problems(torch.tensor([1.0]),
                                                          input_requires_grad=False), []),
]


@pytest.mark.parametrize("check,expected", [c[1:] for c in EXACT_CASES],
                         ids=[c[0] for c in EXACT_CASES])
def test_b7_findings_on_exact_values(check: object, expected: list) -> None:
    found = check()  # type: ignore[operator]
    assert _exact(found) == expected
    assert all(v.severity == "error" for v in found)


def test_is_tensor_needs_every_tensor_method() -> None:
    from vime.contract.checks.trainer import is_tensor

    class Almost:
        shape, dim, detach, isfinite, requires_grad = (1,), None, None, None, False

    assert is_tensor(torch.ones(1)) and is_tensor(Almost())
    for missing in ("shape", "dim", "detach", "isfinite", "requires_grad"):
        cls = type("Partial", (), {a: None for a in ("shape", "dim", "detach", "isfinite",
                                                       "requires_grad") if a != missing})
        assert not is_tensor(cls()), missing


def test_b7_warnings_alone_do_not_stop_the_step_and_the_header_counts_errors() -> None:
    warn = INVARIANTS["VIM190"].violation("x", severity="warning", problem="p")
    require_trainer_result([warn], hook="custom_loss_function_path", hook_path="m.f",
                           rollout_id=1)
    found = custom_loss_result_problems((torch.ones(2), {}))
    with pytest.raises(ContractError) as info:
        require_trainer_result([warn, *found], hook="custom_loss_function_path",
                               hook_path=None, rollout_id=2)
    text = str(info.value)
    assert text.splitlines()[0] == (
        "custom loss `configured --custom-loss-function-path` (--custom-loss-function-path) "
        "step 2: 2 contract error(s) at the trainer boundary B7; the step stopped before the "
        "optimiser step")
    assert "VIM190 error: custom loss result[0] (loss) has shape (2,)" in text
    assert " p\n" not in text and "VIM190 warning" not in text
