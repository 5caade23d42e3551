"""The typeguard extension: dataclass fields, every collection item, fast predicates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from typeguard import CollectionCheckStrategy, TypeCheckError, check_type

from vime.contract.checks.typecheck import fast_accept, field_hint, field_type_problem, type_problem
from vime.contract.sample import SAMPLE_FIELDS
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


@dataclass
class _Inner:
    n: int


@dataclass
class _Outer:
    items: list[_Inner]


def test_every_contract_hint_resolves_and_accepts_the_default() -> None:
    sample = Sample()
    for spec in SAMPLE_FIELDS:
        field_hint(spec.name)
        assert field_type_problem(spec.name, getattr(sample, spec.name)) is None, spec.name


def test_dataclass_fields_are_checked_inside_the_checker_only() -> None:
    bad = _Outer(items=[_Inner(1), _Inner("2")])  # type: ignore[arg-type]
    problem = type_problem(bad, _Outer)
    assert problem is not None and "'n'" in problem and "item 1" in problem
    # typeguard's own behaviour outside our checks is unchanged: isinstance only
    check_type(bad, _Outer)


def test_all_items_are_checked() -> None:
    values = list(range(1000)) + ["x"]
    assert type_problem(values, list[int]) is not None
    # typeguard's default looks at the first item only
    check_type(values, list[int])
    with pytest.raises(TypeCheckError):
        check_type(values, list[int], collection_check_strategy=CollectionCheckStrategy.ALL_ITEMS)


@pytest.mark.parametrize("hint, good, bad", [
    (list[int], [1, 2], [1, "2"]),
    (list[float] | None, [1.0, 2], [1.0, None]),
    (dict[str, Any], {"a": object()}, {1: 2}),
    (int | None, None, "1"),
])
def test_fast_accept_never_accepts_what_typeguard_rejects(hint: Any, good: Any, bad: Any) -> None:
    assert fast_accept(hint)(good) and type_problem(good, hint) is None
    assert not fast_accept(hint)(bad) and type_problem(bad, hint) is not None


def test_subclass_values_fall_back_to_typeguard() -> None:
    import numpy as np

    assert field_type_problem("non_generation_time", np.float64(0.5)) is None
    problem = field_type_problem("weight_versions", ("a",))
    assert problem is not None and problem.startswith("a tuple of 1 item(s)")
