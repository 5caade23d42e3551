"""VIM102: the shape of ``RolloutFnTrainOutput.samples``, and its leaves for the other checks.

Canonical depth 2 is ``list[list[Sample]]`` (groups of samples); depth 3 lets a group element
be a non-empty ``list[Sample]`` (one rollout fanned out into several training samples). The
depth is uniform over the batch. A flat ``list[Sample]`` (legacy) warns and is regrouped as the
manager does: by ``group_index`` when every sample has one, else in positional chunks of
``n_samples_per_prompt``.

Usage::

    shape, findings = read_shape(output.samples, settings)
    shape.depth            # 2 or 3
    shape.groups           # list of groups, each a list of rollouts (a rollout = its leaves)
    shape.leaves           # every Leaf (sample, location) in order

See ``docs/contract.md`` §3 (samples, fan-out, flat legacy) and §6b.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vime.contract.checks.locations import Loc, leaf_prefix
from vime.contract.checks.settings import CheckSettings
from vime.contract.checks.typecheck import describe_value
from vime.contract.errors import Violation
from vime.contract.invariants import INVARIANTS
from vime.utils.types import Sample

__all__ = ["Leaf", "Rollout", "Shape", "group_rollouts", "read_shape"]


@dataclass(frozen=True, slots=True)
class Leaf:
    """One ``Sample`` of the batch and where it is."""

    sample: Sample
    loc: Loc


@dataclass(slots=True)
class Rollout:
    """One group element: a sample (depth 2) or a fan-out list of samples (depth 3)."""

    #: Location of the element, ``samples[g][e]``.
    prefix: str
    #: Its leaves (one at depth 2, one or more at depth 3).
    leaves: list[Leaf]


@dataclass(slots=True)
class Shape:
    """The readable part of a batch: groups of rollouts, and every leaf in order."""

    #: 2 (``list[list[Sample]]``) or 3 (fan-out), or 1 for a flat legacy list (regrouped).
    depth: int = 2
    #: Groups, each a list of rollouts; a group's location is ``group_prefixes[g]``.
    groups: list[list[Rollout]] = field(default_factory=list)
    group_prefixes: list[str] = field(default_factory=list)
    leaves: list[Leaf] = field(default_factory=list)


def _leaf(sample: Sample, prefix: str) -> Leaf:
    return Leaf(sample, Loc(prefix, sample.index))


def read_shape(samples: Any, s: CheckSettings, root: str = "samples", *,
               groups_only: str | None = None) -> tuple[Shape | None, list[Violation]]:
    """Check VIM102 and return the batch's readable groups (None if nothing is readable).

    ``groups_only``: where only ``list[list[Sample]]`` is taken (depth 2: no flat list, no
    fan-out lists), the clause saying why (e.g. the buffer, whose groups are generated again);
    another depth is then an error.

    Returns ``(shape, findings)``: ``shape`` holds every group and element that has a valid
    form, so the other checks still run on them; each malformed part is one finding.
    """
    shape, found = _read_shape(samples, s, root)
    if groups_only is not None and shape is not None and shape.depth != 2 and not any(
            v.severity == "error" for v in found):
        form = "a flat list of Samples" if shape.depth == 1 else "fan-out lists (depth 3)"
        return shape, [INVARIANTS["VIM102"].violation(root, problem=f"holds {form}; "
                                                      f"{groups_only}")]
    return shape, found


def _read_shape(samples: Any, s: CheckSettings,
                root: str) -> tuple[Shape | None, list[Violation]]:
    inv = INVARIANTS["VIM102"]
    if not isinstance(samples, list):
        return None, [inv.violation(root, problem=f"is {describe_value(samples)}, "
                                    "expected list[list[Sample]]")]
    if not samples:
        return None, [inv.violation(root, problem="is empty; a train step needs "
                                    "rollout_batch_size groups")]
    if all(type(x) is Sample or isinstance(x, Sample) for x in samples):
        return _flat(samples, s, root)
    shape = Shape()
    out: list[Violation] = []
    for g, group in enumerate(samples):
        if not isinstance(group, list):
            out.append(inv.violation(f"{root}[{g}]", problem=f"is {describe_value(group)}, "
                                     "expected a list of samples (one group)"))
            continue
        rollouts: list[Rollout] = []
        for e, element in enumerate(group):
            prefix = leaf_prefix(g, e, root=root)
            if isinstance(element, Sample):
                depth = 2
                leaves = [_leaf(element, prefix)]
            elif isinstance(element, list) and element:
                depth = 3
                bad = next((k for k, x in enumerate(element) if not isinstance(x, Sample)), None)
                if bad is not None:
                    out.append(inv.violation(leaf_prefix(g, e, bad, root), problem=f"is "
                                             f"{describe_value(element[bad])}, expected a Sample"))
                    continue
                leaves = [_leaf(x, leaf_prefix(g, e, k, root)) for k, x in enumerate(element)]
            else:
                what = "an empty list" if isinstance(element, list) else describe_value(element)
                out.append(inv.violation(prefix, problem=f"is {what}, expected a Sample (or a "
                                         "non-empty list of Samples for a fan-out rollout)"))
                continue
            if not shape.leaves and not rollouts:
                shape.depth = depth
            if depth != shape.depth:
                out.append(inv.violation(prefix, problem=(
                    f"is {'a list (depth 3)' if depth == 3 else 'a Sample (depth 2)'} but earlier "
                    f"elements are {'lists (depth 3)' if shape.depth == 3 else 'Samples (depth 2)'}: "
                    "the depth must be uniform over the batch (the manager flattens by looking at "
                    "the first element)")))
                continue
            rollouts.append(Rollout(prefix, leaves))
            shape.leaves.extend(leaves)
        shape.groups.append(rollouts)
        shape.group_prefixes.append(f"{root}[{g}]")
    return shape, out


def group_rollouts(shape: Shape, rollouts: list[Rollout], n: int, *,
                   by_group: Callable[[Any], str], chunk: Callable[[int, int], str]) -> None:
    """Append ``rollouts`` (a flat list) to ``shape`` as groups: by the ``group_index`` of each
    rollout's first leaf when every one has one, else in positional chunks of ``n``.
    ``by_group(g)`` and ``chunk(start, end)`` name each group."""
    if all(r.leaves[0].sample.group_index is not None for r in rollouts):
        by_key: dict[Any, list[Rollout]] = {}
        for r in rollouts:
            by_key.setdefault(r.leaves[0].sample.group_index, []).append(r)
        for key, members in by_key.items():
            shape.groups.append(members)
            shape.group_prefixes.append(by_group(key))
        return
    for start in range(0, len(rollouts), n):
        members = rollouts[start:start + n]
        shape.groups.append(members)
        shape.group_prefixes.append(chunk(start, start + len(members)))


def _flat(samples: list[Sample], s: CheckSettings,
          root: str = "samples") -> tuple[Shape, list[Violation]]:
    n = s.n_samples_per_prompt
    finding = INVARIANTS["VIM102"].violation(
        root, severity="warning",
        problem=f"is a flat list of {len(samples)} Samples (legacy); it is regrouped "
        + ("by group_index" if all(x.group_index is not None for x in samples)
           else f"in positional chunks of n_samples_per_prompt={n}"),
        fix="return list[list[Sample]]: one list per prompt group")
    shape = Shape(depth=1)
    leaves = [_leaf(x, f"{root}[{i}]") for i, x in enumerate(samples)]
    shape.leaves = leaves
    group_rollouts(shape, [Rollout(leaf.loc.prefix, [leaf]) for leaf in leaves], n,
                   by_group=lambda g: f"{root} (group_index={g})",
                   chunk=lambda a, b: f"{root}[{a}:{b}]")
    return shape, [finding]
