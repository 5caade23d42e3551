"""vime.contract.checks.shape on exact values: VIM102's findings (where, text, fix) for each
malformed part of ``samples``, what is still read after one, and the Shape read: depth, groups
and their locations, rollouts and leaves, the flat legacy list regrouped."""

from __future__ import annotations

import pytest
from runtime_helpers import make_args, make_groups, make_sample

from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.shape import read_shape
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

_UNIFORM = ("the depth must be uniform over the batch (the manager flattens by looking at the "
            "first element)")
_ELEMENT = "expected a Sample (or a non-empty list of Samples for a fan-out rollout)"


def _s(n: int = 4) -> CheckSettings:
    return CheckSettings.from_args(make_args(n_samples_per_prompt=n))


def _found(found):
    return [(v.id, v.severity, v.where, v.message) for v in found]


def _layout(shape):
    """depth, group locations, each group's rollout locations, every leaf's location."""
    return (shape.depth, shape.group_prefixes,
            [[r.prefix for r in group] for group in shape.groups],
            [leaf.loc.at() for leaf in shape.leaves])


def test_not_a_list_and_empty():
    shape, found = read_shape(5, _s())
    assert shape is None
    assert _found(found) == [("VIM102", "error", "samples",
                              "is 5 (int), expected list[list[Sample]]")]
    shape, found = read_shape([], _s(), root="buf")
    assert shape is None
    assert _found(found) == [("VIM102", "error", "buf",
                              "is empty; a train step needs rollout_batch_size groups")]


def test_valid_groups_layout():
    shape, found = read_shape(make_groups(n=2), _s(2), root="buf")
    assert found == []
    assert _layout(shape) == (2, ["buf[0]", "buf[1]"],
                              [["buf[0][0]", "buf[0][1]"], ["buf[1][0]", "buf[1][1]"]],
                              ["buf[0][0] (index=0)", "buf[0][1] (index=1)",
                               "buf[1][0] (index=2)", "buf[1][1] (index=3)"])


def test_fan_out_layout():
    a, b, c = make_sample(0, 0), make_sample(0, 1), make_sample(0, 2)
    shape, found = read_shape([[[a, b], [c]]], _s(), root="buf")
    assert found == []
    assert _layout(shape) == (3, ["buf[0]"], [["buf[0][0]", "buf[0][1]"]],
                              ["buf[0][0][0] (index=0)", "buf[0][0][1] (index=1)",
                               "buf[0][1][0] (index=2)"])


def test_flat_list_by_group_index():
    flat = [s for group in make_groups(n=2) for s in group]
    shape, found = read_shape(flat, _s(2), root="buf")
    assert [(v.id, v.severity, v.where, v.message, v.fix) for v in found] == [
        ("VIM102", "warning", "buf", "is a flat list of 4 Samples (legacy); it is regrouped "
         "by group_index", "return list[list[Sample]]: one list per prompt group")]
    assert _layout(shape) == (1, ["buf (group_index=0)", "buf (group_index=1)"],
                              [["buf[0]", "buf[1]"], ["buf[2]", "buf[3]"]],
                              ["buf[0] (index=0)", "buf[1] (index=1)", "buf[2] (index=2)",
                               "buf[3] (index=3)"])


def test_flat_list_in_positional_chunks():
    flat = [s for group in make_groups(n=2) for s in group]
    flat[1].group_index = None
    shape, found = read_shape(flat, _s(3))
    assert _found(found) == [("VIM102", "warning", "samples", "is a flat list of 4 Samples "
                              "(legacy); it is regrouped in positional chunks of "
                              "n_samples_per_prompt=3")]
    assert _layout(shape)[:3] == (1, ["samples[0:3]", "samples[3:4]"],
                                  [["samples[0]", "samples[1]", "samples[2]"], ["samples[3]"]])


def test_flat_list_of_a_sample_subclass():
    class MySample(Sample):
        pass

    flat = [MySample(group_index=0, index=i, prompt="p", tokens=[1, 2], response_length=1)
            for i in range(2)]
    shape, found = read_shape(flat, _s(2))
    assert [v.severity for v in found] == ["warning"] and shape.depth == 1


def test_a_group_that_is_no_list_and_the_groups_after_it():
    groups = make_groups(n=1, groups=3)
    groups[1] = 5
    shape, found = read_shape(groups, _s(1))
    assert _found(found) == [("VIM102", "error", "samples[1]",
                              "is 5 (int), expected a list of samples (one group)")]
    assert _layout(shape)[:3] == (2, ["samples[0]", "samples[2]"],
                                  [["samples[0][0]"], ["samples[2][0]"]])


def test_bad_elements_and_the_elements_after_them():
    a, b = make_sample(0, 0), make_sample(0, 1)
    shape, found = read_shape([[a, 1, [], b]], _s())
    assert _found(found) == [
        ("VIM102", "error", "samples[0][1]", f"is 1 (int), {_ELEMENT}"),
        ("VIM102", "error", "samples[0][2]", f"is an empty list, {_ELEMENT}")]
    assert _layout(shape)[2] == [["samples[0][0]", "samples[0][3]"]]


def test_bad_fan_out_leaf_and_the_elements_after_it():
    a, b, c = make_sample(0, 0), make_sample(0, 1), make_sample(0, 2)
    shape, found = read_shape([[[a], [b, "x", 2], [c]]], _s(), root="buf")
    assert _found(found) == [("VIM102", "error", "buf[0][1][1]",
                              "is 'x' (str), expected a Sample")]
    assert _layout(shape)[2:] == ([["buf[0][0]", "buf[0][2]"]],
                                  ["buf[0][0][0] (index=0)", "buf[0][2][0] (index=2)"])


def test_mixed_depth_both_ways():
    a, b, c = make_sample(0, 0), make_sample(0, 1), make_sample(0, 2)
    shape, found = read_shape([[a, [b], c]], _s())
    assert _found(found) == [("VIM102", "error", "samples[0][1]", "is a list (depth 3) but "
                              f"earlier elements are Samples (depth 2): {_UNIFORM}")]
    assert _layout(shape)[2] == [["samples[0][0]", "samples[0][2]"]]
    shape, found = read_shape([[[a], b, [c]]], _s())
    assert _found(found) == [("VIM102", "error", "samples[0][1]", "is a Sample (depth 2) but "
                              f"earlier elements are lists (depth 3): {_UNIFORM}")]
    assert _layout(shape)[0] == 3 and _layout(shape)[2] == [["samples[0][0]", "samples[0][2]"]]


def test_groups_only_keeps_the_errors_of_a_malformed_batch():
    a, b = make_sample(0, 0), make_sample(0, 1)
    why = "the buffer takes list[list[Sample]]"
    _, found = read_shape([[[a, 1], [b]]], _s(), root="buf", groups_only=why)
    assert _found(found) == [("VIM102", "error", "buf[0][0][1]",
                              "is 1 (int), expected a Sample")]
    _, found = read_shape([[[a], [b]]], _s(), root="buf", groups_only=why)
    assert _found(found) == [("VIM102", "error", "buf", f"holds fan-out lists (depth 3); {why}")]
