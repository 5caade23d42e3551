"""Groups of samples for the rules (VIM013, VIM028): the semantic model's group value flow
(:mod:`vime_lint.static.analysis._groups`) with the hook parameters of this launch.

Usage::

    flow = group_flow(fn, context)
    flow.group_source(expr)      # "`data_source.get_samples(...)`" when expr holds a group
"""

from __future__ import annotations

import libcst as cst

from vime_lint.static._rule import FileContext
from vime_lint.static.analysis import GROUPS_TYPE, SAMPLE_ATTRIBUTES, GroupFlow, group_params

__all__ = ["GROUPS_TYPE", "GroupFlow", "SAMPLE_ATTRIBUTES", "group_flow", "group_params"]


def group_flow(fn: cst.FunctionDef, context: FileContext) -> GroupFlow:
    """The :class:`GroupFlow` of ``fn``; the parameters of every hook of the module that its
    contract types ``list[list[Sample]]`` count (by position)."""
    semantic = context.semantic

    def positions(node: cst.FunctionDef) -> frozenset[int]:
        hit = context.hook_target(node)
        if hit is None:
            return frozenset()
        # The contract's positions are those of vime's call: after `self` and a partial's
        # own arguments (the target's params), mapped to the `def`'s own parameters by name.
        called = [p.name for p in hit[1].params
                  if p.kind in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
        own = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        return frozenset(own.index(called[i]) for i in group_params(hit[0].spec.dest)
                         if i < len(called) and called[i] in own)

    semantic.group_positions = positions
    return semantic.group_flow(fn)
