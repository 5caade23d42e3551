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


# ---- exact values -------------------------------------------------------------------------

def test_exact_types_of_plain_classes_and_unions() -> None:
    from vime.contract.checks.typecheck import exact_types

    none = type(None)
    assert exact_types(int) == {int}
    assert exact_types(bool) == {bool}
    assert exact_types(float) == {float, int}            # PEP 484: an int is a float
    assert exact_types(complex) == {complex, float, int}
    assert exact_types(None) == {none} and exact_types(none) == {none}
    assert exact_types(int | None) == {int, none}
    assert exact_types(float | str) == {float, int, str}
    assert exact_types(Sample.Status) == {Sample.Status}
    for hint in (Any, list, dict, tuple, set, list[int], int | list[int], Sample.SpecInfo,
                 _Inner):
        assert exact_types(hint) is None, hint


class _SubInfo(Sample.SpecInfo):
    pass


@pytest.mark.parametrize(("hint", "accepted", "not_proven"), [
    (int, [0, 7], [True, 1.0, "1", None]),
    (float, [1.0, 2], [True, "1.0", None]),
    (int | None, [None, 1], ["1", 1.0]),
    (float | str, ["a", 1.0, 1], [None, b"a"]),
    (list[int], [[], [1, 2]], [(1,), [True], [1, "2"], None]),
    (list[Any], [[], [object()]], [(1,), None]),
    (list, [], [[1], []]),
    (dict, [], [{}, {"a": 1}]),
    (list[list[int]], [[[1], []]], [[[1, "x"]], [(1,)], [1]]),
    (dict[str, Any], [{}, {"a": object()}], [{1: 2}, [], None]),
    (dict[str, int], [{"a": 1}], [{"a": "x"}, {1: 1}]),
    (dict[Any, int], [{1: 1, "a": 2}], [{1: "x"}]),
    (list[float] | None, [None, [1.0, 2]], [[1.0, None], (1.0,)]),
    (str | list[dict[str, Any]], ["x", [{"role": "user"}]], [[1], None, 3]),
    (float | dict[str, Any] | None, [None, 1.0, {"a": 1}], [{1: 1}, "x", [1.0]]),
    (Sample.SpecInfo, [Sample.SpecInfo()],
     [Sample.SpecInfo(spec_verify_ct="1"), _SubInfo(), None]),  # type: ignore[arg-type]
    (Sample.Status, [Sample.Status.COMPLETED], ["completed", None]),
    (Any, [None, object(), "x"], []),
])
def test_fast_accept_proves_exactly_these_values(hint: Any, accepted: list[Any],
                                                 not_proven: list[Any]) -> None:
    pred = fast_accept(hint)
    assert [pred(v) for v in accepted] == [True] * len(accepted)
    assert [pred(v) for v in not_proven] == [False] * len(not_proven)


def test_type_problem_messages() -> None:
    assert type_problem(1, int) is None
    assert type_problem("x", int) == "str is not an instance of int"
    assert type_problem({"a": "x"}, dict[str, int]) == \
        "value of key 'a' of dict is not an instance of int"
    # the dataclass extension: its own not-an-instance text and the path of the bad field
    assert type_problem(5, Sample.SpecInfo) == "int is not an instance of Sample.SpecInfo"
    assert type_problem(_Inner("x"), _Inner) == (  # type: ignore[arg-type]
        f"field 'n' of {__name__}._Inner is not an instance of int")
    assert type_problem(_Outer([_Inner(1), _Inner("2")]), _Outer) == (  # type: ignore[arg-type]
        f"field 'n' of item 1 of field 'items' of {__name__}._Outer is not an instance of int")
    assert type_problem(_SubInfo(), Sample.SpecInfo) is None     # a subclass is an instance
    assert type_problem(_SubInfo(spec_verify_ct="x"), Sample.SpecInfo) == (  # type: ignore[arg-type]
        f"field 'spec_verify_ct' of {__name__}._SubInfo is not an instance of int")


def test_field_type_problem_messages() -> None:
    assert field_type_problem("weight_versions", ["a"]) is None
    assert field_type_problem("weight_versions", [1]) == \
        "a list of 1 item(s) (item 0 of list is not an instance of str)"
    assert field_type_problem("metadata", {1: 2}) == \
        "a dict of 1 item(s) (key 1 of dict is not an instance of str)"
    assert field_type_problem("status", "completed") == \
        "'completed' (str) (str is not an instance of vime.utils.types.Sample.Status)"
    assert field_type_problem("prefix_cache_info", Sample.PrefixCacheInfo(
        cached_tokens="1")) == (  # type: ignore[arg-type]
        "a PrefixCacheInfo (field 'cached_tokens' of vime.utils.types.Sample.PrefixCacheInfo is "
        "not an instance of int)")
    assert field_type_problem("spec_info", _SubInfo()) is None   # typeguard decides: an instance


def test_field_hint_resolves_the_contract_text() -> None:
    assert field_hint("tokens") == list[int]
    assert field_hint("status") is Sample.Status
    assert field_hint("reward") == float | dict[str, Any] | None
    with pytest.raises(KeyError):
        field_hint("no_such_field")


def test_describe_value() -> None:
    from vime.contract.checks.typecheck import describe_value

    assert describe_value([1, 2]) == "a list of 2 item(s)"
    assert describe_value((1,)) == "a tuple of 1 item(s)"
    assert describe_value({"a": 1}) == "a dict of 1 item(s)"
    assert describe_value({1, 2, 3}) == "a set of 3 item(s)"
    assert describe_value("x" * 38) == f"'{'x' * 38}' (str)"        # a repr of 40 characters
    assert describe_value("x" * 39) == "a str"                      # 41
    assert describe_value(1.5) == "1.5 (float)"
    assert describe_value("abcd", limit=6) == "'abcd' (str)"
    assert describe_value("abcde", limit=6) == "a str"
    assert describe_value(None) == "None (NoneType)"
