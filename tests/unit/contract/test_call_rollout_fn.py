"""call_rollout_fn: the docs/contract.md §4 result table, row by row."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from vime.contract import ContractError
from vime.rollout.base_types import (
    RolloutFnEvalOutput,
    RolloutFnTrainOutput,
    call_rollout_fn,
    finalize_rollout_groups,
    iter_samples,
)
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def returning(value: Any):  # type: ignore[no-untyped-def]
    def generate_rollout(args, rollout_id, data_source, evaluation=False):  # type: ignore[no-untyped-def]
        return value() if callable(value) else value

    return generate_rollout


TRAIN = RolloutFnTrainOutput(samples=[[Sample()]])
EVAL = RolloutFnEvalOutput(data={"toy": {"rewards": [], "truncated": [], "samples": []}})


def test_train_output_returned_as_is() -> None:
    assert call_rollout_fn(returning(TRAIN), None, 0, None, evaluation=False) is TRAIN


def test_eval_output_returned_as_is() -> None:
    assert call_rollout_fn(returning(EVAL), None, 0, None, evaluation=True) is EVAL


def test_evaluation_is_passed_by_keyword() -> None:
    seen: dict[str, Any] = {}

    def fn(*args: Any, **kwargs: Any) -> RolloutFnEvalOutput:
        seen.update(args=args, kwargs=kwargs)
        return EVAL

    call_rollout_fn(fn, "a", 1, "ds", evaluation=True)
    assert seen == {"args": ("a", 1, "ds"), "kwargs": {"evaluation": True}}


def test_bare_list_in_train_is_wrapped_with_deprecation_warning() -> None:
    groups = [[Sample()]]
    with pytest.warns(DeprecationWarning, match=r"returned a bare list in train mode"):
        out = call_rollout_fn(returning(groups), None, 0, None, evaluation=False)
    assert isinstance(out, RolloutFnTrainOutput) and out.samples is groups


def test_bare_dict_in_eval_is_wrapped_with_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"returned a bare dict in eval mode"):
        out = call_rollout_fn(returning({"toy": {}}), None, 0, None, evaluation=True)
    assert isinstance(out, RolloutFnEvalOutput) and out.data == {"toy": {}}


@pytest.mark.parametrize(
    ("value", "evaluation", "message"),
    [
        (None, False, r"\(train\) returned None; expected RolloutFnTrainOutput"),
        (None, True, r"\(eval\) returned None; expected RolloutFnEvalOutput"),
        (([], {}), False, r"returned a tuple of 2 item\(s\)"),
        ({"toy": {}}, False, r"\(train\) returned a dict; the train path \(evaluation=False\) must return RolloutFnTrainOutput"),
        ([[Sample()]], True, r"\(eval\) returned a list; the eval path \(evaluation=True\) must return RolloutFnEvalOutput"),
        (TRAIN, True, r"returned a vime.rollout.base_types.RolloutFnTrainOutput; the eval path"),
        (EVAL, False, r"returned a vime.rollout.base_types.RolloutFnEvalOutput; the train path"),
        (RolloutFnTrainOutput(samples=()), False, r"its `samples` is a tuple of 0 item\(s\), expected a list"),  # type: ignore[arg-type]
        (42, False, r"returned a int; expected RolloutFnTrainOutput"),
    ],
)
def test_rejected_results_name_function_mode_and_type(value: Any, evaluation: bool, message: str) -> None:
    with pytest.raises(ContractError, match=message) as info:
        call_rollout_fn(returning(value), None, 0, None, evaluation=evaluation)
    # The function is named by module and qualified name (this module's name depends on how
    # pytest imported it, so it is read, not spelled out).
    name = f"{returning.__module__}.returning.<locals>.generate_rollout"
    assert f"VIM101 error: rollout function `{name}` ({'eval' if evaluation else 'train'}) " \
        f"returned " in str(info.value)


def test_coroutine_is_closed_and_rejected() -> None:
    async def generate_rollout(args, rollout_id, data_source, evaluation=False):  # type: ignore[no-untyped-def]
        return TRAIN

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an un-closed coroutine would warn "never awaited"
        with pytest.raises(ContractError, match=r"returned a coroutine; it is an async def; rollout functions are called synchronously"):
            call_rollout_fn(generate_rollout, None, 0, None, evaluation=False)


def test_generator_is_rejected() -> None:
    def generate_rollout(args, rollout_id, data_source, evaluation=False):  # type: ignore[no-untyped-def]
        yield TRAIN

    with pytest.raises(ContractError, match=r"returned a generator; it contains `yield`"):
        call_rollout_fn(generate_rollout, None, 0, None, evaluation=False)


def test_iter_samples_yields_leaves_of_any_depth() -> None:
    a, b, c = Sample(index=0), Sample(index=1), Sample(index=2)
    assert list(iter_samples([[a, [b, c]]])) == [a, b, c]
    assert list(iter_samples(a)) == [a]


def test_finalize_sorts_groups_by_first_index_and_marks_finalized() -> None:
    from argparse import Namespace

    g1, g0 = [Sample(index=5)], [[Sample(index=None)]]
    out = finalize_rollout_groups(Namespace(rollout_sample_filter_path=None), 0, [g1, g0])  # type: ignore[list-item]
    assert out.samples == [g0, g1] and out.finalized
